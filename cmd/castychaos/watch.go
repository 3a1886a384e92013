package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/casty-go/casty/casty"
)

// placementWatch samples, through the lite member, the placement of
// replicated kinds the members act on while the run goes on, so the
// summary can say how it changed: the versions seen (each agreed change
// is one) and the smallest placement any member acted on. It shows
// whether faults were held long enough for removals.
type placementWatch struct {
	mu         sync.Mutex
	first      uint64 // lowest version seen, 0 before any report
	last       uint64 // highest version seen
	smallest   int    // fewest members placed in a report, 0 before any
	smallestAt uint64 // the version of that report
	samples    int
}

// watchEvery is the period of placementWatch's samples.
const watchEvery = time.Second

// run samples until ctx ends.
func (w *placementWatch) run(ctx context.Context, sys *casty.System) {
	for sleepCtx(ctx, watchEvery) {
		sctx, cancel := context.WithTimeout(ctx, watchEvery)
		reports, err := sys.PlacementStatus(sctx)
		cancel()
		if err != nil {
			continue
		}
		w.mu.Lock()
		for _, r := range reports {
			if r.Err != "" || r.Version == 0 {
				continue
			}
			w.samples++
			if w.first == 0 || r.Version < w.first {
				w.first = r.Version
			}
			w.last = max(w.last, r.Version)
			if w.smallest == 0 || r.Placed < w.smallest {
				w.smallest, w.smallestAt = r.Placed, r.Version
			}
		}
		w.mu.Unlock()
	}
}

// String summarises what the watch saw.
func (w *placementWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.samples == 0 {
		return "no member reported its placement during the run"
	}
	return fmt.Sprintf("placement versions %d to %d during the run (each agreed change is one); the smallest a member acted on placed %d members (version %d)",
		w.first, w.last, w.smallest, w.smallestAt)
}
