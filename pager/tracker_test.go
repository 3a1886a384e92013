package pager

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func newTestTracker(t *testing.T, cfg *Config) *Tracker {
	t.Helper()
	s, err := NewSchema(reflect.TypeFor[testState]())
	if err != nil {
		t.Fatal(err)
	}
	tr, err := s.NewTracker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func keysOf(d Delta) []string {
	var ks []string
	for _, p := range d.Pages {
		ks = append(ks, p.Key)
	}
	slices.Sort(ks)
	return ks
}

func mustPrepare(t *testing.T, tr *Tracker, st *testState, n int64) *Pending {
	t.Helper()
	p, err := tr.Prepare(st, stamp(n))
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	return p
}

func TestZeroStateHasNoPages(t *testing.T) {
	tr := newTestTracker(t, nil)
	var st testState
	p := mustPrepare(t, tr, &st, 1)
	if !p.Delta.Empty() {
		t.Fatalf("zero state produced pages %v / drops %v", keysOf(p.Delta), p.Delta.Dropped)
	}
}

func TestNoopHandlerCostsNothing(t *testing.T) {
	tr := newTestTracker(t, nil)
	st := testState{Count: 3, Name: "n", Tags: []string{"a"}, Meta: map[string]string{"a": "b", "c": "d", "e": "f"}}
	st.Scores.Set("x", 1)
	st.Blob.Data = []byte("hello world")
	p := mustPrepare(t, tr, &st, 1)
	if err := tr.Commit(p); err != nil {
		t.Fatal(err)
	}
	for i := range 20 { // map iteration order varies: never a false positive
		p = mustPrepare(t, tr, &st, int64(2+i))
		if !p.Delta.Empty() {
			t.Fatalf("no-op handler produced %v / %v", keysOf(p.Delta), p.Delta.Dropped)
		}
		if err := tr.Commit(p); err != nil {
			t.Fatal(err)
		}
	}
	if tr.Stamp() != stamp(1) {
		t.Fatalf("empty commits advanced the stamp to %v", tr.Stamp())
	}
}

func TestEachRegimeShipsOnlyWhatChanged(t *testing.T) {
	tr := newTestTracker(t, nil)
	st := testState{Count: 1, Name: "a"}
	st.Scores.SetAll(func(y func(string, int) bool) { _ = y("a", 1) && y("b", 2) && y("c", 3) })
	st.Blob.Data = []byte("0123456789")
	p := mustPrepare(t, tr, &st, 1)
	if got, want := keysOf(p.Delta), []string{"Blob/c0", "Blob/c1", "Blob/c2", "Blob/len", "Count", "Name", "Scores/a", "Scores/b", "Scores/c"}; !slices.Equal(got, want) {
		t.Fatalf("first commit pages %v, want %v", got, want)
	}
	_ = tr.Commit(p)

	cases := []struct {
		name    string
		mutate  func(*testState)
		pages   []string
		dropped []string
	}{
		{"integral int", func(s *testState) { s.Count++ }, []string{"Count"}, nil},
		{"integral back to zero drops", func(s *testState) { s.Name = "" }, nil, []string{"Name"}},
		{"integral slice in place", func(s *testState) { s.Tags = []string{"x"} }, []string{"Tags"}, nil},
		{"slice element in place", func(s *testState) { s.Tags[0] = "y" }, []string{"Tags"}, nil},
		{"tracked set", func(s *testState) { s.Scores.Set("b", 20) }, []string{"Scores/b"}, nil},
		{"tracked delete", func(s *testState) { s.Scores.Delete("a") }, nil, []string{"Scores/a"}},
		{"tracked delete of absent key", func(s *testState) { s.Scores.Delete("zz") }, nil, nil},
		{"tracked replace re-arms", func(s *testState) { s.Scores = TrackedMapOf(map[string]int{"b": 20, "q": 1}) }, []string{"Scores/b", "Scores/q"}, []string{"Scores/c"}},
		{"tracked clear", func(s *testState) { s.Scores.Clear() }, nil, []string{"Scores/b", "Scores/q"}},
		{"pager in place", func(s *testState) { s.Blob.Data[5] = 'X' }, []string{"Blob/c1"}, nil},
		{"pager shrink", func(s *testState) { s.Blob.Data = s.Blob.Data[:3] }, []string{"Blob/c0", "Blob/len"}, []string{"Blob/c1", "Blob/c2"}},
		{"pager to zero", func(s *testState) { s.Blob.Data = nil }, nil, []string{"Blob/c0", "Blob/len"}},
	}
	for i, c := range cases {
		c.mutate(&st)
		p := mustPrepare(t, tr, &st, int64(10+i))
		if got := keysOf(p.Delta); !slices.Equal(got, c.pages) {
			t.Errorf("%s: pages %v, want %v", c.name, got, c.pages)
		}
		dropped := slices.Sorted(slices.Values(p.Delta.Dropped))
		if !slices.Equal(dropped, c.dropped) {
			t.Errorf("%s: dropped %v, want %v", c.name, dropped, c.dropped)
		}
		if err := tr.Commit(p); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRollbackRestoresDirtyPagesAndMarks(t *testing.T) {
	tr := newTestTracker(t, nil)
	var st testState
	st.Scores.Set("a", 1)
	st.Count = 1
	_ = tr.Commit(mustPrepare(t, tr, &st, 1))

	st.Scores.Set("b", 2)
	st.Scores.Delete("a")
	st.Count = 2
	st.Blob.Data = []byte("xy")
	p := mustPrepare(t, tr, &st, 2)
	want, wantDrop := keysOf(p.Delta), p.Delta.Dropped
	if err := tr.Rollback(p); err != nil {
		t.Fatal(err)
	}
	if err := tr.Commit(p); !errors.Is(err, ErrNotPending) {
		t.Fatalf("commit after rollback: %v", err)
	}
	p2 := mustPrepare(t, tr, &st, 3)
	if got := keysOf(p2.Delta); !slices.Equal(got, want) || !slices.Equal(p2.Delta.Dropped, wantDrop) {
		t.Fatalf("after rollback: %v/%v, want %v/%v", got, p2.Delta.Dropped, want, wantDrop)
	}
	if p2.Delta.Basis != stamp(1) {
		t.Fatalf("basis %v, want the last committed %v", p2.Delta.Basis, stamp(1))
	}
	// Marks made between Prepare and Rollback survive too.
	st.Scores.Set("c", 3)
	_ = tr.Rollback(p2)
	p3 := mustPrepare(t, tr, &st, 4)
	if got := keysOf(p3.Delta); !slices.Contains(got, "Scores/c") || !slices.Contains(got, "Scores/b") {
		t.Fatalf("after second rollback: %v", got)
	}
}

func TestPageTooLargeKeepsPreviousValue(t *testing.T) {
	tr := newTestTracker(t, &Config{MaxPageSize: 64})
	var st testState
	st.Name = "small"
	st.Scores.Set("a", 1)
	_ = tr.Commit(mustPrepare(t, tr, &st, 1))

	st.Name = strings.Repeat("x", 100)
	st.Scores.Set("b", 2)
	_, err := tr.Prepare(&st, stamp(2))
	var tooLarge *PageTooLargeError
	if !errors.As(err, &tooLarge) || !errors.Is(err, ErrPageTooLarge) || tooLarge.Key != "Name" || tooLarge.Limit != 64 {
		t.Fatalf("got %v, want a PageTooLargeError for Name", err)
	}
	if tr.Stamp() != stamp(1) {
		t.Fatalf("stamp moved to %v", tr.Stamp())
	}
	st.Name = "fits"
	p := mustPrepare(t, tr, &st, 3)
	if got := keysOf(p.Delta); !slices.Equal(got, []string{"Name", "Scores/b"}) {
		t.Fatalf("after refusal: %v (the tracked mark must survive)", got)
	}
}

func TestPrepareRules(t *testing.T) {
	tr := newTestTracker(t, nil)
	var st testState
	if _, err := tr.Prepare(st, stamp(1)); !errors.Is(err, ErrWrongType) {
		t.Errorf("non-pointer: %v", err)
	}
	if _, err := tr.Prepare(&struct{ A int }{}, stamp(1)); !errors.Is(err, ErrWrongType) {
		t.Errorf("other type: %v", err)
	}
	p := mustPrepare(t, tr, &st, 1)
	if _, err := tr.Prepare(&st, stamp(2)); !errors.Is(err, ErrPending) {
		t.Errorf("second prepare: %v", err)
	}
	st.Count = 1
	_ = tr.Commit(p)
	p = mustPrepare(t, tr, &st, 2)
	_ = tr.Commit(p)
	if _, err := tr.Prepare(&st, stamp(2)); err == nil {
		t.Errorf("a stamp not newer than the committed one was accepted")
	}
}

func TestRestoreThenDeltaIsRelative(t *testing.T) {
	tr := newTestTracker(t, nil)
	st := testState{Count: 5, Meta: map[string]string{"k": "v"}, Ratio: 2.5}
	st.Scores.Set("a", 1)
	st.Pts.Set(3, point{X: 1, L: "p"})
	st.Blob.Data = []byte("abcdefgh")
	s := NewStore()
	p := mustPrepare(t, tr, &st, 1)
	deliver(t, s, p, DefaultBatchSize)
	_ = tr.Commit(p)

	// A new owner activates from the store.
	tr2 := newTestTracker(t, nil)
	var st2 testState
	if err := tr2.Restore(&st2, s.Stamp(), s.Pages()); err != nil {
		t.Fatal(err)
	}
	if canon(t, &st2) != canon(t, &st) {
		t.Fatalf("restored %s\nwant %s", canon(t, &st2), canon(t, &st))
	}
	p2 := mustPrepare(t, tr2, &st2, 2)
	if !p2.Delta.Empty() {
		t.Fatalf("restored state is dirty: %v %v", keysOf(p2.Delta), p2.Delta.Dropped)
	}
	_ = tr2.Commit(p2)
	st2.Pts.Set(3, point{X: 2})
	st2.Blob.Data[7] = 'H'
	p3 := mustPrepare(t, tr2, &st2, 3)
	key3, _ := subKeyOf(3)
	if got, want := keysOf(p3.Delta), []string{"Blob/c1", "Pts/" + key3}; !slices.Equal(got, want) {
		t.Fatalf("pages %q, want %q", got, want)
	}
	if p3.Delta.Basis != stamp(1) {
		t.Fatalf("basis %v", p3.Delta.Basis)
	}
	if _, err := s.Apply(p3.Delta); err != nil {
		t.Fatal(err)
	}
	if canon(t, restoreFrom(t, s)) != canon(t, &st2) {
		t.Fatal("replica differs after the relative delta")
	}
}

func TestRestoreRejectsMisfitPages(t *testing.T) {
	tr := newTestTracker(t, nil)
	var st testState
	for _, pages := range [][]Page{
		{{Key: "Count/x", Data: []byte{1}}},
		{{Key: "Scores", Data: []byte{1}}},
		{{Key: "Count", Data: []byte{0xc1}}},
		{{Key: "Scores/a", Data: []byte{0xa1}}},
	} {
		if err := tr.Restore(&st, stamp(1), pages); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%v: got %v, want ErrCorrupt", pages, err)
		}
	}
	if err := tr.Restore(&st, stamp(1), []Page{{Key: "Gone", Data: []byte{1}}}); err != nil {
		t.Errorf("a page of a removed field must be ignored: %v", err)
	}
}

// A map-holding integral field is compared by decoding its committed page
// (its bytes vary with map order); the comparison must tell 0.0 from -0.0,
// inside the map and behind an interface, or the sign change is lost. An
// unchanged map of floats still ships nothing.
func TestMapOfFloatsSignChangeIsNotMissed(t *testing.T) {
	type floats struct {
		M map[string]float64
		A map[string]any
	}
	s, err := NewSchema(reflect.TypeFor[floats]())
	if err != nil {
		t.Fatal(err)
	}
	tr, err := s.NewTracker(nil)
	if err != nil {
		t.Fatal(err)
	}
	st := floats{M: map[string]float64{"a": 0, "b": 1, "c": 2}, A: map[string]any{"a": 0.0, "b": "x", "c": 2.5}}
	step := int64(1)
	prepare := func() *Pending {
		t.Helper()
		p, err := tr.Prepare(&st, stamp(step))
		if err != nil {
			t.Fatal(err)
		}
		step++
		return p
	}
	if err := tr.Commit(prepare()); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		p := prepare()
		if !p.Delta.Empty() {
			t.Fatalf("unchanged maps shipped %v", keysOf(p.Delta))
		}
		if err := tr.Commit(p); err != nil {
			t.Fatal(err)
		}
	}
	negZero := math.Copysign(0, -1)
	st.M["a"] = negZero
	p := prepare()
	if got := keysOf(p.Delta); !slices.Equal(got, []string{"M"}) {
		t.Fatalf("0.0 -> -0.0 in a map shipped %v, want [M]", got)
	}
	if err := tr.Commit(p); err != nil {
		t.Fatal(err)
	}
	st.A["a"] = negZero
	if got := keysOf(prepare().Delta); !slices.Equal(got, []string{"A"}) {
		t.Fatalf("0.0 -> -0.0 behind an interface shipped %v, want [A]", got)
	}
}
