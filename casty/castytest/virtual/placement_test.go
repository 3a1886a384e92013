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

// TestAMemberThatMissedVersionsResyncs (a member that skips placement
// versions; the other placement situations are in castytest's
// placement_test.go): members A, B and C
// hold every key; C is paused; newcomer N joins and takes C's slot in
// some keys' replica sets; B is cut off while writes are acknowledged by
// A and N; B heals; N closes gracefully; C resumes only once N's
// departure is agreed; then A crashes. C must reach the last placement
// through the one that held N — in which it left the ranges N took — so
// that it enters them again and syncs them before it votes there: a
// Read(Majority) through B or through C returns the last acknowledged
// value of every key written. A C that adopted the last placement
// straight from the one before N would see no range it entered and vote
// with its copy from before N, which makes a quorum with B's from before
// its cut: the read would return the value from before N joined.
//
// On virtual time each trial takes tens of milliseconds of CPU; each has
// a seed of its own (the placement, so which keys N takes from C, follows
// from it).
func TestAMemberThatMissedVersionsResyncs(t *testing.T) {
	for seed := int64(1); seed <= 10; seed++ {
		t.Run(fmt.Sprint("seed-", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { missedVersionsTrial(t, seed, t.Errorf) })
		})
	}
}

// missedVersionsTrial runs the scenario once; stale is told of each read
// older than the last acknowledged write. opts go to the cluster.
// The scenario catches the rule it is about: members that adopt the
// newest placement straight from the one they held (the "adopt-newest-only"
// mutant) read stale values in it, where the fault schedules of
// TestSchedulesCatchAMutant, drawn at random, have not been seen to.
func TestSkippedVersionsAreCaughtByTheirScenario(t *testing.T) {
	var stale int
	synctest.Test(t, func(t *testing.T) {
		missedVersionsTrial(t, 1, func(format string, args ...any) { stale++; t.Logf(format, args...) }, castytest.Mutant("adopt-newest-only"))
	})
	if stale == 0 {
		t.Fatal("members that skip placement versions read no stale value in the scenario made for them")
	}
}

func missedVersionsTrial(t *testing.T, seed int64, stale func(format string, args ...any), opts ...castytest.ClusterOption) {
	cfg := castytest.TestConfig()
	cfg.Replication.RemoveDeadAfter = 10 * time.Minute // nobody is removed: C is paused through N's whole stay
	opts = append([]castytest.ClusterOption{castytest.Seed(seed), castytest.MemberOptions(casty.WithConfig(cfg))}, opts...)
	c := castytest.NewCluster(t, 3, opts...)
	a, b, cc := 0, 1, 2
	ctx := context.Background()
	set := func(via int, key string, v int) {
		t.Helper()
		wait.For(t, 30*time.Second, fmt.Sprintf("a write of %d to %s through member %d", v, key, via), func() bool {
			ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			// A set: a retry after an indeterminate error is harmless.
			return casty.Do(ctx, MajorityRegs.Ref(c.Member(via), key), (*Reg).Set, v) == nil
		})
	}
	// sees reports whether each of members sees exactly want alive.
	sees := func(want []int, members ...int) bool {
		for _, i := range members {
			ms := c.Member(i).Members()
			if len(ms) != len(want) {
				return false
			}
			for _, j := range want {
				if !slices.ContainsFunc(ms, func(m casty.Member) bool { return m.ID == c.Member(j).ID() }) {
					return false
				}
			}
		}
		return true
	}
	// agreed waits until members act on one placement version, of placed
	// members, each ready (no range sync in flight), and returns it.
	agreed := func(what string, placed int, members ...int) uint64 {
		t.Helper()
		var ver uint64
		wait.For(t, 30*time.Second, what, func() bool {
			ver = c.Member(members[0]).Replication().PlacementVersion
			for _, i := range members {
				r := c.Member(i).Replication()
				if r.Placed != placed || r.PlacementVersion != ver || !c.Member(i).Health().Ready {
					return false
				}
			}
			return true
		})
		return ver
	}

	// Every key's replica set is {A, B, C}: each copy holds 1.
	keys := make([]string, 48)
	want := map[string]int{}
	for k := range keys {
		keys[k] = fmt.Sprint("skip-", k)
		set(a, keys[k], 1)
		want[keys[k]] = 1
	}
	before := agreed("A, B and C on one placement", 3, a, b, cc)

	c.Pause(cc)
	wait.For(t, 30*time.Second, "A and B to count C down", func() bool { return sees([]int{a, b}, a, b) })
	n := c.Join()
	withN := agreed("A, B and N placing N", 4, a, b, n)
	ids := []string{c.Member(a).ID(), c.Member(b).ID(), c.Member(cc).ID(), c.Member(n).ID()}

	// The keys writable with A and N alone up: those whose set on the
	// placement with N is {A, B, N} (N took C's slot) or {A, C, N}.
	written := map[string][]int{} // key: its set with N, by index
	var tookC int
	for _, key := range keys {
		p, ok := c.Member(a).Placement(MajorityRegs.Name(), key, 0)
		if !ok || len(p.Replicas) != 3 {
			t.Fatalf("placement of %s: %+v", key, p)
		}
		var reps []int
		for _, m := range p.Replicas {
			reps = append(reps, slices.Index(ids, m.ID))
		}
		if slices.Contains(reps, a) && slices.Contains(reps, n) {
			written[key] = reps
			if !slices.Contains(reps, cc) {
				tookC++
			}
		}
	}
	if tookC == 0 {
		t.Fatalf("N took C's slot in none of %d keys' sets", len(keys))
	}

	// B cut off: the writes are acknowledged by A and N alone.
	c.Partition([]int{b}, []int{a, cc, n})
	wait.For(t, 30*time.Second, "A and N to count B down", func() bool { return sees([]int{a, n}, a, n) })
	for key := range written {
		set(a, key, 2)
		want[key] = 2
	}
	c.HealAll() // C stays paused
	wait.For(t, 30*time.Second, "A, B and N to see each other", func() bool { return sees([]int{a, b, n}, a, b, n) })

	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	if err := c.Member(n).Close(cctx); err != nil {
		t.Logf("N's Close: %v", err)
	}
	cancel()
	after := agreed("A and B placing N's departure", 3, a, b)

	c.Resume(cc)
	wait.For(t, 30*time.Second, "C on the placement after N's departure, its syncs done", func() bool {
		r := c.Member(cc).Replication()
		return r.PlacementVersion == after && r.Placed == 3 && c.Member(cc).Health().Ready
	})
	t.Logf("placement versions %d (A, B, C), %d (with N), %d (N gone); %d keys written while B was cut off, %d with N in C's slot; C pulled %d bytes syncing",
		before, withN, after, len(written), tookC, c.Member(cc).Replication().SyncBytes)
	c.Crash(a)

	for _, via := range []int{b, cc} {
		for _, key := range keys {
			var got int
			wait.For(t, 30*time.Second, fmt.Sprintf("a Read(Majority) of %s through member %d", key, via), func() bool {
				ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				v, err := casty.Call0(ctx, MajorityRegs.Ref(c.Member(via), key), (*Reg).Get)
				got = v
				return err == nil
			})
			if got != want[key] {
				stale("read %s through member %d = %d, want the last acknowledged %d (its set with N: %v; A, B, C, N are 0 to 3)", key, via, got, want[key], written[key])
			}
		}
	}
}
