package wire

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"
)

type Line struct {
	Sku string
	Qty int
}

type Order struct {
	ID      string
	Lines   []Line
	Placed  time.Time
	Blob    []byte
	Tags    map[string]int
	ByCode  map[int64]string
	Parent  *Order // self-reference
	Window  [3]float64
	private chan int // unexported: transient, ignored
	Skipped func()   `msgpack:"-"`
}

func TestRegisterValid(t *testing.T) {
	r := NewRegistry()
	if _, err := r.Register(reflect.TypeFor[Line](), ""); err != nil {
		t.Fatal(err)
	}
	name, err := r.Register(reflect.TypeFor[Order](), "shop.Order")
	if err != nil {
		t.Fatal(err)
	}
	if name != "shop.Order" {
		t.Fatalf("name = %q", name)
	}
	if got, _ := r.TypeOf("shop.Order"); got != reflect.TypeFor[Order]() {
		t.Fatalf("TypeOf = %v", got)
	}
	if got, _ := r.NameOf(reflect.TypeFor[Line]()); got != "github.com/casty-go/casty/wire.Line" {
		t.Fatalf("default name = %q", got)
	}
	// Registering the same type under the same name again is a no-op.
	if _, err := r.Register(reflect.TypeFor[Order](), "shop.Order"); err != nil {
		t.Fatal(err)
	}
}

func TestRegisterRejectsWithFieldPath(t *testing.T) {
	type Bad1 struct{ Lines []struct{ Sku chan int } }
	type Bad2 struct{ C complex128 }
	type Bad3 struct{ F func() }
	type Bad4 struct{ P unsafe.Pointer }
	type Bad5 struct{ A any }
	type Bad6 struct{ M map[float64]int }
	type Bad8 struct{ U uintptr }
	type Bad9 struct {
		Deep map[string][]*[2]struct{ E error }
	}
	cases := []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[Bad1](), "shop.Bad.Lines[].Sku: chan int is not serializable"},
		{reflect.TypeFor[Bad2](), "shop.Bad.C: complex128 is not serializable"},
		{reflect.TypeFor[Bad3](), "shop.Bad.F: func() is not serializable"},
		{reflect.TypeFor[Bad4](), "shop.Bad.P: unsafe.Pointer is not serializable"},
		{reflect.TypeFor[Bad5](), "shop.Bad.A: interface {} is not serializable"},
		{reflect.TypeFor[Bad6](), "shop.Bad.M: map[float64]int is not serializable: map keys must be strings or integers"},
		{reflect.TypeFor[Bad8](), "shop.Bad.U: uintptr is not serializable"},
		{reflect.TypeFor[Bad9](), "shop.Bad.Deep{}[][].E: error is not serializable"},
	}
	for _, c := range cases {
		r := NewRegistry()
		_, err := r.Register(c.typ, "shop.Bad")
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%v: got %v, want prefix %q", c.typ, err, c.want)
		}
		if !errors.Is(err, ErrNotSerializable) {
			t.Errorf("%v: %v is not ErrNotSerializable", c.typ, err)
		}
		if _, ok := r.TypeOf("shop.Bad"); ok {
			t.Errorf("%v: failed registration left a name behind", c.typ)
		}
	}
}

// One error names every field that cannot cross the wire, each with the
// way to leave it out, not only the first.
func TestRegisterNamesEveryBadField(t *testing.T) {
	type Bad struct {
		F    func()
		OK   int
		C    chan int
		Deep struct{ U uintptr }
	}
	_, err := NewRegistry().Register(reflect.TypeFor[Bad](), "shop.Bad")
	want := []string{
		"shop.Bad.F: func() is not serializable (to leave the field out, unexport it or tag it `msgpack:\"-\"`)",
		"shop.Bad.C: chan int is not serializable (to leave the field out, unexport it or tag it `msgpack:\"-\"`)",
		"shop.Bad.Deep.U: uintptr is not serializable (to leave the field out, unexport it or tag it `msgpack:\"-\"`)",
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Fatalf("got %v, want:\n%s", err, strings.Join(want, "\n"))
	}
	var te *TypeError
	if !errors.Is(err, ErrNotSerializable) || !errors.As(err, &te) || te.Path != "shop.Bad.F" {
		t.Fatalf("%v: want ErrNotSerializable and the first *TypeError at shop.Bad.F", err)
	}
}

// A type may be registered before the types it uses: Unregistered names,
// with its path, each one still missing, and nothing once it is there.
func TestRegisterInAnyOrder(t *testing.T) {
	type Item struct{ N int }
	type Basket struct {
		Items []Item
		ByID  map[string]*Item
		When  time.Time
	}
	type Shelf struct{ B Basket }
	r := NewRegistry()
	if _, err := r.Register(reflect.TypeFor[Shelf](), "shop.Shelf"); err != nil {
		t.Fatalf("before what it uses: %v", err)
	}
	if err := r.ValidateValue(reflect.TypeFor[[]Basket](), "Fill argument"); err != nil {
		t.Fatalf("argument before its type: %v", err)
	}
	got := r.Unregistered(reflect.TypeFor[Shelf](), "shop.Shelf")
	if len(got) != 1 || got[0].Error() != "shop.Shelf.B: wire.Basket is not registered" || !errors.Is(got[0], ErrNotRegistered) {
		t.Fatalf("Shelf before Basket: %v", got)
	}
	if _, err := r.Register(reflect.TypeFor[Basket](), "shop.Basket"); err != nil {
		t.Fatal(err)
	}
	got = r.Unregistered(reflect.TypeFor[[]Basket](), "Fill argument")
	if len(got) != 1 || got[0].Error() != "Fill argument[].Items[]: wire.Item is not registered" {
		t.Fatalf("Basket before Item: %v", got)
	}
	if _, err := r.Register(reflect.TypeFor[Item](), "shop.Item"); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[Shelf](), reflect.TypeFor[[]Basket](), reflect.TypeFor[int]()} {
		if got := r.Unregistered(typ, "x"); got != nil {
			t.Fatalf("%v, all registered: %v", typ, got)
		}
	}
	// What cannot cross the wire is refused at once, whatever the order.
	type Late struct{ C chan int }
	type Early struct{ L Late }
	if _, err := r.Register(reflect.TypeFor[Early](), "shop.Early"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Register(reflect.TypeFor[Late](), "shop.Late"); !errors.Is(err, ErrNotSerializable) {
		t.Fatalf("a chan field: %v", err)
	}
}

func TestRegisterDuplicates(t *testing.T) {
	type A struct{ X int }
	type B struct{ Y int }
	r := NewRegistry()
	if _, err := r.Register(reflect.TypeFor[A](), "n"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Register(reflect.TypeFor[B](), "n"); !errors.Is(err, ErrDuplicateName) {
		t.Fatalf("same name, other type: %v", err)
	}
	if _, err := r.Register(reflect.TypeFor[A](), "other"); !errors.Is(err, ErrDuplicateName) {
		t.Fatalf("same type, other name: %v", err)
	}
	if _, err := r.Register(reflect.TypeFor[int](), ""); !errors.Is(err, ErrNotSerializable) {
		t.Fatalf("non-struct: %v", err)
	}
}

func TestValidateValue(t *testing.T) {
	r := NewRegistry()
	for _, typ := range []reflect.Type{reflect.TypeFor[int](), reflect.TypeFor[string](), reflect.TypeFor[[]byte](),
		reflect.TypeFor[map[string][]int](), reflect.TypeFor[time.Time](), reflect.TypeFor[*float64]()} {
		if err := r.ValidateValue(typ, "arg"); err != nil {
			t.Errorf("%v: %v", typ, err)
		}
	}
	if err := r.ValidateValue(reflect.TypeFor[chan int](), "Greet.arg"); err == nil || err.Error() != "Greet.arg: chan int is not serializable" {
		t.Fatalf("got %v", err)
	}
}
