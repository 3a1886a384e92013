package virtual_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/casty-go/casty/casty/castytest"
)

// A member entering the ranges of a placement of many members syncs them
// from about as many distinct previous sets as it has tokens — a batch of
// ranges for each — and runs the batches of a round together: on links
// with 50 ms each way, a restarted member of a 20-member cluster is ready
// (placed, every entered range synced) within a few virtual seconds.
// Run one after another, its batches took a round trip each, and it was
// not ready after 30 virtual seconds.
func TestAJoinersSyncBatchesRunTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, victim = 20, 7
		c := castytest.NewCluster(t, n, castytest.Seed(1))
		for i := range n {
			if i != victim {
				c.Delay(i, victim, 50*time.Millisecond)
			}
		}
		start := time.Now()
		sys := c.Restart(victim)
		deadline := start.Add(30 * time.Second)
		for !sys.Health().Ready {
			if time.Now().After(deadline) {
				t.Fatalf("the restarted member is not ready 30 virtual seconds on: %s", sys.Health().Reason)
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("ready %v (virtual) after its restart", time.Since(start))
	})
}
