package virtual_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
)

// Close returns by its context's deadline even when the leave cannot be
// agreed (no majority answers): the member is then left to be removed as
// dead, as when the leave times out on Config.Actors.DrainTimeout. On virtual
// time the durations are exact.
func TestCloseReturnsByItsContextsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := casty.DefaultConfig() // DrainTimeout 10 s
		c := castytest.NewCluster(t, 3, castytest.Seed(1), castytest.MemberOptions(casty.WithConfig(cfg)))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := casty.Do(ctx, MajorityRegs.Ref(c.Member(0), "k"), (*Reg).Set, 1); err != nil {
			t.Fatalf("a write before the partition: %v", err)
		}
		c.Partition([]int{0}, []int{1, 2})
		const within = 2 * time.Second
		cctx, ccancel := context.WithTimeout(context.Background(), within)
		defer ccancel()
		start := time.Now()
		_ = c.Member(0).Close(cctx)
		if took := time.Since(start); took > within+100*time.Millisecond {
			t.Fatalf("Close with a %v context took %v (Config.Actors.DrainTimeout is %v)", within, took, cfg.Actors.DrainTimeout)
		}
		c.HealAll()
	})
}
