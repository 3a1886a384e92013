package castytest_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
	"github.com/casty-go/casty/internal/wait"
)

// Tally is a replicated counter: three replicas, majority writes and
// reads (a read through a deposed owner fails instead of answering what it
// last held).
type Tally struct{ N int }

func (t *Tally) Add(ctx context.Context, d int) (int, error) { t.N += d; return t.N, nil }

func (t *Tally) Get(ctx context.Context) (int, error) { return t.N, nil }

var Tallies = casty.Actor[Tally](casty.Name("castytest.test.Tally"), casty.Replicas(3), casty.Write(casty.Majority), casty.Read(casty.Majority))

// Five members start, see each other, serve calls and stop within the
// test's cleanup.
func TestClusterStartsAndServes(t *testing.T) {
	start := time.Now()
	c := castytest.NewCluster(t, 5)
	t.Logf("started in %v", time.Since(start))
	if len(c.Members()) != 5 {
		t.Fatalf("%d members", len(c.Members()))
	}
	ctx := context.Background()
	for i := range 5 {
		n, err := casty.Call(ctx, Tallies.Ref(c.Member(i), "k"), (*Tally).Add, 1)
		if err != nil || n != i+1 {
			t.Fatalf("add through member %d: %d, %v", i, n, err)
		}
	}
	if n, err := casty.Call0(ctx, Tallies.Ref(c.Lite(), "k"), (*Tally).Get); err != nil || n != 5 {
		t.Fatalf("get through the lite member: %d, %v", n, err)
	}
}

// indexOf is the index of the member at addr.
func indexOf(t *testing.T, c *castytest.Cluster, addr string) int {
	t.Helper()
	for i := range c.N() {
		if c.Addr(i) == addr {
			return i
		}
	}
	t.Fatalf("no member at %s", addr)
	return -1
}

// ownerIndex is the index of the member that serves key of Tallies, as
// every member sees it.
func ownerIndex(t *testing.T, c *castytest.Cluster, key string) int {
	t.Helper()
	m, ok := c.Member(0).OwnerOf(Tallies.Name(), key)
	if !ok {
		t.Fatalf("no owner of %s", key)
	}
	return indexOf(t, c, m.Addr)
}

// addUntil adds 1 to key through sys until a call succeeds, within 20 s;
// it returns the new value and how many attempts failed (each may have
// been applied: their errors are indeterminate).
func addUntil(t *testing.T, sys *casty.System, key string) (n, failed int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		n, err := casty.Call(ctx, Tallies.Ref(sys, key), (*Tally).Add, 1)
		cancel()
		if err == nil {
			return n, failed
		}
		switch {
		case errors.Is(err, casty.ErrRangeMoving), errors.Is(err, casty.ErrNoReadQuorum):
			// Refused while the key changes hands, or its owner could not
			// activate it yet: it did not run.
		case !castytest.Indeterminate(err):
			t.Fatalf("add to %s: %v, which says it did not run", key, err)
		default:
			failed++
		}
		if time.Now().After(deadline) {
			t.Fatalf("add to %s still failing after 20 s: %v", key, err)
		}
	}
}

// addN adds 1 to key through sys n times, each of which must succeed.
func addN(t *testing.T, sys *casty.System, key string, n int) int {
	t.Helper()
	var v int
	for range n {
		var err error
		if v, err = casty.Call(context.Background(), Tallies.Ref(sys, key), (*Tally).Add, 1); err != nil {
			t.Fatalf("add to %s: %v", key, err)
		}
	}
	return v
}

// seesAll reports whether every one of systems sees exactly want members.
func seesAll(systems []*casty.System, want int) bool {
	for _, s := range systems {
		if len(s.Members()) != want {
			return false
		}
	}
	return true
}

// A member cut off from the four others cannot write a Replicas(3),
// Write(Majority) key (it holds at most one replica), while the majority
// side can; once healed, it rejoins and sees every acknowledged write.
func TestClusterPartitionAndHeal(t *testing.T) {
	c := castytest.NewCluster(t, 5)
	const key = "split"
	acked := addN(t, c.Member(1), key, 3)
	c.Partition([]int{0}, []int{1, 2, 3, 4})

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_, err := casty.Call(ctx, Tallies.Ref(c.Member(0), key), (*Tally).Add, 1)
	cancel()
	if err == nil {
		t.Fatal("an add through the isolated member succeeded: it reached a majority across the cut")
	}
	// It either never ran (the isolated owner found no read quorum to
	// activate from) or its outcome is unknown (timed out in its round).
	lost := 0
	switch {
	case castytest.Indeterminate(err):
		lost = 1
	case !errors.Is(err, casty.ErrQuorumUnavailable):
		t.Fatalf("add across the cut: %v, want a timeout or unavailability", err)
	}
	n, failed := addUntil(t, c.Member(1), key)
	if n < acked+1 || n > acked+1+lost+failed {
		t.Fatalf("the majority side's add returned %d, want %d plus at most %d indeterminate adds", n, acked+1, lost+failed)
	}
	acked, lost = n, lost+failed
	wait.For(t, 20*time.Second, "the majority side to stop counting the isolated member alive", func() bool {
		return seesAll(c.Members()[1:], 4)
	})

	c.HealAll()
	wait.For(t, 20*time.Second, "the healed member and the others to see all 5", func() bool {
		return seesAll(c.Members(), 5)
	})
	n, failed = addUntil(t, c.Member(0), key)
	if n < acked+1 || n > acked+1+lost+failed {
		t.Fatalf("after healing, an add through the isolated member returned %d, want %d plus at most %d indeterminate adds", n, acked+1, lost+failed)
	}
}

// The owner of a replicated key crashes; another member serves the key
// with its replicated state, and so does a lite member.
func TestClusterCrashFailsOver(t *testing.T) {
	c := castytest.NewCluster(t, 5)
	const key = "crash"
	owner := ownerIndex(t, c, key)
	via := c.Member((owner + 1) % c.N())
	acked := addN(t, via, key, 3)
	c.Crash(owner)
	n, failed := addUntil(t, via, key)
	if n < acked+1 || n > acked+1+failed {
		t.Fatalf("after the owner's crash, add returned %d, want %d plus at most %d indeterminate adds", n, acked+1, failed)
	}
	if m, ok := via.OwnerOf(Tallies.Name(), key); !ok || m.Addr == c.Addr(owner) {
		t.Fatalf("the key's owner is still the crashed member (%v, %v)", m, ok)
	}
	got, err := casty.Call0(context.Background(), Tallies.Ref(c.Lite(), key), (*Tally).Get)
	if err != nil || got != n {
		t.Fatalf("get through the lite member: %d, %v; want %d", got, err, n)
	}
}

// A paused owner is suspected and loses its key to another replica; once
// resumed it rejoins, and the key has kept every acknowledged write.
func TestClusterPauseAndResume(t *testing.T) {
	c := castytest.NewCluster(t, 5)
	const key = "pause"
	owner := ownerIndex(t, c, key)
	via := c.Member((owner + 1) % c.N())
	acked := addN(t, via, key, 2)
	paused := c.Member(owner).ID()
	c.Pause(owner)
	wait.For(t, 20*time.Second, "the others to stop counting the paused member alive", func() bool {
		for i, s := range c.Members() {
			if i == owner {
				continue
			}
			for _, m := range s.Members() {
				if m.ID == paused {
					return false
				}
			}
		}
		return true
	})
	n, failed := addUntil(t, via, key)
	if n < acked+1 || n > acked+1+failed {
		t.Fatalf("with the owner paused, add returned %d, want %d plus at most %d indeterminate adds", n, acked+1, failed)
	}
	c.Resume(owner)
	wait.For(t, 20*time.Second, "the resumed member and the others to see all 5", func() bool {
		return seesAll(c.Members(), 5)
	})
	got, failed2 := addUntil(t, c.Member(owner), key)
	if got < n+1 || got > n+1+failed2 {
		t.Fatalf("through the resumed member, add returned %d, want %d plus at most %d indeterminate adds", got, n+1, failed2)
	}
}

// A paused owner loses its key to another replica, which writes; resumed,
// the old owner still holds its activation under the old ballot. A
// Read(Majority) call through it is fenced at its confirm (a newer owner
// exists) — the read changed nothing anywhere, so it is run again, on an
// activation restored from the replicas, and answers the newer owner's
// write on the first call.
func TestClusterReadThroughADeposedOwnerIsAnswered(t *testing.T) {
	c := castytest.NewCluster(t, 3)
	const key = "deposed"
	owner := ownerIndex(t, c, key)
	via := c.Member((owner + 1) % c.N())
	addN(t, c.Member(owner), key, 2) // active on the owner
	paused := c.Member(owner).ID()
	c.Pause(owner)
	wait.For(t, 20*time.Second, "the others to stop counting the paused member alive", func() bool {
		for i, s := range c.Members() {
			if i != owner && slices.ContainsFunc(s.Members(), func(m casty.Member) bool { return m.ID == paused }) {
				return false
			}
		}
		return true
	})
	n, _ := addUntil(t, via, key)
	c.Resume(owner)
	wait.For(t, 20*time.Second, "the resumed member and the others to see all 3", func() bool {
		return seesAll(c.Members(), 3)
	})
	got, err := casty.Call0(context.Background(), Tallies.Ref(c.Member(owner), key), (*Tally).Get)
	if err != nil || got != n {
		t.Fatalf("a read through the resumed owner: %d, %v; want %d", got, err, n)
	}
}

// A restarted member comes back at the same address with a new identity
// and no state; the cluster forgets the old one and serves keys through
// the new one.
func TestClusterRestartRejoinsWithANewIdentity(t *testing.T) {
	c := castytest.NewCluster(t, 5)
	const key = "restart"
	acked := addN(t, c.Member(0), key, 2)
	old := c.Member(2).ID()
	sys := c.Restart(2)
	if sys.ID() == old {
		t.Fatalf("restarted with the same identity %s", old)
	}
	if sys.Addr() != c.Addr(2) || c.Member(2) != sys {
		t.Fatalf("restarted at %s, member 2 is %v; want %s and the new system", sys.Addr(), c.Member(2), c.Addr(2))
	}
	wait.For(t, 20*time.Second, "every member to see 5, the old identity gone", func() bool {
		for _, s := range c.Members() {
			ms := s.Members()
			if len(ms) != 5 || slices.ContainsFunc(ms, func(m casty.Member) bool { return m.ID == old }) {
				return false
			}
		}
		return true
	})
	n, failed := addUntil(t, sys, key)
	if n < acked+1 || n > acked+1+failed {
		t.Fatalf("through the restarted member, add returned %d, want %d plus at most %d indeterminate adds", n, acked+1, failed)
	}
}

// A member Join adds is a newcomer at an address of its own, under the
// next index: every member places it, it serves calls, and a key it now
// holds kept what was written before it came. The lite member, started
// before the join, is node N() in the link methods still: cutting N() off
// cuts the lite member's calls, not the newcomer's.
func TestClusterJoinAddsAMember(t *testing.T) {
	c := castytest.NewCluster(t, 3)
	lite := c.Lite()
	keys := []string{"join-a", "join-b", "join-c", "join-d", "join-e", "join-f", "join-g", "join-h"}
	for _, key := range keys {
		addN(t, c.Member(0), key, 2)
	}
	i := c.Join()
	if i != 3 || c.N() != 4 {
		t.Fatalf("Join returned %d, N() = %d; want 3 and 4", i, c.N())
	}
	sys := c.Member(i)
	if sys == nil || sys.Addr() != c.Addr(i) || !sys.Health().Ready {
		t.Fatalf("member %d is %v at %s, want a ready member at %s", i, sys, sys.Addr(), c.Addr(i))
	}
	for j := range i {
		if c.Addr(j) == sys.Addr() || c.Member(j).ID() == sys.ID() {
			t.Fatalf("the newcomer shares member %d's address or identity", j)
		}
	}
	wait.For(t, 20*time.Second, "every member to see and place all 4", func() bool {
		for _, m := range c.Members() {
			if len(m.Members()) != 4 || m.Replication().Placed != 4 || !m.Health().Ready {
				return false
			}
		}
		return true
	})
	held := 0
	for _, key := range keys {
		p, _ := sys.Placement(Tallies.Name(), key, 0)
		if slices.ContainsFunc(p.Replicas, func(m casty.Member) bool { return m.Addr == sys.Addr() }) {
			held++
		}
		if n := addN(t, sys, key, 1); n != 3 {
			t.Errorf("add to %s through the newcomer = %d, want 3", key, n)
		}
	}
	t.Logf("the newcomer holds %d of %d keys", held, len(keys))

	c.Partition([]int{c.N()}, []int{0, 1, 2, 3})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_, err := casty.Call0(ctx, Tallies.Ref(lite, keys[0]), (*Tally).Get)
	cancel()
	if err == nil {
		t.Fatal("a call through the lite member, node N(), succeeded with it cut off")
	}
	addN(t, sys, keys[0], 1) // the newcomer is not cut off
	c.HealAll()
	wait.For(t, 20*time.Second, "a call through the healed lite member", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		n, err := casty.Call0(ctx, Tallies.Ref(lite, keys[0]), (*Tally).Get)
		return err == nil && n == 4
	})
}

// A call across a delayed link waits for the delay both ways; healed, it
// does not.
func TestClusterDelay(t *testing.T) {
	c := castytest.NewCluster(t, 3)
	const key = "slow"
	owner := ownerIndex(t, c, key)
	via := (owner + 1) % c.N()
	addN(t, c.Member(via), key, 1)
	const d = 150 * time.Millisecond
	c.Delay(via, owner, d)
	start := time.Now()
	addN(t, c.Member(via), key, 1)
	if took := time.Since(start); took < 2*d {
		t.Fatalf("a call across a link delayed %v took %v, less than the round trip", d, took)
	}
	c.Heal(via, owner)
	start = time.Now()
	addN(t, c.Member(via), key, 1)
	if took := time.Since(start); took >= 2*d {
		t.Fatalf("after Heal a call took %v, still the delayed round trip", took)
	}
}

// Over a lossy link calls fail now and then (the connection resets and is
// redialled) but no acknowledged write is lost and none is applied that
// was not attempted.
func TestClusterLossyLinkKeepsCounts(t *testing.T) {
	c := castytest.NewCluster(t, 3)
	const key = "lossy"
	owner := ownerIndex(t, c, key)
	via := (owner + 1) % c.N()
	c.Lossy(via, owner, 0.05)
	acked, failed := 0, 0
	for range 20 {
		n, f := addUntil(t, c.Member(via), key)
		if n < acked+1 || n > acked+1+failed+f {
			t.Fatalf("add returned %d, want %d plus at most %d indeterminate adds", n, acked+1, failed+f)
		}
		acked, failed = n, failed+f
	}
	c.HealAll()
	// The member that lost calls over the link may have taken the key
	// over; the member the lite client still routes to then holds a
	// deposed activation, whose confirm is fenced (and which that
	// discards): the read is asked again, and answered from the replicas.
	var got int
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; {
		got, err = casty.Call0(context.Background(), Tallies.Ref(c.Lite(), key), (*Tally).Get)
		if !errors.Is(err, casty.ErrQuorumUnavailable) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || got != acked {
		t.Fatalf("after healing, get = %d, %v; want the last acknowledged %d", got, err, acked)
	}
	t.Logf("20 adds over a link losing 5%% of writes: %d attempts failed", failed)
}

// SingleTallies is Tally kept once: a call's answer travels only in the
// owner's reply.
var SingleTallies = casty.Actor[Tally](casty.Name("castytest.test.SingleTally"))

// A duplicating link delivers a request and loses its answer: the caller
// sees the call fail as indeterminate, yet the actor ran it (so a retry
// would run it twice). The actor is kept once: a replicated one's caller,
// itself a replica, would have the answer from its own copy's commit (an
// early answer, replica/SPEC.md), which no lost reply can take away.
func TestClusterDuplicateRunsARequestItsCallerSawFail(t *testing.T) {
	c := castytest.NewCluster(t, 3)
	const key = "dup"
	m, ok := c.Member(0).OwnerOf(SingleTallies.Name(), key)
	if !ok {
		t.Fatalf("no owner of %s", key)
	}
	owner := indexOf(t, c, m.Addr)
	via := (owner + 1) % c.N()
	value, err := casty.Call(context.Background(), SingleTallies.Ref(c.Member(via), key), (*Tally).Add, 1)
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt <= 50; attempt++ {
		c.Duplicate(via, owner, 1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := casty.Call(ctx, SingleTallies.Ref(c.Member(via), key), (*Tally).Add, 1)
		cancel()
		c.Heal(via, owner)
		now, err2 := casty.Call0(context.Background(), SingleTallies.Ref(c.Member(owner), key), (*Tally).Get)
		if err2 != nil {
			t.Fatalf("get on the owner itself: %v", err2)
		}
		if now < value || now > value+1 {
			t.Fatalf("attempt %d: the count went from %d to %d on one add", attempt, value, now)
		}
		if err != nil && !castytest.Indeterminate(err) {
			// A definite error (the key's range moved under a loaded
			// machine's suspicions, say) promises the add did not run.
			if now != value {
				t.Fatalf("attempt %d: the add ran, and its caller saw %v, a definite error", attempt, err)
			}
			continue
		}
		if err != nil && now == value+1 {
			t.Logf("attempt %d: the add ran, and its caller saw %v", attempt, err)
			return
		}
		value = now
	}
	t.Fatal("in 50 attempts over a duplicating link, no request ran whose caller saw it fail")
}
