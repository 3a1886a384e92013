package casty_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/replica"
)

// TestGracefulLeaveHandsItsRangesOff: a member that closes gracefully
// stays to hand off what it holds. For a Write(One) kind the member that
// enters one of its ranges must hear every member of the range's previous
// set, leaver included (an acknowledged write may sit on the leaver
// alone), so without the handoff those keys could not activate again.
func TestGracefulLeaveHandsItsRangesOff(t *testing.T) {
	parallel(t)
	nodes := startReplicated(t, 4)
	ctx := context.Background()
	leaver, via := nodes[1], nodes[0]
	// Keys replicated on the leaver and not on via (on the leaver,
	// nodes[2] and nodes[3]), so via enters their range when the leaver
	// goes.
	var keys []string
	for i := 0; len(keys) < 5 && i < 10000; i++ {
		k := fmt.Sprintf("h%d", i)
		p, _ := via.Placement(LooseLedgers.Name(), k, 0)
		on := map[string]bool{}
		for _, m := range p.Replicas {
			on[m.Addr] = true
		}
		if on[leaver.Addr()] && !on[via.Addr()] {
			keys = append(keys, k)
		}
	}
	if len(keys) < 5 {
		t.Fatalf("found %d keys replicated on the leaver and not on via", len(keys))
	}
	for _, k := range keys {
		for i := 1; i <= 3; i++ {
			if n, err := casty.Call(ctx, LooseLedgers.Ref(via, k), (*Ledger).Add, 1); err != nil || n != i {
				t.Fatalf("%s add #%d: %d, %v", k, i, n, err)
			}
		}
	}
	// Another member of those sets stops answering replication for 3 s
	// around the leave: the syncs cannot finish before the leaver has
	// announced LEFT, so only a leaver that stays to hand off can help.
	release := casty.HoldReplication(nodes[2])
	defer release()
	closed := make(chan error, 1)
	go func() {
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		closed <- leaver.Close(cctx)
	}()
	var err error
	done := false
	select {
	case err = <-closed:
		done = true
	case <-time.After(3 * time.Second): // the fault's length, not a wait for convergence
	}
	release()
	if !done {
		err = <-closed
	}
	if err != nil {
		t.Fatalf("close: %v", err)
	}
	for _, k := range keys {
		got := callUntil(t, 10*time.Second, "adding to "+k+" after a graceful leave", func(ctx context.Context) (int, error) {
			return casty.Call(ctx, LooseLedgers.Ref(via, k), (*Ledger).Add, 1)
		})
		if got != 4 {
			t.Fatalf("%s after the leave = %d, want 4 (3 acknowledged adds + 1)", k, got)
		}
	}
}

// TestLeaveSyncsFromTheRangesPreviousSet: when a member leaves, the member
// that enters one of its ranges syncs the range from the set the range had
// before — the leaver and the two members that stay — not from the set the
// placement without the leaver would give, which holds a member that never
// replicated the range. The commit here sits on the leaver and on one
// member that is held up, so only the leaver, still answering during its
// handoff, can bring it to the member that takes over; a read quorum of
// the member that missed it and the new member must then see it.
func TestLeaveSyncsFromTheRangesPreviousSet(t *testing.T) {
	parallel(t)
	nodes := startReplicated(t, 5)
	ctx := context.Background()
	byAddr := map[string]*casty.System{}
	for _, n := range nodes {
		byAddr[n.Addr()] = n
	}
	leaver := nodes[1]
	var key string
	var a, b *casty.System
	for i := 0; i < 10000 && key == ""; i++ {
		k := fmt.Sprintf("p%d", i)
		p, _ := nodes[0].Placement(Ledgers.Name(), k, 0)
		if len(p.Replicas) == 3 && p.Replicas[0].Addr == leaver.Addr() {
			key, a, b = k, byAddr[p.Replicas[1].Addr], byAddr[p.Replicas[2].Addr]
		}
	}
	if key == "" {
		t.Fatal("no key owned by the leaver")
	}
	var via *casty.System
	for _, n := range nodes {
		if n != leaver && n != a && n != b {
			via = n
		}
	}
	for i := 1; i <= 5; i++ {
		if n, err := casty.Call(ctx, Ledgers.Ref(via, key), (*Ledger).Add, 1); err != nil || n != i {
			t.Fatalf("add #%d: %d, %v", i, n, err)
		}
	}
	waitFor(t, 10*time.Second, "every replica holding the last commit", func() bool {
		want, ok := casty.ReplicaState(leaver, Ledgers.Name(), key)
		for _, n := range []*casty.System{a, b} {
			got, has := casty.ReplicaState(n, Ledgers.Name(), key)
			ok = ok && has && got == want
		}
		return ok
	})
	// The commit now sits on the leaver and b only, and b answers nothing.
	casty.DropCopy(a, Ledgers.Name(), key)
	release := casty.HoldReplication(b)
	defer release()
	closed := make(chan error, 1)
	go func() {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		closed <- leaver.Close(cctx)
	}()
	got := callUntil(t, 20*time.Second, "reading after the leave", func(ctx context.Context) (int, error) {
		return casty.Call0(ctx, Ledgers.Ref(via, key), (*Ledger).Get)
	})
	if got != 5 {
		t.Fatalf("after the leave %s = %d, want the 5 acknowledged adds", key, got)
	}
	release()
	if err := <-closed; err != nil {
		t.Fatalf("close: %v", err)
	}
}

// TestALeaveIsAgreedByAMajority: a leaver leaves the placement only by a
// leave a majority of the placement accepted (agree.go). With one of the
// other two members holding its replication requests (where the
// placement's messages travel), the leaver and the third are a majority:
// the leave is chosen, and the leaver is on a placement without itself
// while that member still holds everything. With both others holding
// them, no majority answers and the leaver stays placed until they
// release.
func TestALeaveIsAgreedByAMajority(t *testing.T) {
	parallel(t)
	for _, held := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d-of-2-holding", held), func(t *testing.T) {
			nodes := startReplicated(t, 3)
			leaver := nodes[1]
			var releases []func()
			for _, n := range nodes {
				if n != leaver && len(releases) < held {
					releases = append(releases, casty.HoldReplication(n))
				}
			}
			release := func() {
				for _, r := range releases {
					r()
				}
				releases = nil
			}
			defer release()
			closed := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				closed <- leaver.Close(ctx)
			}()
			if held == 1 {
				waitFor(t, 10*time.Second, "the leaver on a placement without itself", func() bool {
					return casty.Placed(leaver) == len(nodes)-1
				})
			} else {
				// No majority: nothing the leaver or the one member
				// that answers does takes it out. Checked for a while
				// of real time; the leave needs one round trip once
				// a majority answers.
				deadline := time.Now().Add(time.Second)
				for time.Now().Before(deadline) {
					if casty.Placed(leaver) != len(nodes) {
						t.Fatal("the leave was chosen without a majority of the placement")
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			release()
			waitFor(t, 10*time.Second, "every member on a placement without the leaver", func() bool {
				for _, n := range nodes {
					if n != leaver && casty.Placed(n) != len(nodes)-1 {
						return false
					}
				}
				return true
			})
			if err := <-closed; err != nil {
				t.Fatalf("close: %v", err)
			}
		})
	}
}

// TestAMemberThatDoesNotAnswerHoldsUpOnlyItsOwnFactsPull: a member asked
// under a placement newer than its own pulls that placement's facts from
// the member that asked. A member that does not answer the pull (here it
// holds its replication requests, as a paused or overloaded one would)
// must not keep the news of every other member out meanwhile: the pull
// is one at a time per member, not one at a time in all. Before, the
// leaver of TestLeaveSyncsFromTheRangesPreviousSet, asked again and
// again by a member that held its requests, pulled from it alone for its
// whole handoff.
func TestAMemberThatDoesNotAnswerHoldsUpOnlyItsOwnFactsPull(t *testing.T) {
	parallel(t)
	nodes := startReplicated(t, 3)
	m, silent, other := nodes[0], nodes[1], nodes[2]
	release := casty.HoldReplication(silent)
	defer release()
	pulls := casty.CountFactsRequests(other)
	newer, err := (&replica.Msg{Op: replica.OpSync, Kind: Ledgers.Name(), Version: 1 << 40}).Append([]byte{'R'})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, from := range []*casty.System{silent, other} {
		b, err := casty.ReplicationRequest(ctx, from, m, newer)
		if err != nil {
			t.Fatal(err)
		}
		if r, err := replica.Decode(b[1:]); err != nil || r.Status != replica.StatusLagging {
			t.Fatalf("a sync of a placement %s has not adopted: %+v, %v; want it answered lagging", m.Addr(), r, err)
		}
	}
	// The silent member's pull lasts Replication.Timeout (2 s here).
	waitFor(t, time.Second, "the other member asked for its facts", func() bool { return pulls() > 0 })
}

// TestALeaveCutShortIsWaitedFor: two members of a key's replica set close
// while they answer no replication (their handoffs run out of time), and
// the third missed the key's last commit. The members that enter the
// key's range cannot sync it from the leavers, and once the leavers'
// processes are gone their copies were the only ones of the acknowledged
// writes. So the range waits for them, and every member reports it
// waiting, until an operator gives them up (AcceptLoss): no owner serves
// the key meanwhile, least of all without its writes. Before, a sync
// counted a departed leaver's copies out, so its read quorum shrank to
// the one member left: the range synced from an empty copy and the key
// read as if never written.
func TestALeaveCutShortIsWaitedFor(t *testing.T) {
	nodes := startReplicated(t, 5)
	ctx := context.Background()
	byAddr := map[string]*casty.System{}
	for _, n := range nodes {
		byAddr[n.Addr()] = n
	}
	l1, l2 := nodes[1], nodes[2]
	var key string
	var a *casty.System
	for i := 0; i < 10000 && key == ""; i++ {
		k := fmt.Sprintf("c%d", i)
		p, _ := nodes[0].Placement(Ledgers.Name(), k, 0)
		in := map[*casty.System]bool{}
		for _, r := range p.Replicas {
			in[byAddr[r.Addr]] = true
		}
		if len(p.Replicas) == 3 && in[l1] && in[l2] && !in[nodes[0]] {
			key = k
			for n := range in {
				if n != l1 && n != l2 {
					a = n
				}
			}
		}
	}
	if key == "" {
		t.Fatal("no key replicated on both leavers and not on nodes[0]")
	}
	via := nodes[0]
	for i := 1; i <= 5; i++ {
		if n, err := casty.Call(ctx, Ledgers.Ref(via, key), (*Ledger).Add, 1); err != nil || n != i {
			t.Fatalf("add #%d: %d, %v", i, n, err)
		}
	}
	waitFor(t, 10*time.Second, "every replica holding the last commit", func() bool {
		want, ok := casty.ReplicaState(l1, Ledgers.Name(), key)
		for _, n := range []*casty.System{l2, a} {
			got, has := casty.ReplicaState(n, Ledgers.Name(), key)
			ok = ok && has && got == want
		}
		return ok
	})
	// The commit sits on the two leavers only, which answer nothing.
	casty.DropCopy(a, Ledgers.Name(), key)
	for _, l := range []*casty.System{l1, l2} {
		release := casty.HoldReplication(l)
		defer release()
	}
	for _, l := range []*casty.System{l1, l2} {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_ = l.Close(cctx) // the handoff runs out of time: that is the point
		cancel()
	}
	rest := []*casty.System{nodes[0], nodes[3], nodes[4]}
	reported := func() bool {
		for _, n := range rest {
			for _, w := range n.Replication().Waiting {
				if w.Kind == Ledgers.Name() && slices.Contains(w.Members, l1.ID()) && slices.Contains(w.Members, l2.ID()) {
					return true
				}
			}
		}
		return false
	}
	// Until a member reports the wait, and a few reads after: each read
	// fails (the range waits) or sees the writes.
	deadline, after := time.Now().Add(30*time.Second), 3
	for after > 0 {
		if time.Now().After(deadline) {
			t.Fatal("no member reports syncs that wait for both leavers")
		}
		if reported() {
			after--
		}
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		n, err := casty.Call0(cctx, Ledgers.Ref(via, key), (*Ledger).Get)
		cancel()
		if err == nil && n != 5 {
			t.Fatalf("read %d after the leavers left with their handoffs cut short, want 5 or a failure (the range waits for their copies)", n)
		}
		if err != nil {
			time.Sleep(50 * time.Millisecond) // a read that failed at once: not in a tight loop
		}
	}
	// The member asked may place the leavers' departure a moment after
	// the others (ErrNotRemoved until then).
	var lossErr error
	waitFor(t, 20*time.Second, "AcceptLoss of the leavers", func() bool {
		lossErr = a.AcceptLoss(ctx, l1.ID(), l2.ID())
		return !errors.Is(lossErr, casty.ErrNotRemoved)
	})
	if lossErr != nil {
		t.Fatalf("AcceptLoss of the leavers: %v", lossErr)
	}
	callUntil(t, 20*time.Second, "reading once the leavers' copies are given up", func(ctx context.Context) (int, error) {
		return casty.Call0(ctx, Ledgers.Ref(via, key), (*Ledger).Get)
	})
}
