package casty_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/schema"
)

// SchemaLine is a registered message.
type SchemaLine struct {
	SKU   string
	Qty   int32 `msgpack:"q"`
	Note  *string
	Extra map[string][]float64
	When  time.Time
	Raw   []byte
	skip  int //nolint:unused // unexported: not encoded
	Omit  int `msgpack:"-"`
}

var _ = casty.Message[SchemaLine](casty.Name("test.schema.Line"))

// SchemaCart is an actor whose state refers to the message.
type SchemaCart struct {
	Lines []SchemaLine
	Meta  struct{ Owner string }
}

func (c *SchemaCart) Add(_ context.Context, l SchemaLine) (int, error) {
	c.Lines = append(c.Lines, l)
	return len(c.Lines), nil
}

func (c *SchemaCart) Clear(context.Context) error { c.Lines = nil; return nil }

var _ = casty.Actor[SchemaCart](casty.Name("test.schema.Cart"), casty.Replicas(3))

// Schemas describes declared kinds and registered messages by wire name,
// fields by wire name with their wire types, and is byte-stable.
func TestSchemasDescribeKindsAndMessages(t *testing.T) {
	s := casty.Schemas()
	if s.Version != schema.Version {
		t.Errorf("version %d, want %d", s.Version, schema.Version)
	}
	i := slices.IndexFunc(s.Messages, func(m schema.Message) bool { return m.Name == "test.schema.Line" })
	if i < 0 {
		t.Fatalf("message test.schema.Line missing: %+v", s.Messages)
	}
	want := []schema.Field{
		{Name: "Extra", Type: "map[string][]float64"}, {Name: "Note", Type: "string"},
		{Name: "Raw", Type: "bytes"}, {Name: "SKU", Type: "string"}, {Name: "When", Type: "time"}, {Name: "q", Type: "int32"},
	}
	if got := s.Messages[i].Fields; !slices.Equal(got, want) {
		t.Errorf("fields\n got %+v\nwant %+v", got, want)
	}
	k := slices.IndexFunc(s.Kinds, func(k schema.Kind) bool { return k.Name == "test.schema.Cart" })
	if k < 0 {
		t.Fatalf("kind test.schema.Cart missing")
	}
	cart := s.Kinds[k]
	if cart.Replicas != 3 || cart.Service {
		t.Errorf("cart: replicas %d service %v", cart.Replicas, cart.Service)
	}
	wantState := []schema.Field{{Name: "Lines", Type: "[]msg(test.schema.Line)"}, {Name: "Meta", Type: "struct{Owner string}"}}
	if !slices.Equal(cart.State, wantState) {
		t.Errorf("state\n got %+v\nwant %+v", cart.State, wantState)
	}
	wantMethods := []schema.Method{
		{Name: "Add", Shape: "unary", Arg: "msg(test.schema.Line)", Result: "int"},
		{Name: "Clear", Shape: "unary"},
	}
	if !slices.Equal(cart.Methods, wantMethods) {
		t.Errorf("methods\n got %+v\nwant %+v", cart.Methods, wantMethods)
	}

	if slices.ContainsFunc(s.Messages, func(m schema.Message) bool { return m.Name == "test.schema.Cart" }) {
		t.Error("an actor's state type is listed among the messages too")
	}

	var a, b bytes.Buffer
	if err := casty.WriteSchema(&a); err != nil {
		t.Fatal(err)
	}
	casty.WriteSchema(&b)
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two WriteSchema of the same process differ")
	}
	var back schema.Schema
	if err := json.Unmarshal(a.Bytes(), &back); err != nil || len(back.Kinds) != len(s.Kinds) {
		t.Errorf("WriteSchema does not read back: %v", err)
	}
}

func ExampleWriteSchema() {
	// In a program's main, before anything else: CI runs
	// `prog -casty-schema > new.json` and compares it with the schema of
	// the release in production (castyctl schema check old.json new.json).
	if len(os.Args) == 2 && os.Args[1] == "-casty-schema" {
		if err := casty.WriteSchema(os.Stdout); err != nil {
			os.Exit(1)
		}
		return
	}
}
