package gossip

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/casty-go/casty/gossip/internal/core"
	"github.com/casty-go/casty/gossip/internal/queue"
)

// Agent runs one membership node (the pure state machine of
// gossip/internal/core): a single goroutine feeds it transport events and
// timer ticks and carries out its outputs (sends, link monitoring, member
// events). Subscribers get member events in order; Members returns a
// consistent snapshot of the table.
type Agent struct {
	node   *core.Node
	t      Transport
	clock  func() time.Time
	log    *slog.Logger
	linger time.Duration

	reqs chan func()
	done chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex // guards the fields below (leaf lock)
	members []Member
	since   map[NodeID]time.Time // when each record of members took its status
	self    Member
	active  []Peer
	subs    map[*subscriber]struct{}
	closed  bool
	digest  uint64
	stats   Stats
}

// Stats are an Agent's counters, as of the node's last step.
type Stats struct {
	// Refused counts records about members the table did not hold that
	// were dropped because the table was full (Config.MaxTableSize): a
	// flood of forged claims, or a cluster larger than the bound; it also
	// counts the unverified records of the connection holding the most
	// that gave way to another connection's, and lite clients' records
	// refused because lite-client records were at Config.MaxClientRecords.
	// No table record is evicted for them (SPEC.md, Admission: Bound);
	// refusals are also logged, at most one WARN line per 10 s.
	Refused uint64
	// Unverified is how many second-hand records wait for a probe
	// (SPEC.md, Admission).
	Unverified int
}

// Start creates the membership node for self with cfg (nil means DefaultConfig) and
// runs it over t until Close. The node joins through cfg.Seeds.
func Start(self Peer, cfg *Config, t Transport) (*Agent, error) {
	if cfg == nil {
		cfg = DefaultConfig()
	}
	n, err := core.NewNode(self, (*core.Config)(cfg))
	if err != nil {
		return nil, err
	}
	a := &Agent{node: n, t: t, clock: cfg.Clock, log: cfg.Logger,
		reqs: make(chan func()), done: make(chan struct{}), subs: map[*subscriber]struct{}{}}
	if a.clock == nil {
		a.clock = time.Now
	}
	a.linger = cfg.LeaveLinger
	if a.linger == 0 {
		a.linger = 2 * cfg.GraftTimeout
	}
	if a.log == nil {
		a.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	a.snapshot(true)
	a.wg.Add(1)
	go a.run()
	return a, nil
}

func (a *Agent) run() {
	defer a.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	arm := func(next time.Time) {
		if next.IsZero() {
			return
		}
		d := next.Sub(a.clock())
		if d < time.Millisecond {
			d = time.Millisecond
		}
		timer.Reset(d)
	}
	arm(a.carry(a.node.Start(a.clock())))
	events := a.t.Events()
	for {
		var out core.Output
		select {
		case <-a.done:
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			now := a.clock()
			if ev.Failure != 0 {
				out = a.node.LinkDown(now, ev.From, ev.Failure)
				break
			}
			m, err := core.DecodeMessage(ev.Frame)
			if err != nil {
				a.log.Info("gossip: dropped frame", "from", ev.From, "err", err)
				continue
			}
			m.ClientOnly = ev.ClientOnly
			m.Via = ev.From
			out = a.node.Step(now, m)
		case <-timer.C:
			out = a.node.Tick(a.clock())
		case f := <-a.reqs:
			f()
			continue
		}
		arm(a.carry(out))
	}
}

// carry executes an output and returns when to tick next.
func (a *Agent) carry(out core.Output) time.Time {
	for _, op := range out.Links {
		if op.Open {
			a.t.Monitor(op.Peer.Addr)
		} else {
			a.t.Unmonitor(op.Peer.Addr)
		}
	}
	for _, s := range out.Sends {
		if err := a.t.Send(s.To.Addr, core.EncodeMessage(s.Msg)); err != nil {
			a.log.Debug("gossip: send failed", "to", s.To.Addr, "err", err)
		}
	}
	a.snapshot(len(out.Events) > 0 || len(out.Links) > 0)
	if len(out.Events) > 0 {
		a.mu.Lock()
		for s := range a.subs {
			s.push(out.Events)
		}
		a.mu.Unlock()
	}
	return out.Next
}

// snapshot refreshes the copies readers see when the table changed.
func (a *Agent) snapshot(force bool) {
	d := a.node.Digest()
	st := Stats{Refused: a.node.Refused(), Unverified: a.node.Unverified()}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stats = st
	if force || d != a.digest || a.self != a.node.Self() {
		a.members = a.node.Members()
		a.since = make(map[NodeID]time.Time, len(a.members))
		for _, m := range a.members {
			a.since[m.ID] = a.node.Since(m.ID)
		}
		a.self = a.node.Self()
		a.active = a.node.Active()
		a.digest = d
	}
}

// do runs f on the agent goroutine (nil error) or returns ErrClosed.
func (a *Agent) do(ctx context.Context, f func()) error {
	done := make(chan struct{})
	select {
	case a.reqs <- func() { f(); close(done) }:
	case <-a.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-a.done:
		return ErrClosed
	}
}

// Members returns a snapshot of the member table (tombstones included),
// sorted by id. The snapshot is consistent: it is the table after some
// step of the node, never a mix of two.
func (a *Agent) Members() []Member {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Member(nil), a.members...)
}

// Since returns when the record of id that Members returns took its
// status, on the agent's clock (Config.Clock): when this node adopted
// that status, or, for a tombstone it learned from another member, when
// that member did (the age the record carried is subtracted). Zero when
// the snapshot holds no record of id.
func (a *Agent) Since(id NodeID) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.since[id]
}

// Alive returns the ALIVE members of the snapshot (self included).
func (a *Agent) Alive() []Member {
	var out []Member
	for _, m := range a.Members() {
		if m.Status == Alive {
			out = append(out, m)
		}
	}
	return out
}

// Stats returns the agent's counters.
func (a *Agent) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}

// Self returns this node's current record.
func (a *Agent) Self() Member {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.self
}

// Neighbors returns the node's active view (its overlay neighbours).
func (a *Agent) Neighbors() []Peer {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Peer(nil), a.active...)
}

// Subscribe returns a channel of every member event from now on, in order,
// never dropped (a slow reader queues in memory), and a cancel function.
// The channel is closed by cancel or Close.
func (a *Agent) Subscribe() (<-chan Event, func()) {
	s := &subscriber{events: queue.New[Event](), stop: make(chan struct{})}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		s.close()
		s.events.Run(s.stop) // returns at once, closing the channel
		return s.events.Out(), func() {}
	}
	a.subs[s] = struct{}{}
	a.mu.Unlock()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		s.events.Run(s.stop)
	}()
	return s.events.Out(), func() {
		a.mu.Lock()
		delete(a.subs, s)
		a.mu.Unlock()
		s.close()
	}
}

// Leave departs gracefully: the LEFT record goes to the neighbours (who
// spread it without any suspicion), the node lingers Config.LeaveLinger
// answering grafts for it, then the agent closes. A node whose table
// holds no other live or suspected member closes at once.
//
// Cancelling ctx cuts the linger short, not the announcement: the LEFT
// record goes out first however early ctx is cancelled, unless ctx's
// deadline passes before the agent takes it (then ctx's error).
func (a *Agent) Leave(ctx context.Context) error {
	actx := context.WithoutCancel(ctx)
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		actx, cancel = context.WithDeadline(actx, d)
		defer cancel()
	}
	if err := a.do(actx, func() { a.carry(a.node.Leave(a.clock())) }); err != nil {
		return err
	}
	if a.alone() {
		return a.Close() // nobody to answer grafts for
	}
	linger := time.NewTimer(a.linger)
	defer linger.Stop()
	select {
	case <-linger.C:
	case <-ctx.Done():
	}
	return a.Close()
}

// alone reports whether the member table holds no other member that is
// alive or suspected: nobody who could still ask for a record.
func (a *Agent) alone() bool {
	self := a.Self().ID
	for _, m := range a.Members() {
		if m.ID != self && (m.Status == Alive || m.Status == Suspect) {
			return false
		}
	}
	return true
}

// Close stops the agent without a goodbye (the others will suspect it and
// declare it dead), closes the transport and every subscription, and waits
// for the agent's goroutines. It is idempotent.
func (a *Agent) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	subs := a.subs
	a.subs = map[*subscriber]struct{}{}
	a.mu.Unlock()
	close(a.done)
	for s := range subs {
		s.close()
	}
	err := a.t.Close()
	a.wg.Wait()
	return err
}

// subscriber is one Subscribe call's unbounded in-order event queue.
type subscriber struct {
	events *queue.Pump[Event]
	stop   chan struct{}
	once   sync.Once
}

func (s *subscriber) close() { s.once.Do(func() { close(s.stop) }) }

func (s *subscriber) push(evs []Event) { s.events.Push(evs...) }
