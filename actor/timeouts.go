package actor

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/casty-go/casty/internal/sweep"
)

// Calls bounded by Config.CallTimeout (a ctx without a deadline) and
// CallTimeout of sweep.Threshold or more are watched by the host's
// sweep.Sweeper instead of a timer per call (package sweep says why). While
// such calls wait, every sweep.Every it fails those past their deadline
// exactly as their timer would have: the envelope is abandoned and its
// caller gets a *TimeoutError. A timeout fires up to sweep.Every late. A
// host cannot stop its loop when it closes (a handler abandoned by the
// drain may still have a caller to time out), so the loop sweeps every
// sweep.Every and ends within that of the last watched call.
const numWatchShards = 16

type watchShard struct {
	mu sync.Mutex
	m  map[*Envelope]watched
}

type watched struct {
	w        *waiter
	deadline int64 // h.now() units
}

// waiterShards spreads pooled waiters over the watch shards.
var waiterShards atomic.Uint32

// watch registers e, whose caller waits on w, to time out after d.
func (h *Host) watch(e *Envelope, w *waiter, d time.Duration) {
	sh := &h.watches[w.shard]
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = make(map[*Envelope]watched)
	}
	sh.m[e] = watched{w: w, deadline: h.now() + int64(d)}
	sh.mu.Unlock()
	if h.timeouts.Start() {
		go h.timeouts.Run(sweep.Every, h.sweepWatched, nil)
	}
}

// unwatch forgets e once its caller stopped waiting.
func (h *Host) unwatch(e *Envelope, w *waiter) {
	sh := &h.watches[w.shard]
	sh.mu.Lock()
	delete(sh.m, e)
	sh.mu.Unlock()
}

// sweepWatched times out the watched calls past their deadline and
// reports how many remain watched; next 0 keeps the loop sweeping every
// sweep.Every.
func (h *Host) sweepWatched() (left int, next time.Duration) {
	now := h.now()
	var gone []watched
	var envs []*Envelope
	for i := range h.watches {
		sh := &h.watches[i]
		sh.mu.Lock()
		for e, x := range sh.m {
			if now >= x.deadline {
				delete(sh.m, e)
				gone, envs = append(gone, x), append(envs, e)
			}
		}
		left += len(sh.m)
		sh.mu.Unlock()
	}
	for i, e := range envs {
		// Only if the call is still unanswered: its caller then waits on
		// w until this send, and the reply will not send.
		if e.abandon() {
			gone[i].w.expired = true
			gone[i].w.ch <- struct{}{}
		}
	}
	return left, 0
}
