package pager

import (
	"errors"
	"slices"
	"testing"
)

func pg(key, data string) Page { return Page{Key: key, Data: []byte(data)} }

// TestFullReplacesWhateverTheStoreHolds: a full page set is accepted over
// any basis, an orphan stamp newer than it included; who may send one is
// decided by the replication layer's ballots.
func TestFullReplacesWhateverTheStoreHolds(t *testing.T) {
	s := NewStore()
	if _, err := s.Apply(Delta{Stamp: stamp(5), Pages: []Page{pg("a", "orphan"), pg("b", "orphan")}}); err != nil {
		t.Fatal(err)
	}
	pub, err := s.Apply(Delta{Basis: stamp(1), Stamp: stamp(3), Full: true, Pages: []Page{pg("a", "adopted")}})
	if err != nil || !pub {
		t.Fatalf("full over an orphan: published=%v err=%v", pub, err)
	}
	if s.Stamp() != stamp(3) || s.Len() != 1 {
		t.Fatalf("store at %v with %d pages, want 3 with 1", s.Stamp(), s.Len())
	}
	if p, _ := s.Get("a"); string(p.Data) != "adopted" {
		t.Fatalf("page a = %q", p.Data)
	}
}

func TestStoreBasisRule(t *testing.T) {
	s := NewStore()
	mustApply := func(d Delta) {
		t.Helper()
		if pub, err := s.Apply(d); err != nil || !pub {
			t.Fatalf("apply %v: published=%v err=%v", d.Stamp, pub, err)
		}
	}
	mustApply(Delta{Basis: Stamp{}, Stamp: stamp(1), Pages: []Page{pg("a", "1"), pg("b", "1")}})
	mustApply(Delta{Basis: stamp(1), Stamp: stamp(2), Pages: []Page{pg("a", "2")}, Dropped: []string{"b"}})

	cases := []struct {
		name string
		d    Delta
		want error
	}{
		{"store newer than basis", Delta{Basis: stamp(1), Stamp: stamp(3), Pages: []Page{pg("a", "x")}}, ErrStaleOwner},
		{"store older than basis", Delta{Basis: stamp(5), Stamp: stamp(6), Pages: []Page{pg("a", "x")}}, ErrNeedFull},
		{"stamp not newer than basis", Delta{Basis: stamp(2), Stamp: stamp(2)}, ErrCorrupt},
		{"part out of range", Delta{Basis: stamp(2), Stamp: stamp(3), Part: 2, Parts: 2}, ErrCorrupt},
	}
	for _, c := range cases {
		if _, err := s.Apply(c.d); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	if s.Stamp() != stamp(2) || s.Len() != 1 {
		t.Fatalf("refusals changed the store: %v %d", s.Stamp(), s.Len())
	}
	// A duplicate of the published commit is acknowledged without effect.
	if pub, err := s.Apply(Delta{Basis: stamp(1), Stamp: stamp(2), Pages: []Page{pg("z", "z")}}); err != nil || !pub {
		t.Fatalf("duplicate: %v %v", pub, err)
	}
	if _, ok := s.Get("z"); ok {
		t.Fatal("a duplicate was applied again")
	}
	// A full page set from an owner the store lags behind replaces everything.
	mustApply(Delta{Basis: stamp(7), Stamp: stamp(8), Full: true, Pages: []Page{pg("c", "c"), {Key: "d", Data: []byte("d"), Stamp: stamp(4)}}})
	l := s.List()
	want := []PageInfo{{Key: "c", Stamp: stamp(8), Size: 1}, {Key: "d", Stamp: stamp(4), Size: 1}}
	if l.Stamp != stamp(8) || !slices.Equal(l.Pages, want) {
		t.Fatalf("after full: %+v", l)
	}
}

func TestStoreNeverExposesHalfACommit(t *testing.T) {
	s := NewStore()
	_, _ = s.Apply(Delta{Stamp: stamp(1), Pages: []Page{pg("keep", "k"), pg("old", "o")}})
	d := Delta{Basis: stamp(1), Stamp: stamp(2), Dropped: []string{"old"}}
	for i := range 10 {
		d.Pages = append(d.Pages, pg(string(rune('a'+i)), "0123456789"))
	}
	parts := d.Split(2 * (pageOverhead + 11))
	if len(parts) < 3 {
		t.Fatalf("expected several parts, got %d", len(parts))
	}
	// Deliver out of order, with a duplicate; nothing is visible until the last.
	order := []int{2, 0, 0}
	for i := 3; i < len(parts); i++ {
		order = append(order, i)
	}
	order = append(order, 1)
	for n, i := range order {
		pub, err := s.Apply(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		last := n == len(order)-1
		if pub != last {
			t.Fatalf("part %d: published=%v", i, pub)
		}
		if !last {
			if s.Stamp() != stamp(1) || s.Len() != 2 || !s.Pending() {
				t.Fatalf("half a commit is visible after part %d: stamp %v, %d pages", i, s.Stamp(), s.Len())
			}
		}
	}
	if s.Stamp() != stamp(2) || s.Len() != 11 || s.Pending() {
		t.Fatalf("after the last part: stamp %v, %d pages", s.Stamp(), s.Len())
	}
	if _, ok := s.Get("old"); ok {
		t.Fatal("dropped key survived")
	}
}

func TestStoreAbandonsIncompleteCommit(t *testing.T) {
	s := NewStore()
	d := Delta{Stamp: stamp(1), Pages: []Page{pg("a", "aaaaaaaa"), pg("b", "bbbbbbbb")}}
	parts := d.Split(1)
	if _, err := s.Apply(parts[0]); err != nil {
		t.Fatal(err)
	}
	// The owner gave up on commit 1 and sends commit 2 over the same basis.
	if pub, err := s.Apply(Delta{Stamp: stamp(2), Pages: []Page{pg("c", "c")}}); err != nil || !pub {
		t.Fatal(pub, err)
	}
	if _, ok := s.Get("a"); ok || s.Pending() {
		t.Fatal("part of an abandoned commit was published")
	}
}

func TestSplitKeepsEverything(t *testing.T) {
	d := Delta{Stamp: stamp(2), Basis: stamp(1), Dropped: []string{"x", "y"}}
	for i := range 50 {
		d.Pages = append(d.Pages, Page{Key: string(rune('A' + i)), Data: make([]byte, i*10)})
	}
	for _, batch := range []int{1, 100, 600, 5000, 1 << 20} {
		parts := d.Split(batch)
		var keys []string
		for i, p := range parts {
			if p.Stamp != d.Stamp || p.Basis != d.Basis || p.Part != i || p.Parts != len(parts) {
				t.Fatalf("batch %d part %d: header %+v", batch, i, p)
			}
			if p.Final() != (i == len(parts)-1) {
				t.Fatalf("batch %d part %d: Final()=%v", batch, i, p.Final())
			}
			if len(p.Pages) > 1 && p.Size() > batch {
				t.Fatalf("batch %d part %d: %d bytes", batch, i, p.Size())
			}
			if b, err := p.Encode(); err != nil || len(b) > p.Size() {
				t.Fatalf("batch %d part %d: encodes to %d bytes, Size says %d (%v)", batch, i, len(b), p.Size(), err)
			}
			if len(p.Dropped) > 0 && !p.Final() {
				t.Fatalf("drops outside the final part")
			}
			for _, pg := range p.Pages {
				keys = append(keys, pg.Key)
			}
		}
		if len(keys) != len(d.Pages) {
			t.Fatalf("batch %d: %d pages after split, want %d", batch, len(keys), len(d.Pages))
		}
	}
}

func TestDeltaEncodeRoundTrip(t *testing.T) {
	d := Delta{Stamp: Stamp{Wall: 9, Counter: 2, Node: [16]byte{0xff, 3}}, Basis: stamp(1), Part: 1, Parts: 3,
		Pages: []Page{pg("a", "x"), {Key: "b/c", Data: []byte{}, Stamp: stamp(1)}}, Dropped: []string{"z"}}
	b, err := d.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeDelta(b)
	if err != nil {
		t.Fatal(err)
	}
	if canon(t, got) != canon(t, d) {
		t.Fatalf("round trip:\n got %s\nwant %s", canon(t, got), canon(t, d))
	}
	empty := Delta{Stamp: stamp(1)}
	b, _ = empty.Encode()
	if len(b) > 48 {
		t.Fatalf("an empty delta encodes to %d bytes", len(b))
	}
}

func TestDivergeAndCatchup(t *testing.T) {
	have := Listing{Stamp: stamp(2), Pages: []PageInfo{{Key: "a", Stamp: stamp(1)}, {Key: "b", Stamp: stamp(2)}, {Key: "gone", Stamp: stamp(1)}}}
	want := Listing{Stamp: stamp(4), Pages: []PageInfo{{Key: "a", Stamp: stamp(1)}, {Key: "b", Stamp: stamp(4)}, {Key: "new", Stamp: stamp(3)}}}
	fetch, drop := Diverge(have, want)
	if !slices.Equal(fetch, []string{"b", "new"}) || !slices.Equal(drop, []string{"gone"}) {
		t.Fatalf("fetch %v drop %v", fetch, drop)
	}
	if f, d := Diverge(want, want); len(f)+len(d) != 0 {
		t.Fatalf("a current replica fetches %v / drops %v", f, d)
	}
	s := NewStore()
	if _, err := s.Catchup(Listing{Stamp: stamp(1)}); !errors.Is(err, ErrStaleOwner) {
		t.Fatalf("catch-up from an older store: %v", err)
	}
}

func TestHugePartCountIsCorrupt(t *testing.T) {
	s := NewStore()
	if _, err := s.Apply(Delta{Stamp: stamp(1), Part: 0, Parts: MaxParts + 1}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("got %v", err)
	}
	d := Delta{Stamp: stamp(1), Parts: 1 << 30}
	b, _ := d.Encode()
	if _, err := DecodeDelta(b); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("decode: %v", err)
	}
}

func TestStoreBytesFollowPublishedPages(t *testing.T) {
	s := NewStore()
	apply := func(d Delta) {
		t.Helper()
		if _, err := s.Apply(d); err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, p := range s.Pages() {
			want += len(p.Key) + len(p.Data)
		}
		if s.Bytes() != want {
			t.Fatalf("after %v: Bytes %d, pages hold %d", d.Stamp, s.Bytes(), want)
		}
	}
	apply(Delta{Stamp: stamp(1), Pages: []Page{pg("a", "12345"), pg("b", "1")}})
	apply(Delta{Basis: stamp(1), Stamp: stamp(2), Pages: []Page{pg("a", "1")}, Dropped: []string{"b"}})
	apply(Delta{Basis: stamp(2), Stamp: stamp(3), Full: true, Pages: []Page{pg("c", "123")}})
	if s.Bytes() != 4 {
		t.Fatalf("Bytes %d, want 4", s.Bytes())
	}
}

// BenchmarkStoreApplyOnePage: a replica's usual commit, one page replacing
// the same key's page, on a store of a few pages.
func BenchmarkStoreApplyOnePage(b *testing.B) {
	s := NewStore()
	if _, err := s.Apply(Delta{Full: true, Stamp: stamp(1), Pages: []Page{{Key: "A", Data: []byte{1}}, {Key: "B", Data: []byte{2}}, {Key: "N", Data: []byte{3}}}}); err != nil {
		b.Fatal(err)
	}
	data := []byte{4, 5, 6, 7}
	n := int64(1)
	for b.Loop() {
		n++
		if _, err := s.Apply(Delta{Basis: stamp(n - 1), Stamp: stamp(n), Pages: []Page{{Key: "N", Data: data}}}); err != nil {
			b.Fatal(err)
		}
	}
}
