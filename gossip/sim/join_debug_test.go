package sim

import (
	"slices"
	"testing"
	"time"
)

func TestDebugJoin(t *testing.T) {
	for _, n := range []int{50, 100, 1000} {
		var lat []time.Duration
		start := time.Now()
		seeds := 10
		if n == 1000 {
			continue
		}
		for seed := range uint64(seeds) {
			s := New(Config{Seed: seed})
			ok := s.Grow(n, 20*time.Millisecond, 120*time.Second)
			conv := s.Now()
			s.Run(10 * time.Second)
			t0 := s.Now()
			j := s.AddNode()
			ok2 := s.RunUntil(t0+10*time.Second, func() bool { return s.AllSee(j, IsAlive) })
			lat = append(lat, s.Now()-t0)
			if !ok || !ok2 {
				t.Logf("seed %d ok=%v ok2=%v conv=%v", seed, ok, ok2, conv)
			}
		}
		slices.Sort(lat)
		t.Logf("n=%d join latencies %v wall=%v", n, lat, time.Since(start))
	}
}
