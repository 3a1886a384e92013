package casty_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// Ledger is a replicated counter.
type Ledger struct {
	N    int
	Hist []int
}

func (c *Ledger) Add(_ context.Context, d int) (int, error) {
	c.N += d
	c.Hist = append(c.Hist, c.N)
	return c.N, nil
}

func (c *Ledger) Get(context.Context) (int, error) { return c.N, nil }

var (
	Ledgers       = casty.Actor[Ledger](casty.Name("test.Ledger"), casty.Replicas(3), casty.Write(casty.Majority), casty.Read(casty.Majority))
	LooseLedgers  = casty.Actor[Ledger](casty.Name("test.LooseLedger"), casty.Replicas(3), casty.Write(casty.One))
	SingleLedgers = casty.Actor[Ledger](casty.Name("test.SingleLedger"))
)

func replicationConfig() casty.Config {
	c := fastCluster()
	c.Replication.Timeout = 2 * time.Second
	c.Replication.RemoveDeadAfter = time.Hour
	return c
}

// startReplicated starts n members and waits until each has synced what
// it replicates.
func startReplicated(t *testing.T, n int, opts ...casty.Option) []*casty.System {
	t.Helper()
	nodes := startCluster(t, n, append([]casty.Option{casty.WithConfig(replicationConfig())}, opts...)...)
	waitFor(t, 15*time.Second, "every member synced", func() bool {
		for _, s := range nodes {
			if !casty.Settled(s, n) {
				return false
			}
		}
		return true
	})
	return nodes
}

// callUntil retries f until it succeeds or the deadline passes (a call
// may fail while the membership settles after a crash).
func callUntil[R any](t *testing.T, d time.Duration, what string, f func(ctx context.Context) (R, error)) R {
	t.Helper()
	deadline := time.Now().Add(d)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		r, err := f(ctx)
		cancel()
		if err == nil {
			return r
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: still failing after %v: %v", what, d, last)
	panic("unreachable")
}

// discard ends a test's cluster at once, each member as a killed process
// stops, once the test has checked what it is for. A test that crashed a
// replica leaves the crashed member placed (RemoveDeadAfter), and closing
// its survivors waits for it: a leaver's handoff up to HandoffTimeout, the
// agreement of the last one's leave up to DrainTimeout or
// Replication.Timeout, 15 to 30 s of an idle test.
// TestReplicatedStateSurvivesItsOwnersCrash keeps closing them, as the
// other tests' cleanups do, and so checks that such a Close still ends
// without an error. The close tests, whose point is one member's Close,
// discard the others too: each of their Closes lingers a second for its
// LEFT record to spread.
func discard(nodes []*casty.System) {
	for _, n := range nodes {
		casty.Crash(n)
	}
}

// TestReplicatedStateSurvivesItsOwnersCrash: acknowledged writes of a
// Replicas(3), Write(Majority) actor are all there after its owner dies
// without a goodbye, when the next call activates it on another member.
// Its cleanup closes the survivors of the crash (discard does not).
func TestReplicatedStateSurvivesItsOwnersCrash(t *testing.T) {
	parallel(t)
	nodes := startReplicated(t, 3)
	ctx := context.Background()
	var owner *casty.System
	for _, n := range nodes {
		if m, ok := nodes[0].OwnerOf(Ledgers.Name(), "t1"); ok && m.Addr == n.Addr() {
			owner = n
		}
	}
	if owner == nil {
		t.Fatal("no owner for t1")
	}
	var via *casty.System
	for _, n := range nodes {
		if n != owner {
			via = n
		}
	}
	for i := 1; i <= 10; i++ {
		n, err := casty.Call(ctx, Ledgers.Ref(via, "t1"), (*Ledger).Add, 1)
		if err != nil || n != i {
			t.Fatalf("add #%d: %d, %v", i, n, err)
		}
	}
	casty.Crash(owner)
	got := callUntil(t, 20*time.Second, "reading t1 after its owner crashed", func(ctx context.Context) (int, error) {
		return casty.Call0(ctx, Ledgers.Ref(via, "t1"), (*Ledger).Get)
	})
	if got != 10 {
		t.Fatalf("after the owner's crash t1 = %d, want the 10 acknowledged adds", got)
	}
	st, ok, err := Ledgers.StateOf(ctx, via, "t1")
	if err != nil || !ok || len(st.Hist) != 10 {
		t.Fatalf("state after failover: %+v ok=%v err=%v", st, ok, err)
	}
}

// TestQuorumCountedAgainstConfiguredReplicas: on a one-member cluster a
// Replicas(3) kind needing a majority cannot commit; with Write(One) it
// can.
func TestQuorumCountedAgainstConfiguredReplicas(t *testing.T) {
	nodes := startReplicated(t, 1)
	ctx := context.Background()
	_, err := casty.Call(ctx, Ledgers.Ref(nodes[0], "q"), (*Ledger).Add, 1)
	if !errors.Is(err, casty.ErrQuorumUnavailable) {
		t.Fatalf("Replicas(3), Write(Majority) on one member: %v, want ErrQuorumUnavailable", err)
	}
	if n, err := casty.Call(ctx, LooseLedgers.Ref(nodes[0], "q"), (*Ledger).Add, 1); err != nil || n != 1 {
		t.Fatalf("Replicas(3), Write(One) on one member: %d, %v", n, err)
	}
}

// Fickle fails after changing its state.
type Fickle struct{ N int }

func (f *Fickle) Add(_ context.Context, d int) (int, error) { f.N += d; return f.N, nil }
func (f *Fickle) AddThenFail(_ context.Context, d int) error {
	f.N += d
	return errors.New("changed, then failed")
}
func (f *Fickle) Get(context.Context) (int, error) { return f.N, nil }

var (
	KeptFickles  = casty.Actor[Fickle](casty.Name("test.KeptFickle"), casty.Replicas(3), casty.Write(casty.Majority))
	ResetFickles = casty.Actor[Fickle](casty.Name("test.ResetFickle"), casty.Replicas(3), casty.Write(casty.Majority),
		casty.Supervise(func(string, string, error, casty.Failure) casty.Directive { return casty.Reset }))
)

// TestKeepCommitsAFailedHandlersChanges: under the supervisor's Keep the
// owner keeps what a failed handler changed, so its replicas get it too: a
// new owner after a crash sees it.
func TestKeepCommitsAFailedHandlersChanges(t *testing.T) {
	nodes := startReplicated(t, 3)
	ctx := context.Background()
	owner, via := ownerAndOther(t, nodes, KeptFickles.Name(), "k")
	if _, err := casty.Call(ctx, KeptFickles.Ref(via, "k"), (*Fickle).Add, 1); err != nil {
		t.Fatal(err)
	}
	var fe *casty.ActorFailedError
	if err := casty.Do(ctx, KeptFickles.Ref(via, "k"), (*Fickle).AddThenFail, 10); !errors.As(err, &fe) {
		t.Fatalf("failing handler: %v", err)
	}
	casty.Crash(owner)
	got := callUntil(t, 20*time.Second, "reading k after its owner crashed", func(ctx context.Context) (int, error) {
		return casty.Call0(ctx, KeptFickles.Ref(via, "k"), (*Fickle).Get)
	})
	if got != 11 {
		t.Fatalf("after a failed handler under Keep and a crash: %d, want 11 (its change committed)", got)
	}
	discard(nodes)
}

// TestResetReloadsTheLastCommittedState: under Reset, what a failed
// handler changed is discarded, and the next activation restores the last
// committed state from the replicas.
func TestResetReloadsTheLastCommittedState(t *testing.T) {
	nodes := startReplicated(t, 3)
	ctx := context.Background()
	_, via := ownerAndOther(t, nodes, ResetFickles.Name(), "r")
	if _, err := casty.Call(ctx, ResetFickles.Ref(via, "r"), (*Fickle).Add, 5); err != nil {
		t.Fatal(err)
	}
	if err := casty.Do(ctx, ResetFickles.Ref(via, "r"), (*Fickle).AddThenFail, 100); err == nil {
		t.Fatal("the failing handler succeeded")
	}
	got := callUntil(t, 10*time.Second, "reading r after the reset", func(ctx context.Context) (int, error) {
		return casty.Call0(ctx, ResetFickles.Ref(via, "r"), (*Fickle).Get)
	})
	if got != 5 {
		t.Fatalf("after Reset: %d, want the committed 5 (not the failed handler's 105, nor a fresh 0)", got)
	}
}

// Forgettable can delete its replicated state.
type Forgettable struct{ N int }

func (f *Forgettable) Add(_ context.Context, d int) (int, error) { f.N += d; return f.N, nil }
func (f *Forgettable) Forget(ctx context.Context) (bool, error) {
	return casty.Self(ctx).DeleteState(), nil
}

var (
	Forgettables      = casty.Actor[Forgettable](casty.Name("test.Forgettable"), casty.Replicas(3), casty.Write(casty.Majority))
	LocalForgettables = casty.Actor[Forgettable](casty.Name("test.LocalForgettable"))
)

// TestDeleteStateStaysDeletedThroughAFailover: a deleted actor starts from
// zero on its next call, also after its owner crashes (no replica brings
// the old state back).
func TestDeleteStateStaysDeletedThroughAFailover(t *testing.T) {
	nodes := startReplicated(t, 3)
	ctx := context.Background()
	owner, via := ownerAndOther(t, nodes, Forgettables.Name(), "f")
	if _, err := casty.Call(ctx, Forgettables.Ref(via, "f"), (*Forgettable).Add, 7); err != nil {
		t.Fatal(err)
	}
	if ok, err := casty.Call0(ctx, Forgettables.Ref(via, "f"), (*Forgettable).Forget); err != nil || !ok {
		t.Fatalf("DeleteState: %v, %v", ok, err)
	}
	casty.Crash(owner)
	n := callUntil(t, 20*time.Second, "adding to the deleted actor after a failover", func(ctx context.Context) (int, error) {
		return casty.Call(ctx, Forgettables.Ref(via, "f"), (*Forgettable).Add, 1)
	})
	if n != 1 {
		t.Fatalf("after DeleteState and a failover: %d, want 1 (a fresh state)", n)
	}
	// Replicas(1) keeps nothing to delete.
	if ok, err := casty.Call0(ctx, LocalForgettables.Ref(via, "g"), (*Forgettable).Forget); err != nil || ok {
		t.Fatalf("DeleteState on a Replicas(1) kind: %v, %v; want false", ok, err)
	}
	discard(nodes)
}
