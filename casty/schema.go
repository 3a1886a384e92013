package casty

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/wire"
)

// Schemas: a program's wire contract, as data. Every node of a rolling
// deploy must agree on it where it matters (wire/SPEC.md, "Schema
// evolution"): a field keeps its type, a wire name keeps its meaning, a
// kind keeps its replica count. A program writes its schema with
// WriteSchema (typically behind a flag of its own, e.g. -casty-schema),
// and `castyctl schema check OLD NEW` compares two of them in CI.

// SchemaVersion is the version of the Schema format WriteSchema writes.
const SchemaVersion = 1

// Schema describes every actor kind, service and registered message of a
// process. It is stable: sorted by name, and types are spelled the same
// way on every platform and Go version, so two schemas of unchanged code
// are byte-identical in JSON.
type Schema struct {
	Version  int             `json:"version"`
	Kinds    []KindSchema    `json:"kinds"`
	Messages []MessageSchema `json:"messages"`
}

// KindSchema is one actor kind or service.
type KindSchema struct {
	Name     string         `json:"name"`    // wire name
	GoType   string         `json:"go_type"` // Go type, informative only
	Service  bool           `json:"service,omitempty"`
	Replicas int            `json:"replicas"`
	State    []FieldSchema  `json:"state"` // exported fields (none for a service)
	Methods  []MethodSchema `json:"methods"`
}

// MethodSchema is one handler.
type MethodSchema struct {
	Name   string `json:"name"`
	Shape  string `json:"shape"`            // "unary", "server-stream", "client-stream", "duplex"
	Arg    string `json:"arg,omitempty"`    // argument (or element) type; empty for none
	Result string `json:"result,omitempty"` // result (or element) type; empty for error only
}

// MessageSchema is one registered message struct.
type MessageSchema struct {
	Name   string        `json:"name"`    // wire name
	GoType string        `json:"go_type"` // Go type, informative only
	Fields []FieldSchema `json:"fields"`
}

// FieldSchema is one encoded field: its wire name (the Go name or its
// msgpack tag) and its type.
//
// Types are spelled: bool, string, int, int8 … int64, uint … uint64,
// float32, float64, bytes ([]byte), time (time.Time), []T (slices and
// arrays: both encode as arrays), map[K]V, msg(NAME) for a registered
// message, struct{name T; …} for an anonymous or embedded struct, and
// custom(GoType) for a type that encodes itself. A pointer is spelled as
// its pointee: it encodes as the pointee or nil.
type FieldSchema struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// Schemas returns the schema of everything declared in this process so
// far: call it after package initialisation, when every Actor, Service
// and Message declaration has run.
func Schemas() Schema {
	s := Schema{Version: SchemaVersion, Kinds: []KindSchema{}, Messages: []MessageSchema{}}
	if p := kinds.byName.Load(); p != nil {
		for _, d := range *p {
			s.Kinds = append(s.Kinds, kindSchema(d))
		}
	}
	slices.SortFunc(s.Kinds, func(a, b KindSchema) int { return strings.Compare(a.Name, b.Name) })
	for _, name := range wire.Default.Names() {
		t, _ := wire.Default.TypeOf(name)
		if d := kinds.declaredOf(name); d != nil && d.k.Type == t {
			continue // a kind's state: listed with the kind
		}
		s.Messages = append(s.Messages, MessageSchema{Name: name, GoType: goTypeName(t), Fields: fieldsOf(t)})
	}
	return s
}

// WriteSchema writes Schemas as indented JSON to w. A program exposes its
// schema to CI with a few lines in main:
//
//	if len(os.Args) == 2 && os.Args[1] == "-casty-schema" {
//		if err := casty.WriteSchema(os.Stdout); err != nil {
//			log.Fatal(err)
//		}
//		return
//	}
func WriteSchema(w io.Writer) error {
	b, err := json.MarshalIndent(Schemas(), "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func kindSchema(d *declared) KindSchema {
	k := d.k
	ks := KindSchema{Name: k.Name, GoType: goTypeName(k.Type), Service: k.Service, Replicas: d.repl.replicas,
		State: fieldsOf(k.Type), Methods: []MethodSchema{}}
	if ks.State == nil {
		ks.State = []FieldSchema{}
	}
	pt := reflect.PointerTo(k.Type)
	for i := range pt.NumMethod() {
		m := k.MethodByName(pt.Method(i).Name)
		if m == nil {
			continue
		}
		ms := MethodSchema{Name: m.Name, Shape: shapeName(m.Shape)}
		if m.Arg != nil {
			ms.Arg = typeSpelling(m.Arg)
		}
		if m.Result != nil {
			ms.Result = typeSpelling(m.Result)
		}
		ks.Methods = append(ks.Methods, ms)
	}
	slices.SortFunc(ks.Methods, func(a, b MethodSchema) int { return strings.Compare(a.Name, b.Name) })
	return ks
}

func shapeName(s actor.Shape) string {
	switch s {
	case actor.Unary:
		return "unary"
	case actor.ServerStream:
		return "server-stream"
	case actor.ClientStream:
		return "client-stream"
	case actor.DuplexStream:
		return "duplex"
	}
	return fmt.Sprintf("shape(%d)", s)
}

func goTypeName(t reflect.Type) string {
	if t.PkgPath() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}

// fieldsOf lists the encoded fields of the struct type t, sorted by name.
func fieldsOf(t reflect.Type) []FieldSchema {
	out := []FieldSchema{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("msgpack")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name := f.Name
		if n, _, _ := strings.Cut(tag, ","); n != "" {
			name = n
		}
		ft := f.Type
		spelled := typeSpelling(ft)
		if f.Anonymous && ft.Kind() == reflect.Struct {
			spelled = structSpelling(ft) // wire/SPEC.md: a field named after the embedded type
		}
		out = append(out, FieldSchema{Name: name, Type: spelled})
	}
	slices.SortFunc(out, func(a, b FieldSchema) int { return strings.Compare(a.Name, b.Name) })
	return out
}

var timeType = reflect.TypeFor[time.Time]()

// typeSpelling spells t as FieldSchema documents.
func typeSpelling(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == timeType {
		return "time"
	}
	if name, ok := wire.Default.NameOf(t); ok {
		return "msg(" + name + ")"
	}
	switch t.Kind() {
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes"
		}
		return "[]" + typeSpelling(t.Elem())
	case reflect.Array:
		return "[]" + typeSpelling(t.Elem())
	case reflect.Map:
		return "map[" + typeSpelling(t.Key()) + "]" + typeSpelling(t.Elem())
	case reflect.Struct:
		if t.Name() != "" {
			return "custom(" + goTypeName(t) + ")"
		}
		return structSpelling(t)
	}
	return t.Kind().String()
}

func structSpelling(t reflect.Type) string {
	var b strings.Builder
	b.WriteString("struct{")
	for i, f := range fieldsOf(t) {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.Name + " " + f.Type)
	}
	b.WriteString("}")
	return b.String()
}
