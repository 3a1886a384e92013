package virtual_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
	"github.com/casty-go/casty/internal/wait"
)

// AllRegs: three replicas, every write on all three, majority reads.
var AllRegs = casty.Actor[Reg](casty.Name("castytest.virtual.AllReg"), casty.Replicas(3), casty.Write(casty.All), casty.Read(casty.Majority))

// A Write(All) key's owner cut off from every other member, past
// RemoveDeadAfter: the others remove it, the key's new replica set syncs
// from the two replicas left and acknowledges a newer write. A
// Read(Majority) through the cut owner must not answer the value from
// before: it fails (no read quorum), or answers the newer one. With a read
// quorum of n - w + 1 = 1 its confirm asked its own copy alone, which
// had heard of neither the new placement nor the new owner's ballot, and
// it answered the old value: the schedules' r3-all configuration found it
// (castytest/virtual/schedules, CASTY_SCHEDULE_CONFIG=r3-all, 3 of seeds
// 10001–10008 of 10-minute schedules). An owner's prepare and confirm now
// need w answers at least (replica.OwnerQuorumOf), so they meet every
// sync quorum of the set (replica/SPEC.md, "Safety", case 4).
func TestACutOffWriteAllOwnerServesNoStaleRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := casty.DefaultConfig()
		cfg.Replication.RemoveDeadAfter = scheduleRemoveAfter
		c := castytest.NewCluster(t, 5, castytest.Seed(1), castytest.MemberOptions(casty.WithConfig(cfg)))
		ctx := context.Background()
		key := ""
		for i := 0; key == ""; i++ {
			k := fmt.Sprintf("all-%d", i)
			p, ok := c.Member(2).Placement(AllRegs.Name(), k, 0)
			if ok && p.Owner.Addr == c.Addr(0) && slices.ContainsFunc(p.Replicas, func(m casty.Member) bool { return m.Addr == c.Addr(1) }) {
				key = k
			}
		}
		// Activate the key at member 0 and write 1 on all three replicas.
		if err := casty.Do(ctx, AllRegs.Ref(c.Member(0), key), (*Reg).Set, 1); err != nil {
			t.Fatalf("a write before the cut: %v", err)
		}
		c.Partition([]int{0, 1}, []int{2, 3, 4})
		wait.For(t, 2*time.Minute, "a write of 2 through the majority after member 0's removal", func() bool {
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			return casty.Do(cctx, AllRegs.Ref(c.Member(2), key), (*Reg).Set, 2) == nil
		})
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		v, err := casty.Call0(cctx, AllRegs.Ref(c.Member(0), key), (*Reg).Get)
		cancel()
		if err == nil && v != 2 {
			t.Fatalf("a Read(Majority) through the cut-off owner answered %d after 2 was acknowledged", v)
		}
		t.Logf("a Read(Majority) through the cut-off owner: %d, %v", v, err)
	})
}
