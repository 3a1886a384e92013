package casty_test

import (
	"context"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// spareCluster starts three replicated members, writes once to a key the
// first owns through the second (the caller), and returns the three, the
// third being the spare (the key's replica no call from the caller
// needs), the key and a Ref to it through the caller.
func spareCluster(t *testing.T) (owner, caller, spare *casty.System, key string, ref casty.Ref[Tab]) {
	t.Helper()
	nodes := startReplicated(t, 3)
	owner, caller, spare = nodes[0], nodes[1], nodes[2]
	key = earlyKey(t, caller, owner)
	ref = Tabs.Ref(caller, key)
	if _, err := casty.Call(context.Background(), ref, (*Tab).Add, 1); err != nil {
		t.Fatal(err)
	}
	return owner, caller, spare, key, ref
}

// A hot key written from one of its replicas sends the third replica one
// delta for several commits (replica/SPEC.md, "Spare copies"), and once
// the writes stop the third replica holds the owner's last commit. Before,
// each commit went to it.
func TestAHotKeySendsItsSpareOneDeltaForSeveralCommits(t *testing.T) {
	owner, _, spare, key, ref := spareCluster(t)
	ctx := context.Background()
	received := casty.CountCommits(spare, Tabs.Name())
	const writes = 45
	for i := range writes {
		if _, err := casty.Call(ctx, ref, (*Tab).Add, i); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Second, "the spare holding the owner's last commit", func() bool { return sameCopy(owner, spare, key) })
	// Nine commits in a row carry a spare's due at most (spareCommits),
	// five for 45 writes (six with the first, when it follows the write
	// before by more than spareFlush); rounds slower than spareFlush on a
	// loaded machine send it more. Without spares it gets 45; so did a
	// run in eight before the spare's acknowledgement that came in one
	// batch with the deciding one was fed to the session (it never
	// learnt that the spare's copy holds the key).
	if n := received(); n > writes/2 {
		t.Fatalf("the spare received %d commits for %d writes, want at most %d", n, writes, writes/2)
	} else {
		t.Logf("the spare received %d commits for %d writes", n, writes)
	}
	if got, err := casty.Call0(ctx, Tabs.Ref(spare, key), (*Tab).Get); err != nil || got == 0 {
		t.Fatalf("reading through the spare: %d, %v", got, err)
	}
}

// A write whose answer rides to a caller's member that cannot vote (its
// replication is held, as a paused process's would be) does not wait for
// it: after spareFlush the owner sends the skipped spare its due, and its
// vote decides the round. Without that flush the round waited out
// Replication.Timeout and failed.
func TestAWriteDoesNotWaitForAStalledCallersMember(t *testing.T) {
	parallel(t)
	owner, caller, spare, key, ref := spareCluster(t)
	ctx := context.Background()
	// Only a hot actor skips its spare: the write below must follow the
	// first within spareFlush, here 300 ms.
	casty.SetSpares(owner, 8, 300*time.Millisecond)
	waitFor(t, 5*time.Second, "the spare holding the first commit", func() bool { return sameCopy(owner, spare, key) })
	release := casty.HoldReplication(caller)
	defer release()
	cctx, cancel := context.WithTimeout(ctx, time.Second) // Replication.Timeout is 2 s here
	defer cancel()
	start := time.Now()
	if n, err := casty.Call(cctx, ref, (*Tab).Add, 2); err != nil || n != 3 {
		t.Fatalf("a write while the caller's member takes no commit: %d, %v after %v", n, err, time.Since(start))
	}
	if !sameCopy(owner, spare, key) {
		t.Fatal("the write was acknowledged without the spare holding it")
	}
}

// A quiet actor's commit — one that does not follow the last within
// spareFlush — goes to its spare at once instead of owing it a flush
// spareFlush later: skipping pays only on a hot key. Before, the spare
// got this commit with the flush, spareFlush after it. The test's
// spareFlush is 5 s, so that "at once" has 4 s to show on a loaded
// machine and still cannot be the flush.
func TestAQuietActorsCommitGoesToItsSpareAtOnce(t *testing.T) {
	parallel(t)
	owner, _, spare, _, ref := spareCluster(t)
	ctx := context.Background()
	const flush = 5 * time.Second
	casty.SetSpares(owner, 8, flush)
	received := casty.CountCommits(spare, Tabs.Name())
	time.Sleep(flush + 100*time.Millisecond) // the actor goes quiet: the input, not a wait for convergence
	if _, err := casty.Call(ctx, ref, (*Tab).Add, 2); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	waitFor(t, flush-time.Second, "the spare receiving the quiet actor's commit", func() bool { return received() >= 1 })
	t.Logf("the spare received it %v after the call returned", time.Since(sent).Round(time.Millisecond))
}
