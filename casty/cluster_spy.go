package casty

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"sync"
	"time"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/mux"
	"github.com/casty-go/casty/wire"
)

// A cluster-scope spy opens one mux stream to every other member, whose
// header is a callReq (opSpy, envelope.go) carrying a spyReq as its
// argument; each member filters its own events with the spy's globs and
// sends only the matching ones, as frameElem frames of wireEvent (SPEC.md).
// When a member's stream breaks, the spy delivers a Gap naming it.

type spyReq struct {
	Kind     string `msgpack:"k,omitempty"`
	Key      string `msgpack:"y,omitempty"`
	Payloads bool   `msgpack:"p,omitempty"`
}

type wireEvent struct {
	T         uint8  `msgpack:"t"`
	Kind      string `msgpack:"k"`
	Key       string `msgpack:"y"`
	Node      string `msgpack:"n"`
	Seq       uint64 `msgpack:"s"`
	Time      int64  `msgpack:"w"`
	Method    string `msgpack:"m,omitempty"`
	Duration  int64  `msgpack:"d,omitempty"`
	Changed   bool   `msgpack:"c,omitempty"`
	Directive int    `msgpack:"v,omitempty"`
	Reason    uint8  `msgpack:"r,omitempty"`
	Dropped   int    `msgpack:"x,omitempty"`
	Err       string `msgpack:"e,omitempty"`
	Arg       []byte `msgpack:"a,omitempty"`
	Result    []byte `msgpack:"b,omitempty"`
}

const (
	evActivated uint8 = iota + 1
	evReceived
	evCompleted
	evFailed
	evDeactivated
	evLag
)

func encodeEvent(ev Event, node string) wireEvent {
	i := ev.Info()
	w := wireEvent{Kind: i.Kind, Key: i.Key, Node: node, Seq: i.Seq, Time: i.Time.UnixNano()}
	payload := func(v any) []byte {
		if v == nil {
			return nil
		}
		b, _ := wire.Marshal(v)
		return b
	}
	switch e := ev.(type) {
	case Activated:
		w.T = evActivated
	case Received:
		w.T, w.Method, w.Arg = evReceived, e.Method, payload(e.Arg)
	case Completed:
		w.T, w.Method, w.Duration, w.Changed, w.Result = evCompleted, e.Method, int64(e.Duration), e.Changed, payload(e.Result)
	case Failed:
		w.T, w.Method, w.Duration, w.Directive = evFailed, e.Method, int64(e.Duration), int(e.Directive)
		if e.Err != nil {
			w.Err = e.Err.Error()
		}
	case Deactivated:
		w.T, w.Reason = evDeactivated, uint8(e.Reason)
	case Lag:
		w.T, w.Dropped = evLag, e.Dropped
	}
	return w
}

func decodePayload(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	var v any
	if wire.Unmarshal(b, &v) != nil {
		return nil
	}
	return v
}

func (w wireEvent) decode() Event {
	info := actor.EventInfo{Kind: w.Kind, Key: w.Key, Node: w.Node, Seq: w.Seq, Time: time.Unix(0, w.Time)}
	switch w.T {
	case evActivated:
		return Activated{EventInfo: info}
	case evReceived:
		return Received{EventInfo: info, Method: w.Method, Arg: decodePayload(w.Arg)}
	case evCompleted:
		return Completed{EventInfo: info, Method: w.Method, Duration: time.Duration(w.Duration), Changed: w.Changed, Result: decodePayload(w.Result)}
	case evFailed:
		return Failed{EventInfo: info, Method: w.Method, Duration: time.Duration(w.Duration), Err: errors.New(w.Err), Directive: actor.Directive(w.Directive)}
	case evDeactivated:
		return Deactivated{EventInfo: info, Reason: actor.Reason(w.Reason)}
	case evLag:
		return Lag{EventInfo: info, Dropped: w.Dropped}
	}
	return nil
}

// spyCluster merges this node's events with every other member's.
func (cl *cluster) spyCluster(ctx context.Context, f actor.SpyFilter) (iter.Seq[Event], error) {
	q, err := actor.NewSpyQueue(f)
	if err != nil {
		return nil, err
	}
	arg, err := wire.Marshal(spyReq{Kind: f.Kind, Key: f.Key, Payloads: f.Payloads})
	if err != nil {
		return nil, err
	}
	release, err := cl.sys.acquireSpy()
	if err != nil {
		return nil, err
	}
	if err := cl.sys.host.Attach(q); err != nil {
		release()
		return nil, err
	}
	// Every member's subscription is in place before Spy returns, so no
	// event after it is missed for want of a stream.
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var opened sync.WaitGroup
	var refusedMu sync.Mutex
	var refused error // a member's refusal that fails the whole spy
	for _, m := range cl.view.Load().members {
		if m.Addr == cl.addr {
			continue
		}
		wg.Add(1)
		opened.Add(1)
		go func() {
			defer wg.Done()
			fc, err := cl.openSpy(rctx, m, arg)
			if errors.Is(err, ErrForbidden) || errors.Is(err, ErrTooManySpies) {
				refusedMu.Lock()
				refused = err
				refusedMu.Unlock()
			}
			opened.Done()
			if err != nil {
				if rctx.Err() == nil {
					q.Offer(gapOf(m))
				}
				return
			}
			cl.relaySpy(rctx, m, fc, q)
		}()
	}
	opened.Wait()
	done := func() {
		cl.sys.host.Detach(q)
		cancel()
		wg.Wait()
		release()
	}
	if refused != nil {
		done()
		return nil, refused
	}
	return q.Seq(ctx, done), nil
}

func gapOf(m Member) Gap {
	return Gap{EventInfo: actor.EventInfo{Node: m.Addr, Time: time.Now()}, Member: m.Addr}
}

// openSpy subscribes to one member's events.
func (cl *cluster) openSpy(ctx context.Context, m Member, arg []byte) (*frameConn, error) {
	id, err := parseID(m.ID)
	if err != nil {
		return nil, err
	}
	octx, cancel := context.WithTimeout(ctx, cl.sys.cfg.Transport.ConnectTimeout)
	defer cancel()
	sess, err := cl.node.Connect(octx, id, m.Addr)
	if err != nil {
		return nil, err
	}
	header := appendCallReq(nil, &callReq{Op: opSpy, Arg: arg})
	st, err := sess.OpenStream(octx, header)
	if err != nil {
		return nil, err
	}
	fc := newFrameConn(st, cl.sys.cfg.Transport.MaxMessage)
	st.SetReadDeadline(time.Now().Add(cl.sys.cfg.Transport.ConnectTimeout))
	kind, b, err := fc.read()
	st.SetReadDeadline(time.Time{})
	if err == nil && kind == frameStatus && len(b) != 0 {
		if we, derr := decodeWireError(b); derr == nil {
			err = we.decode()
		}
	}
	if err != nil || kind != frameStatus || len(b) != 0 {
		st.Close()
		return nil, fmt.Errorf("casty: spy on %s refused: %w", m.Addr, err)
	}
	return fc, nil
}

// relaySpy moves one member's events into q, and a Gap when it is lost.
func (cl *cluster) relaySpy(ctx context.Context, m Member, fc *frameConn, q *actor.SpyQueue) {
	defer fc.st.Close()
	stop := context.AfterFunc(ctx, func() { fc.st.Close() })
	defer stop()
	for {
		kind, b, err := fc.read()
		if err != nil || kind != frameElem {
			if ctx.Err() == nil {
				q.Offer(gapOf(m))
			}
			return
		}
		var w wireEvent
		if wire.Unmarshal(b, &w) != nil {
			continue
		}
		if ev := w.decode(); ev != nil {
			q.Offer(ev)
		}
	}
}

// serveSpy streams this node's matching events to a remote spy.
func (cl *cluster) serveSpy(st *mux.Stream, fc *frameConn, req *callReq) {
	var sr spyReq
	if err := wire.Unmarshal(req.Arg, &sr); err != nil {
		fc.writeError(frameStatus, &wireError{Code: codeUnknown, Message: err.Error()})
		return
	}
	release, err := cl.sys.acquireSpy()
	if err != nil {
		fc.writeError(frameStatus, encodeError(err))
		return
	}
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		io.Copy(io.Discard, fc.r) // the spy closing its end stops us
		cancel()
		st.SetWriteDeadline(time.Unix(1, 0))
	}()
	events, err := cl.sys.host.Spy(ctx, actor.SpyFilter{Kind: sr.Kind, Key: sr.Key, Payloads: sr.Payloads})
	if err != nil {
		fc.writeError(frameStatus, encodeError(err))
		return
	}
	if fc.write(frameStatus, nil) != nil {
		return
	}
	for ev := range events {
		if err := fc.writeValue(frameElem, encodeEvent(ev, cl.addr)); err != nil {
			return
		}
	}
}

func parseID(s string) (mux.NodeID, error) {
	id, err := ringParse(s)
	if err != nil {
		return mux.NodeID{}, fmt.Errorf("casty: member id %q: %w", s, err)
	}
	return mux.NodeID(id), nil
}
