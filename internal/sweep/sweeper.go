package sweep

import (
	"sync/atomic"
	"time"
)

const (
	// Threshold is the shortest timeout a Sweeper watches; a shorter one
	// keeps a timer of its own, which Every would make too imprecise.
	Threshold = time.Second
	// Every is the period of a sweep: a watched deadline fires up to Every
	// after it passed.
	Every = 10 * time.Millisecond
)

// Sweeper runs at most one sweep loop at a time for its owner. The zero
// value is ready to use; a Sweeper must not be copied after first use.
type Sweeper struct {
	running atomic.Bool
}

// Start reports whether the caller must now run Run in a goroutine: it
// returns true to exactly one caller while no loop runs, and false while
// one does. Call it after registering a deadline where the sweep function
// sees it. The fast path is one atomic load.
//
// If the caller cannot start the goroutine after Start returned true (its
// owner is closing), no loop starts again: Start keeps returning false.
func (s *Sweeper) Start() bool {
	return !s.running.Load() && s.running.CompareAndSwap(false, true)
}

// Run calls sweep every Every until sweep reports that nothing is left to
// watch, or done is closed (nil: never). sweep expires what is past its
// deadline and returns how many deadlines remain.
//
// A deadline registered while Run is deciding to stop is not lost: Run
// clears the running flag, sweeps once more, and goes on if that sweep
// found work and no new loop took the flag in between (a registration
// that saw the flag still set started none).
func (s *Sweeper) Run(sweep func() (watched int), done <-chan struct{}) {
	t := time.NewTicker(Every)
	defer t.Stop()
	for {
		select {
		case <-done:
			s.running.Store(false)
			return
		case <-t.C:
		}
		if sweep() > 0 {
			continue
		}
		s.running.Store(false)
		if sweep() == 0 || !s.running.CompareAndSwap(false, true) {
			return
		}
	}
}

// Running reports whether a loop runs (for tests).
func (s *Sweeper) Running() bool { return s.running.Load() }
