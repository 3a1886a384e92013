package castytest_test

import (
	"testing"
	"time"

	"github.com/casty-go/casty/casty/castytest"
)

// mostStruck is the largest number of members s's faults strike at one
// instant.
func mostStruck(s castytest.Schedule) int {
	most := 0
	for _, f := range s.Faults {
		struck := map[int]bool{}
		for _, g := range s.Faults {
			if g.At <= f.At && f.At < g.At+g.Hold {
				for _, m := range g.Members {
					struck[m] = true
				}
			}
		}
		most = max(most, len(struck))
	}
	return most
}

// By default a schedule strikes at most a minority at once; MaxStruck
// lets faults overlap into double failures, and a seed gives the same
// schedule every time.
func TestScheduleStrikesAtMostMaxStruck(t *testing.T) {
	for _, c := range []struct{ members, struck, want int }{{3, 0, 1}, {5, 0, 2}, {3, 2, 2}, {5, 4, 4}} {
		most := 0
		for seed := range int64(20) {
			cfg := castytest.ScheduleConfig{Members: c.members, MaxStruck: c.struck, Length: 10 * time.Minute, Every: 2 * time.Second}
			s := castytest.NewSchedule(seed, cfg)
			if again := castytest.NewSchedule(seed, cfg); again.String() != s.String() {
				t.Fatalf("seed %d drew two schedules:\n%s\n%s", seed, s, again)
			}
			m := mostStruck(s)
			if m > c.want {
				t.Fatalf("%d members, MaxStruck %d, seed %d: %d struck at once, want at most %d\n%s", c.members, c.struck, seed, m, c.want, s)
			}
			most = max(most, m)
		}
		if most != c.want {
			t.Errorf("%d members, MaxStruck %d: at most %d struck at once in 20 seeds, want %d at some instant", c.members, c.struck, most, c.want)
		}
	}
}
