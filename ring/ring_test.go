package ring

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

func TestParseNodeID(t *testing.T) {
	id, err := ParseNodeID("0123ABCD-4567-89ab-cdef-0123456789AB")
	if err != nil {
		t.Fatal(err)
	}
	want := NodeID{0x01, 0x23, 0xab, 0xcd, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab}
	if id != want {
		t.Fatalf("got %x, want %x", id, want)
	}
	if got := id.String(); got != "0123abcd-4567-89ab-cdef-0123456789ab" {
		t.Fatalf("String() = %q", got)
	}
	for _, bad := range []string{
		"", "0123abcd456789abcdef0123456789ab", "0123abcd-4567-89ab-cdef-0123456789a",
		"0123abcd-4567-89ab-cdef-0123456789abc", "0123abcd-4567-89ab-cdef_0123456789ab",
		"0123abcg-4567-89ab-cdef-0123456789ab", "{0123abcd-4567-89ab-cdef-0123456789a}",
	} {
		if _, err := ParseNodeID(bad); !errors.Is(err, ErrBadNodeID) {
			t.Errorf("ParseNodeID(%q) error = %v, want ErrBadNodeID", bad, err)
		}
	}
}

func TestNodeIDTextRoundTrip(t *testing.T) {
	for _, id := range randomIDs(seeded(1), 50) {
		b, err := json.Marshal(id)
		if err != nil {
			t.Fatal(err)
		}
		var back NodeID
		if err := json.Unmarshal(b, &back); err != nil || back != id {
			t.Fatalf("json round trip of %v: %s -> %v, %v", id, b, back, err)
		}
		if p, err := ParseNodeID(id.String()); err != nil || p != id {
			t.Fatalf("ParseNodeID(String()) of %v = %v, %v", id, p, err)
		}
	}
	var id NodeID
	if err := id.UnmarshalText([]byte("nope")); !errors.Is(err, ErrBadNodeID) {
		t.Fatalf("UnmarshalText(nope) = %v", err)
	}
}

func TestNewRejectsNilNode(t *testing.T) {
	ids := randomIDs(seeded(2), 3)
	if _, err := New(append(ids, NodeID{})); !errors.Is(err, ErrNilNode) {
		t.Fatalf("New with nil id: err = %v, want ErrNilNode", err)
	}
}

func TestEmptyRing(t *testing.T) {
	for name, r := range map[string]*Ring{"zero": {}, "built": mustNew(t, nil)} {
		if _, ok := r.Owner(42); ok {
			t.Errorf("%s: Owner reported a node", name)
		}
		if got := r.Replicas(42, 3); len(got) != 0 {
			t.Errorf("%s: Replicas = %v", name, got)
		}
		if r.Size() != 0 || r.Len() != 0 || len(r.Arcs()) != 0 {
			t.Errorf("%s: Size %d Len %d Arcs %v", name, r.Size(), r.Len(), r.Arcs())
		}
	}
}

func TestSingleMemberOwnsEverything(t *testing.T) {
	id := randomIDs(seeded(3), 1)[0]
	r := mustNew(t, []NodeID{id})
	for _, p := range probes(seeded(4), []*Ring{r}, 1000) {
		if o, ok := r.Owner(p); !ok || o != id {
			t.Fatalf("Owner(%d) = %v, %v", p, o, ok)
		}
		if rs := r.Replicas(p, 3); !slices.Equal(rs, []NodeID{id}) {
			t.Fatalf("Replicas(%d, 3) = %v", p, rs)
		}
	}
	full := []Range{{0, 0}}
	if got := r.OwnedRanges(id); !slices.Equal(got, full) {
		t.Fatalf("OwnedRanges = %v, want whole circle", got)
	}
	if got := r.ReplicaRanges(id, 3); !slices.Equal(got, full) {
		t.Fatalf("ReplicaRanges = %v, want whole circle", got)
	}
	if got := r.Arcs(); len(got) != 1 || !got[0].Full() || got[0].Owner != id {
		t.Fatalf("Arcs = %v", got)
	}
}

func TestRangeContains(t *testing.T) {
	for _, tc := range []struct {
		r    Range
		p    uint64
		want bool
	}{
		{Range{10, 20}, 10, false}, {Range{10, 20}, 11, true}, {Range{10, 20}, 20, true}, {Range{10, 20}, 21, false},
		{Range{20, 10}, 20, false}, {Range{20, 10}, 21, true}, {Range{20, 10}, ^uint64(0), true},
		{Range{20, 10}, 0, true}, {Range{20, 10}, 10, true}, {Range{20, 10}, 11, false},
		{Range{0, 0}, 0, true}, {Range{7, 7}, 3, true},
	} {
		if got := tc.r.Contains(tc.p); got != tc.want {
			t.Errorf("%v.Contains(%d) = %v, want %v", tc.r, tc.p, got, tc.want)
		}
	}
	if s := (Range{20, 10}).Size(); s != ^uint64(0)-9 {
		t.Errorf("wrapping Size = %d", s)
	}
	if (Range{0, 0}).Share() != 1 {
		t.Errorf("full Share != 1")
	}
}

// TestOwnerTieBreak builds a ring by hand where two nodes hold the same token:
// the lower node id owns it and the other entry owns an empty range.
func TestOwnerTieBreak(t *testing.T) {
	a, b := NodeID{1}, NodeID{2}
	r := &Ring{members: []NodeID{a, b}, tokens: []uint64{100, 100, 200}, owners: []uint32{0, 1, 1}}
	if o, _ := r.Owner(100); o != a {
		t.Fatalf("Owner(100) = %v, want lower id", o)
	}
	if o, _ := r.Owner(50); o != a {
		t.Fatalf("Owner(50) = %v", o)
	}
	if o, _ := r.Owner(201); o != a {
		t.Fatalf("Owner(201) = %v (wrap)", o)
	}
	if got := r.OwnedRanges(a); !slices.Equal(got, []Range{{200, 100}}) {
		t.Fatalf("OwnedRanges(a) = %v", got)
	}
	if got := r.OwnedRanges(b); !slices.Equal(got, []Range{{100, 200}}) {
		t.Fatalf("OwnedRanges(b) = %v", got)
	}
	if got := r.Replicas(100, 2); !slices.Equal(got, []NodeID{a, b}) {
		t.Fatalf("Replicas = %v", got)
	}
}

// TestReplicasLargeN covers both distinctness strategies of the walk: a
// linear scan up to 64 replicas, a seen-set beyond.
func TestReplicasLargeN(t *testing.T) {
	ids := randomIDs(seeded(5), 80)
	r := mustNew(t, ids)
	ref := newNaive(ids)
	rng := seeded(6)
	for _, p := range probes(rng, nil, 30) {
		for _, n := range []int{9, 20, 64, 65, 79, 80, 81, 200} {
			got := r.Replicas(p, n)
			if want := ref.replicas(p, n); !slices.Equal(got, want) {
				t.Fatalf("Replicas(%d, %d) = %v, want %v", p, n, got, want)
			}
		}
	}
	// ReplicaRanges with a seen-set walk, checked pointwise.
	id := ids[3]
	for _, n := range []int{70, 80} {
		rs := r.ReplicaRanges(id, n)
		for _, p := range probes(rng, []*Ring{r}, 200)[:600] {
			in := false
			for _, x := range rs {
				in = in || x.Contains(p)
			}
			if want := slices.Contains(ref.replicas(p, n), id); in != want {
				t.Fatalf("n=%d: point %d in ReplicaRanges = %v, want %v", n, p, in, want)
			}
		}
	}
}

func TestAllocs(t *testing.T) {
	r := mustNew(t, randomIDs(seeded(7), 100))
	var sink NodeID
	if a := testing.AllocsPerRun(1000, func() { sink, _ = r.Owner(12345) }); a != 0 {
		t.Errorf("Owner allocates %v per call", a)
	}
	buf := make([]NodeID, 0, 8)
	if a := testing.AllocsPerRun(1000, func() { buf = r.AppendReplicas(buf[:0], 12345, 3) }); a != 0 {
		t.Errorf("AppendReplicas allocates %v per call", a)
	}
	big := make([]NodeID, 0, 64)
	if a := testing.AllocsPerRun(100, func() { big = r.AppendReplicas(big[:0], 12345, 64) }); a != 0 {
		t.Errorf("AppendReplicas(n=64) allocates %v per call", a)
	}
	if a := testing.AllocsPerRun(1000, func() { sink, _ = r.OwnerOf("user", "42") }); a != 0 {
		t.Errorf("OwnerOf allocates %v per call", a)
	}
	key := []byte("some collection item")
	if a := testing.AllocsPerRun(1000, func() { _ = Hash(key) }); a != 0 {
		t.Errorf("Hash allocates %v per call", a)
	}
	_ = sink
}

func TestShard(t *testing.T) {
	item := []byte("item")
	if got, want := Shard(item, 32), int(Hash(item)%32); got != want {
		t.Fatalf("Shard = %d, want %d", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Shard(…, 0) did not panic")
		}
	}()
	Shard(item, 0)
}

func TestDiffEdgeCases(t *testing.T) {
	ids := randomIDs(seeded(8), 3)
	r := mustNew(t, ids)
	if d := Diff(r, mustNew(t, []NodeID{ids[2], ids[0], ids[1], ids[0]})); len(d) != 0 {
		t.Fatalf("Diff of equal sets = %v", d)
	}
	if d := Diff(nil, nil); len(d) != 0 {
		t.Fatalf("Diff(nil, nil) = %v", d)
	}
	// From empty: every arc of r moves from nobody to its owner.
	d := Diff(nil, r)
	arcs := r.Arcs()
	if len(d) != len(arcs) {
		t.Fatalf("Diff(nil, r) has %d moves, r has %d arcs", len(d), len(arcs))
	}
	for i, m := range d {
		if !m.From.IsZero() || m.To != arcs[i].Owner || m.Range != arcs[i].Range {
			t.Fatalf("move %d = %+v, arc = %+v", i, m, arcs[i])
		}
	}
	// One member replaced by another: the whole circle, as one move.
	a, b := mustNew(t, ids[:1]), mustNew(t, ids[1:2])
	if d := Diff(a, b); len(d) != 1 || !d[0].Full() || d[0].From != ids[0] || d[0].To != ids[1] {
		t.Fatalf("Diff(a, b) = %+v", d)
	}
}
