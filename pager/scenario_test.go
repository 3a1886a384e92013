package pager

import (
	"errors"
	"testing"
)

// Scenarios of paged replication (replica/SPEC.md has the protocol), step
// by step, with an owner (a Tracker) and replicas (Stores).

// TestDeposedOwnerIsFenced: after a partition two owners activated the same
// actor from the same commit; the first to write wins, the other's delta is
// refused as stale and it must discard its activation.
func TestDeposedOwnerIsFenced(t *testing.T) {
	replica := NewStore()
	a := newTestTracker(t, nil)
	var sa testState
	sa.Count = 1
	p := mustPrepare(t, a, &sa, 1)
	deliver(t, replica, p, DefaultBatchSize)
	_ = a.Commit(p)

	// B activates from the replica at stamp 1.
	b := newTestTracker(t, nil)
	var sb testState
	if err := b.Restore(&sb, replica.Stamp(), replica.Pages()); err != nil {
		t.Fatal(err)
	}
	// A writes again (stamp 2); then B writes over its basis 1 (stamp 3).
	sa.Count = 2
	p = mustPrepare(t, a, &sa, 2)
	deliver(t, replica, p, DefaultBatchSize)
	_ = a.Commit(p)
	sb.Name = "b"
	pb := mustPrepare(t, b, &sb, 3)
	if pb.Delta.Basis != stamp(1) {
		t.Fatalf("B's basis %v", pb.Delta.Basis)
	}
	_, err := replica.Apply(pb.Delta)
	if !errors.Is(err, ErrStaleOwner) {
		t.Fatalf("deposed owner's delta: %v", err)
	}
	// A full page set would replace the state: the store leaves fencing
	// those to the replication layer, whose ballots refuse a deposed owner
	// before its delta reaches the store.
	_ = b.Rollback(pb)
	if got := restoreFrom(t, replica); got.Count != 2 || got.Name != "" {
		t.Fatalf("replica holds %+v", canon(t, got))
	}
}

// TestLaggingReplicaHealsWithOneFullSet: a replica that missed a commit
// (W-of-R acks allow it) refuses the next delta with ErrNeedFull, takes the
// full page set once, and accepts plain deltas again afterwards.
func TestLaggingReplicaHealsWithOneFullSet(t *testing.T) {
	tr := newTestTracker(t, nil)
	up, lag := NewStore(), NewStore()
	var st testState
	st.Scores.Set("a", 1)
	p := mustPrepare(t, tr, &st, 1)
	deliver(t, up, p, DefaultBatchSize)
	deliver(t, lag, p, DefaultBatchSize)
	_ = tr.Commit(p)

	st.Scores.Set("b", 2) // lag misses commit 2
	p = mustPrepare(t, tr, &st, 2)
	deliver(t, up, p, DefaultBatchSize)
	_ = tr.Commit(p)

	st.Scores.Delete("a")
	p = mustPrepare(t, tr, &st, 3)
	if _, err := lag.Apply(p.Delta); !errors.Is(err, ErrNeedFull) {
		t.Fatalf("lagging replica: %v", err)
	}
	full, err := p.Full()
	if err != nil {
		t.Fatal(err)
	}
	if err := applyAll(lag, full.Split(DefaultBatchSize)); err != nil {
		t.Fatal(err)
	}
	deliver(t, up, p, DefaultBatchSize)
	_ = tr.Commit(p)
	if lag.Stamp() != up.Stamp() || canon(t, lag.List()) != canon(t, up.List()) {
		t.Fatalf("after the full set: lag %v up %v", lag.List(), up.List())
	}
	st.Count = 9
	p = mustPrepare(t, tr, &st, 4)
	if _, err := lag.Apply(p.Delta); err != nil {
		t.Fatalf("deltas do not flow again: %v", err)
	}
}

// TestNewOwnerFetchesOnlyWhatItLacks: a node that already holds a replica
// at the adopted commit fetches nothing; one a commit behind fetches only
// the pages that commit wrote.
func TestNewOwnerFetchesOnlyWhatItLacks(t *testing.T) {
	tr := newTestTracker(t, nil)
	newest, behind := NewStore(), NewStore()
	var st testState
	for i := range 10 {
		st.Scores.Set(string(rune('a'+i)), i)
	}
	st.Name = "n"
	p := mustPrepare(t, tr, &st, 1)
	deliver(t, newest, p, DefaultBatchSize)
	deliver(t, behind, p, DefaultBatchSize)
	_ = tr.Commit(p)
	st.Scores.Set("c", 100)
	st.Scores.Delete("d")
	p = mustPrepare(t, tr, &st, 2)
	deliver(t, newest, p, DefaultBatchSize)
	_ = tr.Commit(p)

	if f, d := Diverge(newest.List(), newest.List()); len(f)+len(d) != 0 {
		t.Fatalf("a current replica fetches %v / drops %v", f, d)
	}
	fetch, drop := Diverge(behind.List(), newest.List())
	if canon(t, fetch) != canon(t, []string{"Scores/c"}) || canon(t, drop) != canon(t, []string{"Scores/d"}) {
		t.Fatalf("fetch %v drop %v", fetch, drop)
	}
}
