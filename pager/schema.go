package pager

import (
	"fmt"
	"reflect"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// Regime is how a state field is paged, chosen statically from its type.
type Regime int

// The regimes.
const (
	// Integral is the default: one page per field holding its whole
	// encoding, re-encoded after each handler and byte-compared with the last
	// committed page (a value of an immutable comparable type is compared
	// with == first, skipping the encode when unchanged).
	Integral Regime = iota
	// Tracked is the regime of TrackedMap fields: one page per entry; the
	// map's mutators mark the touched keys.
	Tracked
	// Paged is the regime of fields whose type implements Pager: the pager
	// decides the sub-pages and how changes are detected.
	Paged
)

// String returns "integral", "tracked" or "paged".
func (r Regime) String() string {
	switch r {
	case Integral:
		return "integral"
	case Tracked:
		return "tracked"
	case Paged:
		return "paged"
	}
	return fmt.Sprintf("Regime(%d)", int(r))
}

var (
	pagerType   = reflect.TypeFor[Pager]()
	trackedType = reflect.TypeFor[trackedMap]()
	timeType    = reflect.TypeFor[time.Time]()
)

// field is one state field of a Schema.
type field struct {
	goName string       // Go field name
	key    string       // page key (msgpack name)
	index  int          // struct field index
	typ    reflect.Type // field type
	regime Regime
	fastEq bool   // Integral and immutable comparable: compare with == first
	ptrPgr bool   // Paged through *T (the field's type is T)
	hasMap bool   // Integral holding a map: equal values may encode differently
	flat   bool   // Integral slice of plain scalars: compared with a copy of its memory
	zero   []byte // Integral: encoding of the zero value (its page is absent)
	detail string
}

// Schema is the static paging plan of a state struct type: which exported
// fields it has, under which page key, in which regime. It is immutable and
// safe for concurrent use.
type Schema struct {
	typ    reflect.Type
	fields []field
	byKey  map[string]int
}

// NewSchema analyses a struct type (or pointer to struct). Exported fields
// are state; unexported fields and fields tagged `msgpack:"-"` are not. A
// field's page key is its msgpack name (the tag's name, else the Go name).
// It returns a *SchemaError naming the first field that cannot be paged: a
// TrackedMap with a mutable value type, a channel or function, a key
// containing '/', two fields with one key.
func NewSchema(t reflect.Type) (*Schema, error) {
	if t == nil {
		return nil, &SchemaError{Field: "(nil)", Reason: "no type"}
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, &SchemaError{Field: t.String(), Reason: "state must be a struct"}
	}
	s := &Schema{typ: t, byKey: map[string]int{}}
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		key := sf.Name
		if tag, ok := sf.Tag.Lookup("msgpack"); ok {
			name, _, _ := strings.Cut(tag, ",")
			if name == "-" {
				continue
			}
			if name != "" {
				key = name
			}
		}
		f := field{goName: sf.Name, key: key, index: i, typ: sf.Type}
		if strings.Contains(key, "/") {
			return nil, &SchemaError{Field: sf.Name, Reason: fmt.Sprintf("page key %q contains '/'", key)}
		}
		if prev, dup := s.byKey[key]; dup {
			return nil, &SchemaError{Field: sf.Name, Reason: fmt.Sprintf("page key %q already used by field %s", key, s.fields[prev].goName)}
		}
		if err := classify(&f); err != nil {
			return nil, err
		}
		s.byKey[key] = len(s.fields)
		s.fields = append(s.fields, f)
	}
	return s, nil
}

func classify(f *field) error {
	t := f.typ
	switch {
	case reflect.PointerTo(t).Implements(trackedType):
		f.regime = Tracked
		kt, vt := reflect.New(t).Interface().(trackedMap).tmTypes()
		if why := mutable(vt); why != "" {
			return &SchemaError{Field: f.goName, Reason: fmt.Sprintf("TrackedMap value type %s is mutable (%s); use an immutable value type or a plain map (integral)", vt, why)}
		}
		if why := unencodable(kt); why != "" {
			return &SchemaError{Field: f.goName, Reason: fmt.Sprintf("TrackedMap key type %s cannot be encoded (%s)", kt, why)}
		}
		if why := ambiguousKey(kt); why != "" {
			return &SchemaError{Field: f.goName, Reason: fmt.Sprintf("TrackedMap key type %s does not encode one to one (%s): two keys could share a page; use strings, integers, bools, or arrays and structs of them with exported fields only", kt, why)}
		}
		f.detail = fmt.Sprintf("1 page per entry (%s/<key>)", f.key)
		return nil
	case t.Kind() == reflect.Pointer && t.Elem().Implements(trackedType):
		return &SchemaError{Field: f.goName, Reason: "use TrackedMap by value, not through a pointer"}
	case t.Implements(pagerType):
		f.regime = Paged
		f.detail = describePages(t, f.key)
		return nil
	case reflect.PointerTo(t).Implements(pagerType):
		f.regime, f.ptrPgr = Paged, true
		f.detail = describePages(t, f.key)
		return nil
	}
	if why := unencodable(t); why != "" {
		return &SchemaError{Field: f.goName, Reason: fmt.Sprintf("type %s cannot be encoded (%s)", t, why)}
	}
	f.regime = Integral
	zero, err := encodeValue(reflect.Zero(t).Interface())
	if err != nil {
		return &SchemaError{Field: f.goName, Reason: fmt.Sprintf("type %s cannot be encoded (%v)", t, err)}
	}
	f.zero = zero
	if mutable(t) == "" && t.Comparable() && !hasFloat(t) {
		f.fastEq = true
		f.detail = "1 page, compared by value, re-encoded when changed"
	} else if t.Kind() == reflect.Slice && plainScalar(t.Elem()) {
		f.flat = true
		f.detail = "1 page, compared with a copy of its memory, re-encoded when changed"
	} else {
		f.detail = "1 page, re-encoded and byte-compared"
	}
	if containsMap(t) {
		f.hasMap = true
		f.detail += " (map order: decoded and compared when bytes differ)"
	}
	return nil
}

// mutable returns why values of t can change without an assignment to the
// field holding them, or "" when t is immutable.
func mutable(t reflect.Type) string {
	return mutableSeen(t, map[reflect.Type]bool{})
}

func mutableSeen(t reflect.Type, seen map[reflect.Type]bool) string {
	if t == timeType {
		return ""
	}
	if seen[t] {
		return ""
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.String:
		return ""
	case reflect.Array:
		return mutableSeen(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if why := mutableSeen(t.Field(i).Type, seen); why != "" {
				return fmt.Sprintf("field %s: %s", t.Field(i).Name, why)
			}
		}
		return ""
	case reflect.Slice:
		return "slice"
	case reflect.Map:
		return "map"
	case reflect.Pointer, reflect.UnsafePointer:
		return "pointer"
	case reflect.Interface:
		return "interface"
	}
	return t.Kind().String()
}

// unencodable returns why t cannot be msgpack-encoded, or "".
func unencodable(t reflect.Type) string {
	return unencodableSeen(t, map[reflect.Type]bool{})
}

func unencodableSeen(t reflect.Type, seen map[reflect.Type]bool) string {
	if seen[t] {
		return ""
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Chan, reflect.Func, reflect.UnsafePointer, reflect.Complex64, reflect.Complex128:
		return t.Kind().String()
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return unencodableSeen(t.Elem(), seen)
	case reflect.Map:
		if why := unencodableSeen(t.Key(), seen); why != "" {
			return why
		}
		return unencodableSeen(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() || sf.Tag.Get("msgpack") == "-" {
				continue
			}
			if why := unencodableSeen(sf.Type, seen); why != "" {
				return fmt.Sprintf("field %s: %s", sf.Name, why)
			}
		}
	}
	return ""
}

var (
	msgpackMarshaler     = reflect.TypeFor[msgpack.Marshaler]()
	msgpackCustomEncoder = reflect.TypeFor[msgpack.CustomEncoder]()
)

// ambiguousKey says why two distinct map keys of type t could encode to the
// same bytes — and so share a page, one entry silently replacing the other
// — or "" when they cannot. Unexported fields are not encoded; an
// interface encodes int(1) and int8(1) alike; a pointer encodes what it
// points to, not its identity; every NaN is a distinct key with the same
// encoding; a type with its own encoding cannot be checked.
func ambiguousKey(t reflect.Type) string {
	for _, c := range []reflect.Type{t, reflect.PointerTo(t)} {
		if c.Implements(msgpackMarshaler) || c.Implements(msgpackCustomEncoder) {
			return t.String() + " encodes itself"
		}
	}
	switch t.Kind() {
	case reflect.Interface:
		return "an interface"
	case reflect.Pointer:
		return "a pointer"
	case reflect.Float32, reflect.Float64:
		return "a float: every NaN is its own key"
	case reflect.Array:
		return ambiguousKey(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() || sf.Tag.Get("msgpack") == "-" {
				return "field " + sf.Name + " is not encoded"
			}
			if why := ambiguousKey(sf.Type); why != "" {
				return "field " + sf.Name + ": " + why
			}
		}
	}
	return ""
}

// Type returns the struct type the schema describes.
func (s *Schema) Type() reflect.Type { return s.typ }

// Explain returns each state field's regime, in declaration order.
func (s *Schema) Explain() Explanation {
	out := make(Explanation, len(s.fields))
	for i, f := range s.fields {
		out[i] = FieldRegime{Field: f.goName, Key: f.key, Type: f.typ.String(), Regime: f.regime, Detail: f.detail}
	}
	return out
}

// FieldRegime is one row of an Explanation.
type FieldRegime struct {
	Field  string // Go field name
	Key    string // page key (the msgpack name)
	Type   string // Go type
	Regime Regime // how changes are detected
	Detail string // how the field is paged and compared
}

// Explanation lists the regime of every state field of a type.
type Explanation []FieldRegime

// String renders the explanation as an aligned table, one field per line.
func (e Explanation) String() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "FIELD\tKEY\tTYPE\tREGIME\tPAGES")
	for _, r := range e {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.Field, r.Key, r.Type, r.Regime, r.Detail)
	}
	w.Flush()
	return b.String()
}

// Explain analyses the state struct type t (see NewSchema) and returns the
// regime of each of its fields.
func Explain(t reflect.Type) (Explanation, error) {
	s, err := NewSchema(t)
	if err != nil {
		return nil, err
	}
	return s.Explain(), nil
}

// containsMap reports whether values of t may hold a map, whose msgpack
// encoding order is not deterministic.
func containsMap(t reflect.Type) bool {
	return containsMapSeen(t, map[reflect.Type]bool{})
}

func containsMapSeen(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Map, reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return containsMapSeen(t.Elem(), seen)
	case reflect.Struct:
		if reflect.PointerTo(t).Implements(trackedType) {
			return true
		}
		for i := range t.NumField() {
			if containsMapSeen(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}

// describePages returns a Pager type's own description, if it has one.
func describePages(t reflect.Type, key string) string {
	var v reflect.Value
	if t.Kind() == reflect.Pointer {
		v = reflect.New(t.Elem())
	} else {
		v = reflect.New(t)
	}
	if d, ok := v.Interface().(PageDescriber); ok {
		return fmt.Sprintf("%s (%s/...)", d.DescribePages(), key)
	}
	return fmt.Sprintf("pages decided by %s (%s/<sub>)", t, key)
}

// plainScalar reports whether t is a number or bool, or an array of those:
// a type whose memory holds its whole value and no pointer or padding, so
// equal memory means an equal value (and an equal encoding).
func plainScalar(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	case reflect.Array:
		return plainScalar(t.Elem())
	}
	return false
}

// hasFloat reports whether t holds a float or complex, whose == is not
// identity (0.0 == -0.0, NaN != NaN): such values are compared by encoding.
func hasFloat(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	case reflect.Array:
		return hasFloat(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasFloat(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}
