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
	"github.com/casty-go/casty/casty/schema"
	"github.com/casty-go/casty/wire"
)

// A program's wire contract, as data (package schema says how tools use
// it): Schemas builds it from the kind registry and the wire registry.

// Schemas returns the schema of everything declared in this process so
// far: call it after package initialisation, when every Actor, Service
// and Message declaration has run.
func Schemas() schema.Schema {
	s := schema.Schema{Version: schema.Version, Kinds: []schema.Kind{}, Messages: []schema.Message{}}
	if p := kinds.byName.Load(); p != nil {
		for _, d := range *p {
			s.Kinds = append(s.Kinds, kindSchema(d))
		}
	}
	slices.SortFunc(s.Kinds, func(a, b schema.Kind) int { return strings.Compare(a.Name, b.Name) })
	for _, name := range wire.Default.Names() {
		t, _ := wire.Default.TypeOf(name)
		if d := kinds.declaredOf(name); d != nil && d.k.Type == t {
			continue // a kind's state: listed with the kind
		}
		s.Messages = append(s.Messages, schema.Message{Name: name, GoType: goTypeName(t), Fields: fieldsOf(t)})
	}
	return s
}

// WriteSchema writes Schemas as indented JSON to w, the format package
// schema documents. A program exposes its schema to CI (`castyctl schema
// check`) with a few lines in main:
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

func kindSchema(d *declared) schema.Kind {
	k := d.k
	ks := schema.Kind{Name: k.Name, GoType: goTypeName(k.Type), Service: k.Service, Replicas: d.repl.replicas,
		State: fieldsOf(k.Type), Methods: []schema.Method{}}
	if ks.State == nil {
		ks.State = []schema.Field{}
	}
	pt := reflect.PointerTo(k.Type)
	for i := range pt.NumMethod() {
		m := k.MethodByName(pt.Method(i).Name)
		if m == nil {
			continue
		}
		ms := schema.Method{Name: m.Name, Shape: shapeName(m.Shape)}
		if m.Arg != nil {
			ms.Arg = typeSpelling(m.Arg)
		}
		if m.Result != nil {
			ms.Result = typeSpelling(m.Result)
		}
		ks.Methods = append(ks.Methods, ms)
	}
	slices.SortFunc(ks.Methods, func(a, b schema.Method) int { return strings.Compare(a.Name, b.Name) })
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
func fieldsOf(t reflect.Type) []schema.Field {
	out := []schema.Field{}
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
		out = append(out, schema.Field{Name: name, Type: spelled})
	}
	slices.SortFunc(out, func(a, b schema.Field) int { return strings.Compare(a.Name, b.Name) })
	return out
}

var timeType = reflect.TypeFor[time.Time]()

// typeSpelling spells t as schema.Field documents.
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
