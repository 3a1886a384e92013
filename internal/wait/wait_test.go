package wait

import (
	"sync/atomic"
	"testing"
	"time"
)

// A condition that comes true is waited for; one checked true at once
// costs no pause.
func TestForReturnsOnceTheConditionHolds(t *testing.T) {
	start := time.Now()
	For(t, time.Second, "a true condition", func() bool { return true })
	if d := time.Since(start); d >= time.Millisecond {
		t.Errorf("a condition true at once took %v", d)
	}
	var n atomic.Int32
	For(t, 5*time.Second, "the third check", func() bool { return n.Add(1) == 3 })
}

// recorder is a testing.TB that keeps its Fatalf instead of stopping.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = format
}

// A condition that never holds fails the test once within has passed.
func TestForFailsPastTheDeadline(t *testing.T) {
	r := &recorder{TB: t}
	checks := 0
	start := time.Now()
	For(r, 20*time.Millisecond, "nothing", func() bool {
		checks++
		return r.failed != "" // Fatalf does not stop a recorder: end the loop
	})
	if r.failed == "" {
		t.Fatal("no failure past the deadline")
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("failed after %v, before the deadline", d)
	}
	if checks > 20 {
		t.Errorf("%d checks in about 20 ms: the pauses do not grow", checks)
	}
}

// Until reports whether the condition held in time, and fails nothing:
// the caller explains a timeout itself.
func TestUntilReportsWhetherTheConditionHeld(t *testing.T) {
	n := 0
	if !Until(time.Second, func() bool { n++; return n == 3 }) {
		t.Fatal("a condition that held on the third check reported as timed out")
	}
	start := time.Now()
	if Until(20*time.Millisecond, func() bool { return false }) {
		t.Fatal("a condition that never held reported as held")
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("gave up after %v, before the deadline", d)
	}
}
