package hlc

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"
)

// fakeClock is an injectable physical clock.
type fakeClock struct{ ms int64 }

func (f *fakeClock) now() int64 { return f.ms }

var nodeA = [16]byte{15: 1}
var nodeB = [16]byte{15: 2}

func newClock(t testing.TB, f *fakeClock, node [16]byte) *Clock {
	t.Helper()
	c, err := New(Config{Node: node, Physical: f.now})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig invalid: %v", err)
	}
	if _, err := New(Config{}); !errors.Is(err, ErrNoPhysicalClock) {
		t.Fatalf("New(Config{}) = %v, want ErrNoPhysicalClock", err)
	}
	cfg := DefaultConfig()
	cfg.MaxDrift = -time.Second
	if err := cfg.Validate(); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("negative MaxDrift: %v, want ErrBadConfig", err)
	}
	cfg.MaxDrift = 999 * time.Microsecond // would round to 0: no limit
	if err := cfg.Validate(); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("MaxDrift below 1 ms: %v, want ErrBadConfig", err)
	}
	cfg.MaxDrift = time.Millisecond
	if err := cfg.Validate(); err != nil {
		t.Fatalf("MaxDrift 1 ms: %v", err)
	}
}

func TestTimestampOrder(t *testing.T) {
	ordered := []Timestamp{
		{},
		{Wall: 0, Counter: 0, Node: nodeA},
		{Wall: 0, Counter: 1},
		{Wall: 1, Counter: 0},
		{Wall: 1, Counter: 0, Node: nodeA},
		{Wall: 1, Counter: 0, Node: nodeB},
		{Wall: 1, Counter: 7, Node: nodeA},
		{Wall: 2, Counter: 0},
		{Wall: math.MaxInt64, Counter: math.MaxUint32, Node: [16]byte{0: 0xff}},
	}
	for i, a := range ordered {
		for j, b := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := a.Compare(b); got != want {
				t.Errorf("%v.Compare(%v) = %d, want %d", a, b, got, want)
			}
			if a.Less(b) != (want < 0) {
				t.Errorf("%v.Less(%v) wrong", a, b)
			}
		}
	}
	if !(Timestamp{}).IsZero() || (Timestamp{Counter: 1}).IsZero() {
		t.Error("IsZero wrong")
	}
	if got := (Timestamp{Wall: 1700000000000, Counter: 3, Node: nodeA}).String(); got != "1700000000000.3@00000000-0000-0000-0000-000000000001" {
		t.Errorf("String = %q", got)
	}
}

func TestNowFollowsPhysicalClock(t *testing.T) {
	f := &fakeClock{ms: 1000}
	c := newClock(t, f, nodeA)
	if got := c.Now(); got != (Timestamp{1000, 0, nodeA}) {
		t.Fatalf("first Now = %v", got)
	}
	if got := c.Now(); got != (Timestamp{1000, 1, nodeA}) {
		t.Fatalf("same ms Now = %v", got)
	}
	f.ms = 1005
	if got := c.Now(); got != (Timestamp{1005, 0, nodeA}) {
		t.Fatalf("after advance Now = %v", got)
	}
}

func TestNowMonotonicWhenPhysicalJumpsBack(t *testing.T) {
	f := &fakeClock{ms: 1_700_000_000_000}
	c := newClock(t, f, nodeA)
	prev := c.Now()
	f.ms -= 30_000 // NTP steps the clock back 30 s
	for i := range 1000 {
		ts := c.Now()
		if !prev.Less(ts) {
			t.Fatalf("step %d: %v not after %v", i, ts, prev)
		}
		if ts.Wall != prev.Wall {
			t.Fatalf("step %d: wall moved while physical clock is behind: %v", i, ts)
		}
		prev = ts
		f.ms += 10 // physical time runs, still behind
	}
	f.ms = prev.Wall + 1
	if ts := c.Now(); ts != (Timestamp{prev.Wall + 1, 0, nodeA}) {
		t.Fatalf("after physical catches up: %v", ts)
	}
}

func TestCounterOverflowAdvancesWall(t *testing.T) {
	f := &fakeClock{ms: 500}
	c := newClock(t, f, nodeA)
	// Observe a stamp whose counter is at the limit: the receive event
	// cannot use counter+1, so Wall moves 1 ms ahead, logically.
	got, err := c.Observe(Timestamp{Wall: 500, Counter: math.MaxUint32, Node: nodeB})
	if err != nil {
		t.Fatal(err)
	}
	if got != (Timestamp{501, 0, nodeA}) {
		t.Fatalf("Observe at counter limit = %v, want 501.0", got)
	}
	// Same through Now: drive the counter to the limit.
	c.mu.Lock()
	c.last.Counter = math.MaxUint32 - 1
	c.mu.Unlock()
	if got := c.Now(); got != (Timestamp{501, math.MaxUint32, nodeA}) {
		t.Fatalf("Now = %v", got)
	}
	if got := c.Now(); got != (Timestamp{502, 0, nodeA}) {
		t.Fatalf("Now after counter limit = %v, want 502.0", got)
	}
}

func TestExhausted(t *testing.T) {
	f := &fakeClock{ms: 1}
	c := newClock(t, f, nodeA)
	top := Timestamp{Wall: math.MaxInt64, Counter: math.MaxUint32}
	if _, err := c.Observe(top); !errors.Is(err, ErrExhausted) {
		t.Fatalf("Observe(top) = %v, want ErrExhausted", err)
	}
	if last := c.Last(); last.Wall != 0 || last.Counter != 0 {
		t.Fatalf("failed Observe changed the clock: %v", last)
	}
	if _, err := c.Observe(Timestamp{Wall: math.MaxInt64, Counter: math.MaxUint32 - 1}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r != ErrExhausted {
			t.Fatalf("Now at the end of time: recover() = %v, want ErrExhausted", r)
		}
	}()
	c.Now()
}

func TestObserveExceedsRemote(t *testing.T) {
	for _, tc := range []struct {
		name     string
		physical int64
		local    Timestamp // state before
		remote   Timestamp
		want     Timestamp
	}{
		{"remote ahead", 100, Timestamp{100, 4, nodeA}, Timestamp{200, 7, nodeB}, Timestamp{200, 8, nodeA}},
		{"local ahead", 100, Timestamp{300, 4, nodeA}, Timestamp{200, 7, nodeB}, Timestamp{300, 5, nodeA}},
		{"equal walls", 100, Timestamp{300, 4, nodeA}, Timestamp{300, 9, nodeB}, Timestamp{300, 10, nodeA}},
		{"equal walls, local counter higher", 100, Timestamp{300, 12, nodeA}, Timestamp{300, 9, nodeB}, Timestamp{300, 13, nodeA}},
		{"physical ahead of both", 900, Timestamp{300, 4, nodeA}, Timestamp{200, 7, nodeB}, Timestamp{900, 0, nodeA}},
		{"zero remote", 100, Timestamp{}, Timestamp{}, Timestamp{100, 0, nodeA}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeClock{ms: tc.physical}
			c := newClock(t, f, nodeA)
			c.last = tc.local
			c.last.Node = nodeA // the clock's invariant: last carries its own node
			got, err := c.Observe(tc.remote)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("Observe = %v, want %v", got, tc.want)
			}
			if !tc.remote.Less(got) || !tc.local.Less(got) {
				t.Fatalf("Observe = %v does not exceed remote %v and local %v", got, tc.remote, tc.local)
			}
			if n := c.Now(); !got.Less(n) {
				t.Fatalf("Now after Observe = %v, not after %v", n, got)
			}
		})
	}
}

// A node whose node id sorts lower still stamps after what it observed:
// exceeding the remote comes from (Wall, Counter), never from the tie-break.
func TestObserveDoesNotRelyOnNodeOrder(t *testing.T) {
	f := &fakeClock{ms: 10}
	low := newClock(t, f, [16]byte{})
	remote := Timestamp{Wall: 10, Counter: 3, Node: [16]byte{0: 0xff}}
	got, err := low.Observe(remote)
	if err != nil {
		t.Fatal(err)
	}
	if got.Wall != 10 || got.Counter != 4 {
		t.Fatalf("Observe = %v, want 10.4", got)
	}
}

func TestMaxDrift(t *testing.T) {
	f := &fakeClock{ms: 10_000}
	c, err := New(Config{Node: nodeA, Physical: f.now, MaxDrift: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Observe(Timestamp{Wall: 10_500, Node: nodeB}); err != nil {
		t.Fatalf("stamp exactly at the limit rejected: %v", err)
	}
	before := c.Last()
	_, err = c.Observe(Timestamp{Wall: 10_501, Node: nodeB})
	var de *DriftError
	if !errors.Is(err, ErrDrift) || !errors.As(err, &de) || de.Physical != 10_000 || de.Remote.Wall != 10_501 {
		t.Fatalf("Observe beyond drift = %v", err)
	}
	if c.Last() != before {
		t.Fatalf("rejected Observe changed the clock")
	}
	// Far-future and far-past remotes must not overflow the drift check.
	if _, err := c.Observe(Timestamp{Wall: math.MaxInt64}); !errors.Is(err, ErrDrift) {
		t.Fatalf("MaxInt64 remote: %v", err)
	}
	if _, err := c.Observe(Timestamp{Wall: math.MinInt64}); err != nil {
		t.Fatalf("MinInt64 remote: %v", err)
	}
}

func TestNegativePhysicalClock(t *testing.T) {
	f := &fakeClock{ms: -5000}
	c := newClock(t, f, nodeA)
	a, b := c.Now(), c.Now()
	if a.IsZero() || !a.Less(b) {
		t.Fatalf("Now with a pre-epoch clock: %v then %v", a, b)
	}
}

func TestConcurrentNowIsUniqueAndMonotonic(t *testing.T) {
	var mu sync.Mutex
	f := &fakeClock{ms: 1}
	phys := func() int64 { // a physical clock that jumps around
		mu.Lock()
		defer mu.Unlock()
		f.ms = (f.ms*7 + 3) % 50
		return f.ms
	}
	c, err := New(Config{Node: nodeA, Physical: phys})
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 4, 5000
	results := make([][]Timestamp, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				results[w] = append(results[w], c.Now())
			}
		})
	}
	wg.Wait()
	seen := map[Timestamp]bool{}
	for w, rs := range results {
		for i, ts := range rs {
			if i > 0 && !rs[i-1].Less(ts) {
				t.Fatalf("worker %d: %v not after %v", w, ts, rs[i-1])
			}
			if seen[ts] {
				t.Fatalf("duplicate stamp %v", ts)
			}
			seen[ts] = true
		}
	}
}
