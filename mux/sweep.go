package mux

import (
	"context"
	"time"
)

// Request timeouts of a second or more (RequestTimeout; casty's default
// CallTimeout is one) are enforced by one sweeper per node instead of a
// timer per request: a timer costs every request a trip through the
// runtime's timer heap and turns its wait into a three-way select. The
// sweeper runs while such requests are pending and fails those past their
// deadline every sweepEvery, exactly as the requester would have: the
// request leaves the pending table, its requester gets
// context.DeadlineExceeded, and the peer is told to cancel the handler.
const (
	coarseTimeout = time.Second
	sweepEvery    = 10 * time.Millisecond
)

// pendingReq is a request waiting for its answer.
type pendingReq struct {
	ch       chan result
	deadline int64 // nanotime; 0 when the sweeper does not watch it
	lane     Lane
}

// epoch anchors the sweeper's clock: time.Since of a time that carries a
// monotonic reading reads only the monotonic clock.
var epoch = time.Now()

// nanotime is monotonic nanoseconds since epoch.
func nanotime() int64 { return int64(time.Since(epoch)) }

// sweepPending makes sure the sweeper runs.
func (n *Node) sweepPending() {
	if n.sweeping.Load() || !n.sweeping.CompareAndSwap(false, true) {
		return
	}
	if !n.goTracked(n.sweeper) {
		n.sweeping.Store(false)
	}
}

// sweeper expires watched requests until none is pending, then exits.
func (n *Node) sweeper() {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-n.done:
			n.sweeping.Store(false)
			return
		case <-t.C:
		}
		if n.sweep() > 0 {
			continue
		}
		// Nothing left to watch: stop, unless a request registered
		// between the sweep and the flag (it saw the flag still set).
		n.sweeping.Store(false)
		if n.sweep() == 0 || !n.sweeping.CompareAndSwap(false, true) {
			return
		}
	}
}

// sweep expires the watched requests past their deadline on every session
// and reports how many watched requests remain.
func (n *Node) sweep() (watched int) {
	n.mu.Lock()
	sessions := make([]*Session, 0, len(n.all))
	for s := range n.all {
		sessions = append(sessions, s)
	}
	n.mu.Unlock()
	now := nanotime()
	type expired struct {
		id uint64
		p  pendingReq
	}
	var gone []expired
	for _, s := range sessions {
		gone = gone[:0]
		s.mu.Lock()
		for id, p := range s.pending {
			switch {
			case p.deadline == 0:
			case now >= p.deadline:
				delete(s.pending, id)
				gone = append(gone, expired{id, p})
			default:
				watched++
			}
		}
		if len(gone) > 0 {
			s.signalIdleLocked()
		}
		s.mu.Unlock()
		for _, e := range gone {
			e.p.ch <- result{err: context.DeadlineExceeded}
			_ = s.lanes[e.p.lane].send(nil, frameCancel, e.id, nil)
		}
	}
	return watched
}
