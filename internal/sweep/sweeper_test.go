package sweep

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// deadlines is a caller's table: ids waiting, with their deadlines, and
// when each was expired.
type deadlines struct {
	mu      sync.Mutex
	waiting map[int]time.Time
	expired map[int]time.Time
	sweeps  int
}

func newDeadlines() *deadlines {
	return &deadlines{waiting: map[int]time.Time{}, expired: map[int]time.Time{}}
}

func (d *deadlines) add(id int, at time.Time) {
	d.mu.Lock()
	d.waiting[id] = at
	d.mu.Unlock()
}

func (d *deadlines) sweep() (watched int, next time.Duration) {
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sweeps++
	next = time.Duration(1<<63 - 1)
	for id, at := range d.waiting {
		if !now.Before(at) {
			delete(d.waiting, id)
			d.expired[id] = now
		} else {
			next = min(next, at.Sub(now))
		}
	}
	return len(d.waiting), next
}

func (d *deadlines) counts() (waiting, expired int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.waiting), len(d.expired)
}

// watch registers id and makes sure a loop runs, as an owner does.
func watch(s *Sweeper, d *deadlines, id int, at time.Time, done <-chan struct{}) {
	d.add(id, at)
	if s.Start() {
		go s.Run(Threshold-Every, d.sweep, done)
	}
}

// settled waits until the bubble is idle and checks the table's counts and
// whether a loop still runs.
func settled(t *testing.T, s *Sweeper, d *deadlines, waiting, expired int, running bool) {
	t.Helper()
	synctest.Wait()
	if w, e := d.counts(); w != waiting || e != expired {
		t.Fatalf("%d waiting, %d expired; want %d, %d", w, e, waiting, expired)
	}
	if s.Running() != running {
		t.Fatalf("a loop runs: %v, want %v", s.Running(), running)
	}
}

// A watched deadline fires between 0 and Every late; once nothing is left
// the loop ends and a later deadline starts a new one.
func TestADeadlineFiresWithinEveryAndTheLoopEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s Sweeper
		d := newDeadlines()
		at := time.Now().Add(Threshold)
		watch(&s, d, 1, at, nil)
		if s.Start() {
			t.Fatal("Start returned true while a loop runs")
		}
		time.Sleep(Threshold + 2*Every)
		settled(t, &s, d, 0, 1, false)
		if late := d.expired[1].Sub(at); late < 0 || late > Every {
			t.Fatalf("fired %v after its deadline, want within [0, %v]", late, Every)
		}
		watch(&s, d, 2, time.Now().Add(Threshold), nil)
		if !s.Running() {
			t.Fatal("a new deadline started no loop")
		}
		time.Sleep(Threshold + 2*Every)
		settled(t, &s, d, 0, 2, false)
	})
}

// A loop watching only distant deadlines sleeps until the earliest, a
// Threshold at most at a time, rather than sweeping every Every; a
// deadline registered meanwhile (at least Threshold away) still fires
// within Every.
func TestADistantDeadlineIsSweptOnceAThreshold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s Sweeper
		d := newDeadlines()
		done := make(chan struct{})
		watch(&s, d, 1, time.Now().Add(time.Hour), done)
		time.Sleep(10*Threshold + Every)
		d.mu.Lock()
		sweeps := d.sweeps
		d.mu.Unlock()
		if sweeps > 12 {
			t.Fatalf("%d sweeps in %v watching a deadline an hour away, want about one a Threshold", sweeps, 10*Threshold)
		}
		at := time.Now().Add(Threshold)
		watch(&s, d, 2, at, done)
		time.Sleep(Threshold + 2*Every)
		settled(t, &s, d, 1, 1, true)
		if late := d.expired[2].Sub(at); late < 0 || late > Every {
			t.Fatalf("fired %v after its deadline, want within [0, %v]", late, Every)
		}
		close(done)
		settled(t, &s, d, 1, 1, false)
	})
}

// A deadline nearer than Threshold, registered while the loop sleeps
// toward a distant one, is swept within Every of its time once poked.
func TestAPokedNearDeadlineIsSweptOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s Sweeper
		d := newDeadlines()
		done := make(chan struct{})
		watch(&s, d, 1, time.Now().Add(time.Hour), done)
		time.Sleep(Threshold / 2) // the loop sleeps until Threshold - Every
		at := time.Now().Add(Every)
		watch(&s, d, 2, at, done)
		s.Poke()
		time.Sleep(3 * Every)
		settled(t, &s, d, 1, 1, true)
		if late := d.expired[2].Sub(at); late < 0 || late > Every {
			t.Fatalf("fired %v after its deadline, want within [0, %v]", late, Every)
		}
		close(done)
		settled(t, &s, d, 1, 1, false)
	})
}

// Closing done ends the loop at once, whatever is still watched.
func TestDoneEndsTheLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s Sweeper
		d := newDeadlines()
		done := make(chan struct{})
		watch(&s, d, 1, time.Now().Add(time.Hour), done)
		time.Sleep(3 * Every)
		close(done)
		settled(t, &s, d, 1, 0, false)
	})
}

// A deadline registered after a sweep found nothing left, but before the
// loop cleared its flag, saw a loop running and started none: the loop
// still expires it.
func TestADeadlineRegisteredAsTheLoopStopsIsExpired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s Sweeper
		d := newDeadlines()
		late := false
		sweep := func() (int, time.Duration) {
			n, next := d.sweep()
			if n == 0 && !late {
				late = true
				watch(&s, d, 2, time.Now().Add(Threshold), nil) // Start returns false here
			}
			return n, next
		}
		d.add(1, time.Now().Add(Threshold))
		if !s.Start() {
			t.Fatal("Start returned false with no loop running")
		}
		go s.Run(Threshold-Every, sweep, nil)
		time.Sleep(2*Threshold + Every)
		settled(t, &s, d, 0, 2, false)
	})
}
