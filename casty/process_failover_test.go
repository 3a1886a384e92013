package casty_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// TestFailoverOfAKilledOrStoppedProcess measures, with members in separate
// processes under the default Config, how long a key of a Replicas(3),
// Write(Majority) kind is unavailable after its owner's process is killed
// (SIGKILL: the host lives, the kernel resets its connections) or stopped
// (SIGSTOP: its sockets stay open and it answers nothing, as a hung or
// vanished host): the time from the signal to the first successful write
// through a lite member, which must carry on from the last acknowledged
// state. One trial of each by default; with CASTY_FIGURES=1, 50 kills and
// 20 stops, the figures in BENCHMARKS.md (CASTY_FIGURES=1 go test -run
// TestFailoverOfAKilledOrStoppedProcess -count 1 -v ./casty/, without
// -race).
func TestFailoverOfAKilledOrStoppedProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes; skipped with -short")
	}
	kills, stops := 1, 1
	if os.Getenv("CASTY_FIGURES") != "" {
		kills, stops = 50, 20
	}
	suspicion := casty.DefaultConfig().Membership.SuspicionTimeout
	for _, c := range []struct {
		name   string
		sig    syscall.Signal
		trials int
		limit  time.Duration // no trial may take longer
	}{
		// The reset connections prompt a probe: no trial waits for the
		// suspicion timeout.
		{"SIGKILL", syscall.SIGKILL, kills, suspicion},
		// The stopped member answers no keepalive: it is suspected
		// KeepAliveInterval + KeepAliveTimeout after it stopped at most,
		// and its keys move then.
		{"SIGSTOP", syscall.SIGSTOP, stops, suspicion + time.Second},
	} {
		var took []time.Duration
		for trial := range c.trials {
			t.Run(fmt.Sprintf("%s-%d", c.name, trial), func(t *testing.T) {
				took = append(took, processFailoverTrial(t, c.sig, fmt.Sprintf("pf%d", trial)))
			})
		}
		if len(took) < c.trials {
			return // a trial failed
		}
		slices.Sort(took)
		pct := func(p float64) time.Duration { return took[min(len(took)-1, int(p*float64(len(took))))] }
		t.Logf("failover after %s of the owner's process, %d trials: p50 %v, p99 %v, max %v (suspicion timeout %v)",
			c.name, len(took), pct(0.50).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), suspicion)
		if worst := took[len(took)-1]; worst > c.limit {
			t.Errorf("after %s a key was unavailable for %v, more than %v", c.name, worst, c.limit)
		}
	}
}

// processFailoverTrial starts three child members and a lite member,
// writes to key, sends sig to the key's owner and returns the time until
// a write through the lite member succeeds again.
func processFailoverTrial(t *testing.T, sig syscall.Signal, key string) time.Duration {
	members, lite := startProcCluster(t, 3, "default")
	owner := procOwning(t, members, lite, Ledgers.Name(), key)
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		n, err := casty.Call(cctx, Ledgers.Ref(lite, key), (*Ledger).Add, 1)
		cancel()
		if err != nil || n != i {
			t.Fatalf("add #%d: %d, %v", i, n, err)
		}
	}
	owner.signal(t, sig)
	start := time.Now()
	if sig == syscall.SIGSTOP {
		// kill(2) returns before the target stops; a call answered in
		// that window would time nothing.
		waitFor(t, 5*time.Second, "the owner's process stopped", owner.stopped)
	}
	var seen []string // each distinct failure, when first seen (for a failure's report)
	for failed := 0; ; failed++ {
		// Each attempt may take the default CallTimeout, as a caller's
		// would: an attempt stuck on the stopped member must be released
		// when the view moves, not by its deadline.
		n, err := casty.Call(ctx, Ledgers.Ref(lite, key), (*Ledger).Add, 1)
		if err == nil {
			// A failed attempt may have been applied (indeterminate),
			// never an acknowledged one lost.
			if n < 4 || n > 4+failed {
				t.Fatalf("after the failover %s = %d, want 4 (3 acknowledged adds + 1) plus at most %d failed attempts", key, n, failed)
			}
			return time.Since(start)
		}
		if why := fmt.Sprintf("%v", err); !slices.ContainsFunc(seen, func(s string) bool { return strings.HasSuffix(s, why) }) {
			seen = append(seen, fmt.Sprintf("at %v: %s", time.Since(start).Round(time.Millisecond), why))
		}
		if time.Since(start) > 60*time.Second {
			m, _ := lite.OwnerOf(Ledgers.Name(), key)
			t.Fatalf("%s still unavailable 60 s after %v of its owner %s: %v\nthe lite member sees %v, owner %v\nfailures:\n%s",
				key, sig, owner.addr, err, lite.Members(), m, strings.Join(seen, "\n"))
		}
		time.Sleep(5 * time.Millisecond) // between attempts; the clock runs from the signal
	}
}

// TestDurableActorResumesAfterItsProcessIsKilled: the owner of a durable
// actor (Replicas(3), never idle) is killed with SIGKILL; another member
// activates it again without any call, with its last acknowledged state,
// as seen from a lite member that only looks (StateOf never activates).
func TestDurableActorResumesAfterItsProcessIsKilled(t *testing.T) {
	parallel(t)
	if testing.Short() {
		t.Skip("starts child processes; skipped with -short")
	}
	members, lite := startProcCluster(t, 4, "fast")
	const key = "proc-sentinel"
	owner := procOwning(t, members, lite, Sentinels.Name(), key)
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		n := callUntil(t, 10*time.Second, "beat", func(ctx context.Context) (int, error) {
			return casty.Call0(ctx, Sentinels.Ref(lite, key), (*Sentinel).Beat)
		})
		if n != i {
			t.Fatalf("beat %d: %d", i, n)
		}
	}
	owner.signal(t, syscall.SIGKILL)
	<-owner.exited
	var st Sentinel
	waitFor(t, 30*time.Second, key+" active again on a surviving process, with no call", func() bool {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if m, ok := lite.OwnerOf(Sentinels.Name(), key); !ok || m.Addr == owner.addr {
			return false
		}
		s, ok, err := Sentinels.StateOf(cctx, lite, key)
		st = s
		// StateOf may read the new activation before its Activate hook
		// has run (Lives still 1): wait for the hook.
		return err == nil && ok && s.Lives >= 2
	})
	if st.Beats != 3 || st.Lives != 2 {
		t.Fatalf("resumed with %+v, want 3 beats and a second Activate", st)
	}
}

// TestRollingRestartOfProcessesLosesNothing is TestRollingRestartLosesNothing
// with every member in its own process: each in turn gets SIGTERM (a
// graceful Close with handoff), exits, and a new process joins in its
// place, while callers on a lite member in this process keep adding to
// Replicas(3), Write(Majority) counters. No call may fail except
// indeterminately (counted), and no acknowledged add may be lost.
func TestRollingRestartOfProcessesLosesNothing(t *testing.T) {
	parallel(t)
	if testing.Short() {
		t.Skip("starts child processes; skipped with -short")
	}
	const n, keys, callers = 5, 40, 4
	live, lite := startProcCluster(t, n, "fast")
	load := startAddLoad(t, lite, callers, keys)
	start := time.Now()
	for i := range n {
		old := live[0]
		old.signal(t, syscall.SIGTERM)
		select {
		case <-old.exited:
		case <-time.After(90 * time.Second):
			t.Fatalf("restart %d: member %s did not exit within 90 s of SIGTERM", i, old.addr)
		}
		old.mu.Lock()
		closed := old.closed
		old.mu.Unlock()
		if closed != "CLOSED <nil>" {
			t.Errorf("restart %d: member %s closed with %q", i, old.addr, closed)
		}
		fresh := startProcMember(t, []string{live[1].addr}, "fast")
		live = append(live[1:], fresh)
		waitProcSettled(t, live, lite, n)
	}
	took := time.Since(start)
	load.stop()
	lost := load.verify(t, lite)
	t.Logf("rolling restart of %d member processes in %v under %d callers: %s, %d acknowledged adds lost",
		n, took.Round(time.Millisecond), callers, load, lost)
}

// TestJoinerTakesOverAndOldReplicasDropProcesses: with members in separate
// processes, a fourth member joins three that hold Replicas(3) counters;
// it takes its share of the copies, the others drop the copies of the
// ranges they left (anti-entropy's pruning), and every counter reads what
// was acknowledged.
func TestJoinerTakesOverAndOldReplicasDropProcesses(t *testing.T) {
	parallel(t)
	if testing.Short() {
		t.Skip("starts child processes; skipped with -short")
	}
	const keys = 60
	members, lite := startProcCluster(t, 3, "fast")
	for i := range keys {
		n := callUntil(t, 10*time.Second, "add", func(ctx context.Context) (int, error) {
			return casty.Call(ctx, Ledgers.Ref(lite, fmt.Sprint("join", i)), (*Ledger).Add, i+1)
		})
		if n != i+1 {
			t.Fatalf("join%d = %d, want %d", i, n, i+1)
		}
	}
	for _, p := range members {
		waitFor(t, 30*time.Second, "every member holds every copy (3 members, Replicas(3))", func() bool {
			_, _, held := p.state()
			return held >= keys
		})
	}
	joiner := startProcMember(t, []string{members[0].addr}, "fast")
	all := append(members, joiner)
	waitProcSettled(t, all, lite, 4)
	waitFor(t, 30*time.Second, "the joiner holds its share", func() bool {
		_, _, held := joiner.state()
		return held > 0
	})
	// Pruning runs with anti-entropy (RepairInterval, 1 s in the child
	// members): each old member drops the copies of the ranges the joiner
	// took from it.
	for _, p := range members {
		waitFor(t, 60*time.Second, "an old member drops the copies of the ranges it left", func() bool {
			_, _, held := p.state()
			return held < keys
		})
	}
	for i := range keys {
		n := callUntil(t, 10*time.Second, "read", func(ctx context.Context) (int, error) {
			return casty.Call0(ctx, Ledgers.Ref(lite, fmt.Sprint("join", i)), (*Ledger).Get)
		})
		if n != i+1 {
			t.Fatalf("after the join, join%d = %d, want %d", i, n, i+1)
		}
	}
}

// TestDeletedStateStaysDeletedThroughAProcessKill: an actor deletes its
// replicated state (Self(ctx).DeleteState), then its owner's process is
// killed; the next call, served by another process, starts from zero.
func TestDeletedStateStaysDeletedThroughAProcessKill(t *testing.T) {
	parallel(t)
	if testing.Short() {
		t.Skip("starts child processes; skipped with -short")
	}
	members, lite := startProcCluster(t, 3, "fast")
	const key = "proc-forget"
	owner := procOwning(t, members, lite, Forgettables.Name(), key)
	ctx := context.Background()
	if _, err := casty.Call(ctx, Forgettables.Ref(lite, key), (*Forgettable).Add, 7); err != nil {
		t.Fatal(err)
	}
	if ok, err := casty.Call0(ctx, Forgettables.Ref(lite, key), (*Forgettable).Forget); err != nil || !ok {
		t.Fatalf("DeleteState: %v, %v", ok, err)
	}
	owner.signal(t, syscall.SIGKILL)
	<-owner.exited
	n := callUntil(t, 30*time.Second, "adding to the deleted actor after its owner was killed", func(ctx context.Context) (int, error) {
		if m, ok := lite.OwnerOf(Forgettables.Name(), key); !ok || m.Addr == owner.addr {
			return 0, fmt.Errorf("still routed to the killed owner")
		}
		return casty.Call(ctx, Forgettables.Ref(lite, key), (*Forgettable).Add, 1)
	})
	if n != 1 {
		t.Fatalf("after DeleteState and a kill: %d, want 1 (a fresh state)", n)
	}
}
