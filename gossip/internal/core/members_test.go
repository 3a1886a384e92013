package core

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

func genRecord(id NodeID) *rapid.Generator[Member] {
	return rapid.Custom(func(t *rapid.T) Member {
		return Member{
			ID:          id,
			Addr:        rapid.SampledFrom([]string{"a:1", "b:1", "c:1"}).Draw(t, "addr"),
			Role:        Role(rapid.IntRange(0, 1).Draw(t, "role")),
			Incarnation: rapid.Uint64Range(0, 3).Draw(t, "inc"),
			Status:      Status(rapid.IntRange(0, 3).Draw(t, "status")),
		}
	})
}

func genTable() *rapid.Generator[[]Member] {
	return rapid.Custom(func(t *rapid.T) []Member {
		n := rapid.IntRange(0, 6).Draw(t, "n")
		var out []Member
		for range n {
			var id NodeID
			id[0] = byte(rapid.IntRange(1, 4).Draw(t, "id"))
			out = append(out, genRecord(id).Draw(t, "rec"))
		}
		return out
	})
}

func TestSupersedesRules(t *testing.T) {
	id := NodeID{1}
	rec := func(inc uint64, st Status) Member { return Member{ID: id, Addr: "a:1", Incarnation: inc, Status: st} }
	cases := []struct {
		name string
		a, b Member
		want bool
	}{
		{"higher incarnation wins over a more severe status", rec(2, Alive), rec(1, Dead), true},
		{"lower incarnation loses", rec(1, Dead), rec(2, Alive), false},
		{"tie: suspect beats alive", rec(1, Suspect), rec(1, Alive), true},
		{"tie: left beats suspect", rec(1, Left), rec(1, Suspect), true},
		{"tie: dead beats left", rec(1, Dead), rec(1, Left), true},
		{"equal records do not supersede", rec(1, Alive), rec(1, Alive), false},
	}
	for _, c := range cases {
		if got := Supersedes(c.a, c.b); got != c.want {
			t.Errorf("%s: Supersedes(%v, %v) = %v, want %v", c.name, c.a, c.b, got, c.want)
		}
	}
}

func TestMergeLaws(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := genRecord(NodeID{1})
		a, b, c := g.Draw(t, "a"), g.Draw(t, "b"), g.Draw(t, "c")
		if Merge(a, b) != Merge(b, a) {
			t.Fatalf("not commutative: %v %v", a, b)
		}
		if Merge(Merge(a, b), c) != Merge(a, Merge(b, c)) {
			t.Fatalf("not associative: %v %v %v", a, b, c)
		}
		if Merge(a, a) != a {
			t.Fatalf("not idempotent: %v", a)
		}
	})
}

func equalTables(a, b []Member) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestMergeTablesLaws(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b, c := genTable().Draw(t, "a"), genTable().Draw(t, "b"), genTable().Draw(t, "c")
		if !equalTables(MergeTables(a, b), MergeTables(b, a)) {
			t.Fatal("not commutative")
		}
		if !equalTables(MergeTables(MergeTables(a, b), c), MergeTables(a, MergeTables(b, c))) {
			t.Fatal("not associative")
		}
		if !equalTables(MergeTables(MergeTables(a, nil), a), MergeTables(a, nil)) {
			t.Fatal("not idempotent")
		}
	})
}

// The Table applies records in any order and ends where the pure merge
// says, with equal digests: the property that makes gossip order irrelevant.
func TestTableApplyMatchesMergeInAnyOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		recs := genTable().Draw(t, "recs")
		self := Member{ID: NodeID{9}, Addr: "self:1"}
		t1, t2 := NewTable(self), NewTable(self)
		now := time.Unix(0, 0)
		for _, r := range recs {
			t1.Apply(r, now)
		}
		perm := rapid.Permutation(recs).Draw(t, "perm")
		for _, r := range perm {
			t2.Apply(r, now)
			t2.Apply(r, now) // duplicates are harmless
		}
		want := MergeTables([]Member{self}, recs)
		if !equalTables(t1.Members(), want) || !equalTables(t2.Members(), want) {
			t.Fatalf("table %v / %v, want %v", t1.Members(), t2.Members(), want)
		}
		if t1.Digest() != t2.Digest() {
			t.Fatal("equal tables with different digests")
		}
	})
}

func TestTombstonesExpireAfterTTL(t *testing.T) {
	self := Member{ID: NodeID{9}, Addr: "self:1"}
	tb := NewTable(self)
	t0 := time.Unix(100, 0)
	dead := Member{ID: NodeID{1}, Addr: "a:1", Status: Dead}
	tb.Apply(dead, t0)
	tb.Apply(Member{ID: NodeID{2}, Addr: "b:1"}, t0)
	if got := tb.Expire(t0.Add(59*time.Second), time.Minute); len(got) != 0 {
		t.Fatalf("expired early: %v", got)
	}
	// a late rumour of the dead node alive at the same incarnation loses
	if _, _, changed := tb.Apply(Member{ID: NodeID{1}, Addr: "a:1"}, t0.Add(time.Second)); changed {
		t.Fatal("late ALIVE rumour resurrected a tombstone")
	}
	if next := tb.NextExpiry(time.Minute); !next.Equal(t0.Add(time.Minute)) {
		t.Fatalf("next expiry %v", next)
	}
	got := tb.Expire(t0.Add(time.Minute), time.Minute)
	if len(got) != 1 || got[0].ID != dead.ID {
		t.Fatalf("expired %v", got)
	}
	if _, ok := tb.Get(dead.ID); ok {
		t.Fatal("tombstone still present")
	}
	if tb.Len() != 2 {
		t.Fatalf("len %d", tb.Len())
	}
}

func TestApplyAgedKeepsSenderAge(t *testing.T) {
	tb := NewTable(Member{ID: NodeID{9}, Addr: "self:1"})
	t0 := time.Unix(100, 0)
	tb.ApplyAged(Member{ID: NodeID{1}, Addr: "a:1", Status: Left}, t0, 50*time.Second)
	if got := tb.Expire(t0.Add(10*time.Second), time.Minute); len(got) != 1 {
		t.Fatalf("a tombstone 50 s old at the sender must expire 10 s later here, got %v", got)
	}
}
