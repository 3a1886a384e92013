package casty_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/vmihailenco/msgpack/v5"
)

// Tab is a replicated tally for the early-answer tests.
type Tab struct{ N int }

var errTabNegative = errors.New("tab: would go negative")

// Add adds d and returns the new total.
func (t *Tab) Add(_ context.Context, d int) (int, error) {
	t.N += d
	return t.N, nil
}

// Take subtracts d; going negative it keeps the change but answers
// errTabNegative, as its caller's outcome.
func (t *Tab) Take(_ context.Context, d int) (int, error) {
	t.N -= d
	if t.N < 0 {
		return t.N, casty.Answer(errTabNegative)
	}
	return t.N, nil
}

// Get returns the total.
func (t *Tab) Get(context.Context) (int, error) { return t.N, nil }

// tabTotal is Tab's total as Tally returns it; it counts its encodings.
type tabTotal struct{ N int }

var tabTotalEncodes atomic.Int64

func (t tabTotal) EncodeMsgpack(enc *msgpack.Encoder) error {
	tabTotalEncodes.Add(1)
	return enc.EncodeInt(int64(t.N))
}

func (t *tabTotal) DecodeMsgpack(dec *msgpack.Decoder) (err error) {
	t.N, err = dec.DecodeInt()
	return err
}

// Tally adds d and returns the new total as a tabTotal.
func (t *Tab) Tally(_ context.Context, d int) (tabTotal, error) {
	t.N += d
	return tabTotal{t.N}, nil
}

var Tabs = casty.Actor[Tab](casty.Name("test.Tab"), casty.Replicas(3), casty.Write(casty.Majority), casty.Read(casty.Majority))

// earlyKey returns a key of Tabs whose owner, on via's view, is owner.
func earlyKey(t *testing.T, via, owner *casty.System) string {
	t.Helper()
	for i := range 1000 {
		key := fmt.Sprint("tab-", i)
		if casty.OwnerOf(via, Tabs.Name(), key) == owner.Addr() {
			return key
		}
	}
	t.Fatalf("no key of %s owned by %s", Tabs.Name(), owner.Addr())
	return ""
}

// earlyCluster starts three replicated members and returns them, the one
// that calls (a replica of key) and key, which the first owns. The second,
// the third replica, takes no replication message until releaseThird (or
// the test's end): were its acknowledgement to reach the owner first, the
// owner's own reply could overtake the answer the caller's member is given
// (they travel on different lanes), and the call would rightly take
// whichever came first.
func earlyCluster(t *testing.T) (nodes []*casty.System, caller *casty.System, key string, releaseThird func()) {
	t.Helper()
	nodes = startReplicated(t, 3)
	caller = nodes[2]
	key = earlyKey(t, caller, nodes[0])
	releaseThird = casty.HoldReplication(nodes[1])
	t.Cleanup(releaseThird)
	return nodes, caller, key, releaseThird
}

// A call made from one of the key's replicas is answered as soon as that
// replica's copy publishes the commit as the deciding vote: here the
// third replica takes nothing and the caller's member holds its replies
// back, so the owner cannot hear its write quorum, yet the caller has its
// answer. Before early answers it waited for the owner's round.
func TestCallFromAReplicaIsAnsweredByItsOwnCopy(t *testing.T) {
	parallel(t)
	nodes, caller, key, releaseThird := earlyCluster(t)
	ctx := context.Background()
	if n, err := casty.Call(ctx, Tabs.Ref(caller, key), (*Tab).Add, 1); err != nil || n != 1 {
		t.Fatalf("first call: %d, %v", n, err)
	}
	before := caller.Replication().EarlyAnswers
	if before == 0 {
		t.Fatal("the first call, from a replica, was not answered early")
	}

	releaseCaller := casty.DelayReplicationReplies(caller)
	defer releaseCaller()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	n, err := casty.Call(cctx, Tabs.Ref(caller, key), (*Tab).Add, 2)
	cancel()
	if err != nil || n != 3 {
		t.Fatalf("a call whose quorum only the caller's member completes, its reply held: %d, %v", n, err)
	}
	if got := caller.Replication().EarlyAnswers; got != before+1 {
		t.Fatalf("early answers %d, want %d", got, before+1)
	}

	// An answer error is the caller's outcome, not a plain success: it is
	// never answered early, so the call waits for the owner's round.
	take := make(chan error, 1)
	go func() {
		_, err := casty.Call(ctx, Tabs.Ref(caller, key), (*Tab).Take, 10)
		take <- err
	}()
	select {
	case err := <-take:
		t.Fatalf("a handler's answer came back while the owner could not hear its quorum: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	releaseCaller()
	releaseThird()
	if err := <-take; err == nil || !strings.Contains(err.Error(), errTabNegative.Error()) {
		t.Fatalf("Take's answer: %v", err)
	}
	for _, via := range nodes {
		if n, err := casty.Call0(ctx, Tabs.Ref(via, key), (*Tab).Get); err != nil || n != -7 {
			t.Fatalf("Get through %s: %d, %v", via.Addr(), n, err)
		}
	}
}

// An owner that sees the caller's member vote so that it decided the
// round (the vote that member counted as deciding before it handed the
// answer on) sends no reply of its own, and the call forgot its request:
// nothing is left pending on the caller's member. Before, every early
// answer was followed by the owner's reply, a message the caller dropped.
func TestAnAnswerTakenEarlyIsNotSentAgain(t *testing.T) {
	nodes, caller, key, _ := earlyCluster(t)
	owner := nodes[0]
	ctx := context.Background()
	if n, err := casty.Call(ctx, Tabs.Ref(caller, key), (*Tab).Add, 1); err != nil || n != 1 {
		t.Fatalf("first call: %d, %v", n, err)
	}
	before, withheldBefore := caller.Replication().EarlyAnswers, owner.Replication().RepliesWithheld
	const calls = 20
	for i := range calls {
		if n, err := casty.Call(ctx, Tabs.Ref(caller, key), (*Tab).Add, 1); err != nil || n != i+2 {
			t.Fatalf("add %d: %d, %v", i, n, err)
		}
	}
	// The third replica takes nothing, so every round is decided by the
	// caller's member's vote, and every call answered early; the owner
	// ends the last call's round after the caller has its answer.
	if early := caller.Replication().EarlyAnswers - before; early != calls {
		t.Fatalf("%d of %d calls answered early", early, calls)
	}
	waitFor(t, 5*time.Second, "the owner to withhold every reply", func() bool {
		return owner.Replication().RepliesWithheld-withheldBefore == calls
	})
	waitFor(t, 5*time.Second, "no request left pending on the caller's member", func() bool { return casty.PendingTo(caller, owner) == 0 })
}

// A call whose commit goes to the caller's member alone (a hot key's
// third replica is skipped as a spare, spareCommits times in a row) is
// served on the connection's reader, and its handler reads the
// acknowledgement from that connection itself, handing the reading to no
// other goroutine. A call runs on the reader when nothing else was
// buffered behind it, so most do, one at a time.
func TestAHotKeysCommitReadsItsReplyOnTheCallersConnection(t *testing.T) {
	nodes := startReplicated(t, 3)
	checkHotCommitsReadInline(t, nodes[0], nodes[2], "")
}

// checkHotCommitsReadInline makes 40 sequential calls from caller to a
// key owner owns, after a first that activates it, and fails unless at
// least half of the owner's commits read their replies on the caller's
// connection (RoundsReadInline).
func checkHotCommitsReadInline(t *testing.T, owner, caller *casty.System, which string) {
	t.Helper()
	key := earlyKey(t, caller, owner)
	ctx := context.Background()
	if _, err := casty.Call(ctx, Tabs.Ref(caller, key), (*Tab).Add, 1); err != nil {
		t.Fatal(err)
	}
	before := owner.Replication()
	const calls = 40
	for i := range calls {
		if n, err := casty.Call(ctx, Tabs.Ref(caller, key), (*Tab).Add, 1); err != nil || n != i+2 {
			t.Fatalf("add %d: %d, %v", i, n, err)
		}
	}
	after := owner.Replication()
	commits, inline := after.Commits-before.Commits, after.RoundsReadInline-before.RoundsReadInline
	t.Logf("%d of %d commits%s read their replies on the caller's connection", inline, commits, which)
	if inline < commits/2 || inline > commits {
		t.Fatalf("%d of %d commits%s read their replies on the caller's connection", inline, commits, which)
	}
}

// A hot key's commit that goes to both other replicas (here every one:
// no spare may be skipped; usually every spareCommits+1-th, when the
// spare is sent its due) reads its reply on the caller's connection too:
// the round waits on the caller's member, whose commit carries the
// answer, and the third replica's acknowledgement, on another
// connection, is taken once the lending ends. Before, a request on
// another connection made the handler hand the reading off and park:
// none was read inline.
func TestAHotCommitToEveryReplicaReadsTheCallersReplyInline(t *testing.T) {
	nodes := startReplicated(t, 3)
	casty.SetSpares(nodes[0], 0, time.Second)
	checkHotCommitsReadInline(t, nodes[0], nodes[2], " to both replicas")
}

// A hot key's Read(Majority) call from one of its replicas reads the
// confirmation it needs on the caller's connection: the confirm that
// carries the answer goes to the caller's member, and the third replica's
// answer, on another connection, is taken once the lending ends. Before,
// the confirm to the third replica made the handler hand the reading off
// and park: none was read inline.
func TestAHotReadReadsTheCallersConfirmationInline(t *testing.T) {
	nodes := startReplicated(t, 3)
	owner, caller := nodes[0], nodes[2]
	key := earlyKey(t, caller, owner)
	ctx := context.Background()
	if _, err := casty.Call(ctx, Tabs.Ref(caller, key), (*Tab).Add, 3); err != nil {
		t.Fatal(err)
	}
	before := owner.Replication()
	const reads = 40
	for i := range reads {
		if n, err := casty.Call0(ctx, Tabs.Ref(caller, key), (*Tab).Get); err != nil || n != 3 {
			t.Fatalf("read %d: %d, %v", i, n, err)
		}
	}
	inline := owner.Replication().RoundsReadInline - before.RoundsReadInline
	t.Logf("%d of %d reads read their confirmations on the caller's connection", inline, reads)
	if inline < reads/2 || inline > reads {
		t.Fatalf("%d of %d reads read their confirmations on the caller's connection", inline, reads)
	}
}

// The owner encodes an early-answered call's result once: its own reply,
// when it sends one, is the envelope its commit carried. Before, the
// result was encoded for the commit and again for the reply.
func TestAnEarlyAnswerIsEncodedOnce(t *testing.T) {
	nodes := startReplicated(t, 3)
	owner, caller := nodes[0], nodes[2]
	key := earlyKey(t, caller, owner)
	ctx := context.Background()
	encodes, early := tabTotalEncodes.Load(), caller.Replication().EarlyAnswers
	const calls = 10
	for i := range calls {
		if got, err := casty.Call(ctx, Tabs.Ref(caller, key), (*Tab).Tally, 1); err != nil || got.N != i+1 {
			t.Fatalf("tally %d: %v, %v", i, got, err)
		}
	}
	encodes, early = tabTotalEncodes.Load()-encodes, caller.Replication().EarlyAnswers-early
	if early == 0 {
		t.Fatal("no call was answered early")
	}
	if encodes != calls {
		t.Fatalf("%d calls (%d answered early) encoded their results %d times, want once each", calls, early, encodes)
	}
}

// A Read(Majority) call made from one of the key's replicas is answered
// as soon as that replica confirms, as the reply the read quorum still
// needs, that the owner's ballot is its promise and it holds nothing
// newer: here the third replica takes nothing and the caller's member
// holds its replies back, so the owner cannot hear its read quorum, yet
// the caller has its answer. Before, it waited for the owner's confirm.
func TestReadFromAReplicaIsAnsweredByItsOwnCopy(t *testing.T) {
	_, caller, key, _ := earlyCluster(t)
	ctx := context.Background()
	if n, err := casty.Call(ctx, Tabs.Ref(caller, key), (*Tab).Add, 5); err != nil || n != 5 {
		t.Fatalf("add: %d, %v", n, err)
	}
	before := caller.Replication().EarlyAnswers
	releaseCaller := casty.DelayReplicationReplies(caller)
	defer releaseCaller()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	n, err := casty.Call0(cctx, Tabs.Ref(caller, key), (*Tab).Get)
	cancel()
	if err != nil || n != 5 {
		t.Fatalf("a read whose quorum only the caller's member completes, its reply held: %d, %v", n, err)
	}
	if got := caller.Replication().EarlyAnswers; got != before+1 {
		t.Fatalf("early answers %d, want %d", got, before+1)
	}
}

// Early answers change no outcome: many callers on every member, each
// adding to its own keys and to shared ones, see every running total
// exactly once and the final totals match.
func TestEarlyAnswersKeepEveryCallsOutcome(t *testing.T) {
	nodes := startReplicated(t, 3)
	ctx := context.Background()
	const keys, adds = 6, 20
	errs := make(chan error, len(nodes))
	for i, via := range nodes {
		go func() {
			for j := range adds {
				for k := range keys {
					if _, err := casty.Call(ctx, Tabs.Ref(via, fmt.Sprint("shared-", k)), (*Tab).Add, 1); err != nil {
						errs <- fmt.Errorf("member %d add %d key %d: %w", i, j, k, err)
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range nodes {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var early int64
	for _, s := range nodes {
		early += s.Replication().EarlyAnswers
	}
	if early == 0 {
		t.Fatal("no call was answered early")
	}
	for k := range keys {
		for _, via := range nodes {
			if n, err := casty.Call0(ctx, Tabs.Ref(via, fmt.Sprint("shared-", k)), (*Tab).Get); err != nil || n != len(nodes)*adds {
				t.Fatalf("key %d through %s: %d, %v (want %d)", k, via.Addr(), n, err, len(nodes)*adds)
			}
		}
	}
	t.Logf("%d of %d calls answered early", early, len(nodes)*adds*keys)
}
