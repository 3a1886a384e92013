package sweep

import (
	"sync"
	"sync/atomic"
	"time"
)

const (
	// Threshold is the shortest timeout a Sweeper watches; a shorter one
	// keeps a timer of its own, which Every would make too imprecise.
	Threshold = time.Second
	// Every is the shortest pause between two sweeps: a watched deadline
	// fires up to Every after it passed.
	Every = 10 * time.Millisecond
)

// Sweeper runs at most one sweep loop at a time for its owner. The zero
// value is ready to use; a Sweeper must not be copied after first use.
type Sweeper struct {
	running  atomic.Bool
	pokeOnce sync.Once
	poke     chan struct{} // Poke's signal to a running loop (pokes)
}

// pokes returns the loop's poke channel, made on first use.
func (s *Sweeper) pokes() chan struct{} {
	s.pokeOnce.Do(func() { s.poke = make(chan struct{}, 1) })
	return s.poke
}

// Poke makes a running loop (or the next to start) sweep at once and
// take its next sleep from what is watched then. Call it after
// registering a deadline nearer than Threshold, which a loop asleep until
// a later one would otherwise sweep late.
func (s *Sweeper) Poke() {
	select {
	case s.pokes() <- struct{}{}:
	default:
	}
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

// Run sweeps first after first, then until sweep reports that nothing is
// left to watch, or done is closed (nil: never). sweep expires what is
// past its deadline and returns how many deadlines remain and how long
// until the earliest of them. Run sleeps that long before the next sweep,
// but at least Every and at most Threshold: a deadline registered
// meanwhile is at least Threshold away (a nearer one comes with a Poke),
// so it is never swept late by more than Every, and a loop
// watching distant deadlines wakes about once a Threshold rather than
// every Every.
//
// first may be up to Threshold - Every (the deadline that started the
// loop is at least Threshold away): a loop started for a request answered
// at once then ends at its first sweep. An owner that cannot stop the loop
// when it closes (done nil) passes Every and reports next 0, so that the
// loop ends within Every of its last deadline.
//
// A deadline registered while Run is deciding to stop is not lost: Run
// clears the running flag, sweeps once more, and goes on if that sweep
// found work and no new loop took the flag in between (a registration
// that saw the flag still set started none).
func (s *Sweeper) Run(first time.Duration, sweep func() (watched int, next time.Duration), done <-chan struct{}) {
	t := time.NewTimer(max(first, 0))
	defer t.Stop()
	poked := s.pokes()
	for {
		select {
		case <-done:
			s.running.Store(false)
			return
		case <-t.C:
		case <-poked:
		}
		n, next := sweep()
		if n == 0 {
			s.running.Store(false)
			if n, next = sweep(); n == 0 || !s.running.CompareAndSwap(false, true) {
				return
			}
		}
		t.Reset(min(max(next, Every), Threshold))
	}
}

// Running reports whether a loop runs (for tests).
func (s *Sweeper) Running() bool { return s.running.Load() }
