package sim

import (
	"testing"
	"time"
)

func TestSmokeGrow(t *testing.T) {
	for _, n := range []int{10, 50, 100} {
		s := New(Config{Seed: 1})
		start := time.Now()
		ok := s.Grow(n, 20*time.Millisecond, 60*time.Second)
		st := s.Stats()
		t.Logf("n=%d converged=%v at %v connected=%v msgs=%d bytes=%d sizes=%v wall=%v", n, ok, s.Now(), s.Connected(), st.Msgs, st.Bytes, s.ActiveSizes(), time.Since(start))
		if !ok {
			t.Fatalf("seed %d: not converged", s.Seed())
		}
	}
}
