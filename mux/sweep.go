package mux

import (
	"context"
	"math"
	"time"

	"github.com/casty-go/casty/internal/sweep"
)

// Request timeouts of sweep.Threshold (one second) or more
// (RequestTimeout; casty's default CallTimeout is 10 s) are enforced by
// the node's sweep.Sweeper instead of a timer per request (package sweep
// says why). While such requests are pending, it fails those past their
// deadline (up to sweep.Every late) exactly as the requester would have: the
// request leaves the pending table, its requester gets
// context.DeadlineExceeded, and the peer is told to cancel the handler.

// pendingReq is a request waiting for its answer.
type pendingReq struct {
	ch       chan result         // Request's waiter, or
	fn       func([]byte, error) // RequestAsync's callback
	deadline int64               // nanotime; 0 when the sweeper does not watch it
	lane     Lane
}

// nanotime is monotonic nanoseconds since the node was made: time.Since
// of a time that carries a monotonic reading reads only the monotonic
// clock. The epoch is the node's, not the process's, so that a node made
// in a testing/synctest bubble (whose times carry no monotonic reading)
// measures from a time of its own bubble's clock.
func (n *Node) nanotime() int64 { return int64(time.Since(n.epoch)) }

// sweepPending makes sure the sweeper runs. Once the node is closing no
// sweeper starts again; Close fails what is pending.
func (n *Node) sweepPending() {
	if n.timeouts.Start() {
		n.goTracked(func() { n.timeouts.Run(sweep.Threshold-sweep.Every, n.expireRequests, n.done) })
	}
}

// expireRequests expires the watched requests past their deadline on every
// session and reports how many watched requests remain, and how long until
// the earliest of them is due.
func (n *Node) expireRequests() (watched int, next time.Duration) {
	n.mu.Lock()
	sessions := make([]*Session, 0, len(n.all))
	for s := range n.all {
		sessions = append(sessions, s)
	}
	n.mu.Unlock()
	now := n.nanotime()
	earliest := int64(math.MaxInt64)
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
				earliest = min(earliest, p.deadline)
			}
		}
		if len(gone) > 0 {
			s.signalIdleLocked()
		}
		s.mu.Unlock()
		for _, e := range gone {
			e.p.deliver(result{err: context.DeadlineExceeded})
			_ = s.lanes[e.p.lane].send(nil, frameCancel, e.id, nil)
		}
	}
	return watched, time.Duration(earliest - now)
}
