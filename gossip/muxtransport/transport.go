// Package muxtransport carries gossip membership over mux: a Transport for
// gossip.Start whose frames travel as one-way messages on mux.LaneControl,
// one session per node pair shared with the data path.
package muxtransport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/casty-go/casty/gossip"
	"github.com/casty-go/casty/gossip/internal/queue"
	"github.com/casty-go/casty/mux"
)

// Transport runs membership over a mux.Node: frames travel as one-way
// messages on mux.LaneControl, a link is the mux session to the peer (one
// per node pair, shared with the data path), and the close of a monitored
// peer's session is reported as that link's failure: gossip.KeepaliveFailed
// when the session died of a keepalive failure (its Err wraps
// mux.ErrKeepalive), gossip.LinkLost otherwise. The report waits 100 ms
// after the close, so that frames the peer sent just before closing (a
// LEFT, a DISCONNECT) are handled first. A frame from a peer whose session
// did not prove the member credential (mux.Session.Member false: a lite
// client's secret) is marked gossip.TransportEvent.ClientOnly, so that
// membership refuses the member-role records that peer vouches for.
// Unmonitor never closes a session (the data path may use it). Each peer has its own send queue and
// goroutine, so a dial to a dead address never delays frames to others.
type Transport struct {
	node  *mux.Node
	addr  string
	grace time.Duration
	log   *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	peers     map[string]*muxPeer
	monitored map[string]bool
	closing   bool
	events    *queue.Pump[gossip.TransportEvent]
	stopped   chan struct{}
}

type muxPeer struct {
	addr    string
	queue   [][]byte
	running bool
	sess    *mux.Session
	watched *mux.Session
}

// linkGrace is how long a Transport waits after a session closes before it
// reports the link failure (the 100 ms of the Transport doc).
const linkGrace = 100 * time.Millisecond

// New runs membership over node, which others reach at addr. The caller
// keeps ownership of the node: it serves it, and closes it after the
// Transport.
func New(node *mux.Node, addr string) *Transport {
	ctx, cancel := context.WithCancel(context.Background())
	t := &Transport{node: node, addr: addr, grace: linkGrace, ctx: ctx, cancel: cancel, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		peers: map[string]*muxPeer{}, monitored: map[string]bool{},
		events: queue.New[gossip.TransportEvent](), stopped: make(chan struct{})}
	node.HandleMessages(mux.LaneControl, func(from *mux.Session, payload []byte) {
		t.push(gossip.TransportEvent{From: from.PeerAddr(), Frame: append([]byte(nil), payload...), ClientOnly: !from.Member()})
	})
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		t.events.Run(t.ctx.Done())
	}()
	return t
}

// Addr returns the advertised address.
func (t *Transport) Addr() string { return t.addr }

// Send queues frame for addr; the peer's goroutine dials if needed.
func (t *Transport) Send(addr string, frame []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closing {
		return gossip.ErrClosed
	}
	p := t.peer(addr)
	p.queue = append(p.queue, frame)
	t.kick(p)
	return nil
}

// Monitor keeps a session to addr and watches it.
func (t *Transport) Monitor(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closing {
		return
	}
	t.monitored[addr] = true
	t.kick(t.peer(addr))
}

// Unmonitor stops watching addr (the session stays open).
func (t *Transport) Unmonitor(addr string) {
	t.mu.Lock()
	delete(t.monitored, addr)
	t.mu.Unlock()
}

// Events returns the inbound channel.
func (t *Transport) Events() <-chan gossip.TransportEvent { return t.events.Out() }

// Close waits (at most 2 s) for queued frames to be handed to mux, stops
// every goroutine, removes its LaneControl handler from the node (which it
// leaves open) and closes Events.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closing {
		t.mu.Unlock()
		<-t.stopped
		return nil
	}
	t.closing = true
	t.mu.Unlock()
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		t.mu.Lock()
		busy := false
		for _, p := range t.peers {
			busy = busy || (p.running && len(p.queue) > 0)
		}
		t.mu.Unlock()
		if !busy {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.cancel()
	t.node.HandleMessages(mux.LaneControl, nil)
	t.wg.Wait()
	close(t.stopped)
	return nil
}

func (t *Transport) peer(addr string) *muxPeer {
	p := t.peers[addr]
	if p == nil {
		p = &muxPeer{addr: addr}
		t.peers[addr] = p
	}
	return p
}

// forget drops p's entry after a failed dial when nothing keeps it: no
// session, no queued frame, no monitor (t.mu held). Membership dials the
// addresses that records name (admission probes, gossip/SPEC.md), and a
// forger can name any number of them: an address that never answered must
// not cost an entry for the transport's life.
func (t *Transport) forget(p *muxPeer) {
	if p.sess == nil && p.watched == nil && len(p.queue) == 0 && !t.monitored[p.addr] && t.peers[p.addr] == p {
		delete(t.peers, p.addr)
	}
}

// kick starts p's goroutine if it is not running (t.mu held).
func (t *Transport) kick(p *muxPeer) {
	if p.running {
		return
	}
	p.running = true
	t.wg.Add(1)
	go t.serve(p)
}

// serve dials p when needed, watches the session of a monitored peer and
// sends p's queue; it exits when there is nothing left to do or a dial
// failed (the failure is reported; the next Send or Monitor retries).
func (t *Transport) serve(p *muxPeer) {
	defer t.wg.Done()
	for {
		t.mu.Lock()
		sess := p.sess
		if sess != nil {
			select {
			case <-sess.Done():
				sess, p.sess = nil, nil
			default:
			}
		}
		if sess != nil && t.monitored[p.addr] && p.watched != sess {
			p.watched = sess
			t.wg.Add(1)
			go t.watch(p, sess)
		}
		needDial := sess == nil && (len(p.queue) > 0 || t.monitored[p.addr])
		if (!needDial && len(p.queue) == 0) || t.ctx.Err() != nil {
			p.running = false
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
		if needDial {
			s, err := t.dial(p.addr)
			if err != nil {
				t.log.Debug("gossip: dial failed", "addr", p.addr, "err", err)
				t.linkFailed(p, nil, gossip.LinkLost)
				t.mu.Lock()
				p.running = false
				t.forget(p)
				t.mu.Unlock()
				return
			}
			t.mu.Lock()
			p.sess = s
			t.mu.Unlock()
			continue // start the watch, then send
		}
		t.mu.Lock()
		q := p.queue
		p.queue = nil
		t.mu.Unlock()
		for _, f := range q {
			if err := sess.Send(t.ctx, mux.LaneControl, f); err != nil {
				t.log.Debug("gossip: send failed", "addr", p.addr, "err", err)
				t.linkFailed(p, sess, gossip.LinkLost)
				break
			}
		}
	}
}

// dial returns a live session to addr: an existing one (inbound sessions
// count), else a new dial. A dial that loses a simultaneous-dial tie-break
// can fail while the winning session is live, and a transient failure can
// hit a healthy peer, so a failed dial looks for a live session again and
// is retried once before it counts as a link failure.
func (t *Transport) dial(addr string) (*mux.Session, error) {
	if s := t.liveSession(addr); s != nil {
		return s, nil
	}
	var err error
	for attempt := range 2 {
		var s *mux.Session
		if s, err = t.node.Dial(t.ctx, addr); err == nil {
			return s, nil
		}
		if s := t.liveSession(addr); s != nil {
			return s, nil
		}
		if errors.Is(err, mux.ErrClosed) {
			return nil, err // no retry on a closed node
		}
		if attempt == 0 {
			select {
			case <-time.After(t.grace):
			case <-t.ctx.Done():
				return nil, err
			}
		}
	}
	return nil, err
}

// liveSession returns an open session to the node advertising addr.
func (t *Transport) liveSession(addr string) *mux.Session {
	for _, s := range t.node.Sessions() {
		if s.PeerAddr() != addr {
			continue
		}
		select {
		case <-s.Done():
		default:
			return s
		}
	}
	return nil
}

// watch reports the close of a monitored peer's session.
func (t *Transport) watch(p *muxPeer, s *mux.Session) {
	defer t.wg.Done()
	select {
	case <-s.Done():
	case <-t.ctx.Done():
		return
	}
	select {
	case <-time.After(t.grace):
	case <-t.ctx.Done():
		return
	}
	live, ok := t.node.Session(s.Peer())
	if !ok || live == s {
		live = t.liveSession(p.addr)
		ok = live != nil && live != s
	}
	if ok && live != s {
		// a simultaneous dial was resolved in favour of another session
		// (or the peer reconnected): the link lives on, watch the new one
		t.mu.Lock()
		if p.sess == s || p.sess == nil {
			p.sess = live
		}
		if t.monitored[p.addr] && p.watched == s && t.ctx.Err() == nil {
			p.watched = live
			t.wg.Add(1)
			go t.watch(p, live)
		}
		t.mu.Unlock()
		return
	}
	t.log.Debug("gossip: session closed", "addr", p.addr, "err", s.Err())
	why := gossip.LinkLost
	if errors.Is(s.Err(), mux.ErrKeepalive) {
		why = gossip.KeepaliveFailed
	}
	t.linkFailed(p, s, why)
}

// linkFailed drops p's session and queue and reports the failure.
func (t *Transport) linkFailed(p *muxPeer, s *mux.Session, why gossip.LinkFailure) {
	t.mu.Lock()
	if s != nil && p.sess != s && p.sess != nil {
		t.mu.Unlock()
		return // a newer session replaced it
	}
	p.sess = nil
	p.queue = nil
	if p.watched == s {
		p.watched = nil
	}
	t.mu.Unlock()
	t.log.Debug("gossip: link failed", "addr", p.addr, "why", why.String())
	t.push(gossip.TransportEvent{From: p.addr, Failure: why})
}

func (t *Transport) push(ev gossip.TransportEvent) {
	t.mu.Lock()
	if t.ctx.Err() != nil {
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	t.events.Push(ev)
}

// String names the transport for logs.
func (t *Transport) String() string { return fmt.Sprintf("mux(%s)", t.addr) }

var _ gossip.Transport = (*Transport)(nil)
