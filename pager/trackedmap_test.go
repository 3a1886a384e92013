package pager

import (
	"errors"
	"maps"
	"reflect"
	"strings"
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

// A TrackedMap's key becomes its entry's page key through its encoding, so
// a key type whose distinct values can encode alike is refused: one entry
// would silently replace another on every replica.
func TestTrackedMapRefusesKeysThatDoNotEncodeOneToOne(t *testing.T) {
	type hidden struct {
		A int
		b int
	}
	type nested struct{ In hidden }
	type plain struct {
		A int
		B string
		C [2]bool
	}
	refused := map[string]reflect.Type{
		"unexported field": reflect.TypeFor[struct{ M TrackedMap[hidden, int] }](),
		"nested":           reflect.TypeFor[struct{ M TrackedMap[nested, int] }](),
		"interface":        reflect.TypeFor[struct{ M TrackedMap[any, int] }](),
		"pointer":          reflect.TypeFor[struct{ M TrackedMap[*int, int] }](),
		"float":            reflect.TypeFor[struct{ M TrackedMap[float64, int] }](),
	}
	for name, typ := range refused {
		_, err := NewSchema(typ)
		var se *SchemaError
		if !errors.As(err, &se) || se.Field != "M" || !strings.Contains(se.Reason, "one to one") {
			t.Errorf("%s key: %v, want a SchemaError on M", name, err)
		}
	}
	type ok struct {
		S TrackedMap[sku, int]
		I TrackedMap[int64, int]
		P TrackedMap[plain, int]
	}
	if _, err := NewSchema(reflect.TypeFor[ok]()); err != nil {
		t.Fatalf("keys that encode one to one: %v", err)
	}
}
