package pager

import (
	"maps"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func TestTrackedMapBehavesLikeAMap(t *testing.T) {
	var m TrackedMap[string, int]
	if m.Len() != 0 || m.Has("a") {
		t.Fatal("zero map not empty")
	}
	m.Set("a", 1)
	m.SetAll(maps.All(map[string]int{"b": 2, "c": 3}))
	m.Update("a", func(v int, ok bool) (int, bool) { return v + 10, ok })
	m.Update("c", func(int, bool) (int, bool) { return 0, false })
	m.Delete("b")
	if got := m.Map(); !maps.Equal(got, map[string]int{"a": 11}) {
		t.Fatalf("entries %v", got)
	}
	n := 0
	for k, v := range m.All() {
		if k != "a" || v != 11 {
			t.Fatalf("All yields %s=%d", k, v)
		}
		n++
	}
	for range m.Keys() {
		n++
	}
	if n != 2 {
		t.Fatal("iteration count")
	}
	c := m.Clone()
	c.Set("z", 1)
	if m.Has("z") {
		t.Fatal("Clone shares entries")
	}
	m.Clear()
	if m.Len() != 0 {
		t.Fatal("Clear left entries")
	}
}

func TestTrackedMapEncodesAsPlainMap(t *testing.T) {
	type withTracked struct{ M TrackedMap[string, int] }
	type withPlain struct{ M map[string]int }
	var a withTracked
	a.M.Set("x", 1)
	b, err := msgpack.Marshal(&a)
	if err != nil {
		t.Fatal(err)
	}
	var p withPlain
	if err := msgpack.Unmarshal(b, &p); err != nil || p.M["x"] != 1 {
		t.Fatalf("as plain map: %v %v", p, err)
	}
	var back withTracked
	b2, _ := msgpack.Marshal(&p)
	if err := msgpack.Unmarshal(b2, &back); err != nil || !maps.Equal(back.M.Map(), map[string]int{"x": 1}) {
		t.Fatalf("back: %v %v", back.M.Map(), err)
	}
}

type sku string

func TestTrackedMapKeysOfAStringKindAreReadable(t *testing.T) {
	type inv struct{ Stock TrackedMap[sku, int] }
	tr := newTrackerFor[inv](t)
	var st inv
	st.Stock.Set("apple", 1)
	p, err := tr.Prepare(&st, stamp(1))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Delta.Pages) != 1 || p.Delta.Pages[0].Key != "Stock/apple" {
		t.Fatalf("pages %+v", p.Delta.Pages)
	}
	var back inv
	if err := tr.Restore(&back, stamp(1), p.Delta.Pages); err != nil {
		t.Fatal(err)
	}
	if v, ok := back.Stock.Get("apple"); !ok || v != 1 {
		t.Fatalf("restored %v", back.Stock.Map())
	}
}

func newTrackerFor[T any](t *testing.T) *Tracker {
	t.Helper()
	tr, err := NewTracker(reflect.TypeFor[T]())
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
