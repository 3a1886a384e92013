package pager

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestExplainRegimes(t *testing.T) {
	e, err := Explain(reflect.TypeFor[*testState]())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Regime{"Count": Integral, "Name": Integral, "Tags": Integral, "Meta": Integral,
		"Scores": Tracked, "Pts": Tracked, "Blob": Paged, "Ratio": Integral, "Series": Integral}
	if len(e) != len(want) {
		t.Fatalf("%d fields explained, want %d:\n%s", len(e), len(want), e)
	}
	for _, r := range e {
		if want[r.Field] != r.Regime {
			t.Errorf("%s: %v, want %v", r.Field, r.Regime, want[r.Field])
		}
	}
	s := e.String()
	for _, frag := range []string{"FIELD", "REGIME", "Scores", "tracked", "Blob", "paged", "Count", "integral"} {
		if !strings.Contains(s, frag) {
			t.Errorf("table lacks %q:\n%s", frag, s)
		}
	}
}

type tagged struct {
	A    int    `msgpack:"a"`
	Skip int    `msgpack:"-"`
	B    string `msgpack:",omitempty"`
	c    int
}

func TestSchemaKeysFollowMsgpackNames(t *testing.T) {
	e, err := Explain(reflect.TypeFor[tagged]())
	if err != nil {
		t.Fatal(err)
	}
	if len(e) != 2 || e[0].Key != "a" || e[1].Key != "B" {
		t.Fatalf("keys: %+v", e)
	}
}

type (
	badSliceV struct {
		Orders TrackedMap[string, []int]
	}
	badPtrV struct {
		Orders TrackedMap[string, *int]
	}
	badNestedV struct {
		Orders TrackedMap[string, struct{ M map[string]int }]
	}
	badChan struct{ C chan int }
	badKey  struct {
		A int `msgpack:"x/y"`
	}
	dupKey struct {
		A int `msgpack:"B"`
		B int
	}
	goodV struct {
		Orders TrackedMap[string, struct {
			At  time.Time
			Qty [3]int
			Tag string
		}]
	}
)

func TestSchemaErrorsNameTheField(t *testing.T) {
	for _, c := range []struct {
		typ   reflect.Type
		field string
		frag  string
	}{
		{reflect.TypeFor[badSliceV](), "Orders", "slice"},
		{reflect.TypeFor[badPtrV](), "Orders", "pointer"},
		{reflect.TypeFor[badNestedV](), "Orders", "map"},
		{reflect.TypeFor[badChan](), "C", "chan"},
		{reflect.TypeFor[badKey](), "A", "'/'"},
		{reflect.TypeFor[dupKey](), "B", "already used"},
		{reflect.TypeFor[int](), "int", "struct"},
	} {
		_, err := NewTracker(c.typ)
		var se *SchemaError
		if !errors.As(err, &se) || !errors.Is(err, ErrSchema) || se.Field != c.field || !strings.Contains(err.Error(), c.frag) {
			t.Errorf("%v: got %v, want a SchemaError on %s mentioning %q", c.typ, err, c.field, c.frag)
		}
	}
	if _, err := NewTracker(reflect.TypeFor[goodV]()); err != nil {
		t.Errorf("immutable struct value refused: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (&Config{MaxPageSize: -1}).Validate(); !errors.Is(err, ErrConfig) {
		t.Errorf("negative page size: %v", err)
	}
	if err := (&Config{BatchSize: -1}).Validate(); !errors.Is(err, ErrConfig) {
		t.Errorf("negative batch: %v", err)
	}
	c := DefaultConfig()
	if err := c.Validate(); err != nil || c.MaxPageSize != 4<<20 || c.BatchSize != 256<<10 {
		t.Errorf("defaults: %+v %v", c, err)
	}
	if (Config{}).withDefaults() != DefaultConfig() {
		t.Error("zero fields do not mean default")
	}
}

func TestStampOrder(t *testing.T) {
	a := Stamp{Wall: 1, Counter: 5, Node: [16]byte{9}}
	for _, c := range []struct {
		b    Stamp
		want int
	}{
		{Stamp{Wall: 2}, -1},
		{Stamp{Wall: 1, Counter: 6}, -1},
		{Stamp{Wall: 1, Counter: 5, Node: [16]byte{9, 1}}, -1},
		{a, 0},
		{Stamp{Wall: 1, Counter: 4, Node: [16]byte{0xff}}, 1},
	} {
		if got := a.Compare(c.b); got != c.want || c.b.Compare(a) != -c.want {
			t.Errorf("%v vs %v: %d, want %d", a, c.b, got, c.want)
		}
	}
}
