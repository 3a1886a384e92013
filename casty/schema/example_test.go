package schema_test

import (
	"encoding/json"
	"fmt"

	"github.com/casty-go/casty/casty/schema"
)

// A tool reads a schema written by casty.WriteSchema and walks it.
func Example() {
	doc := `{
  "version": 1,
  "kinds": [
    {"name": "shop.Cart", "go_type": "example.com/shop.Cart", "replicas": 3,
     "state": [{"name": "Lines", "type": "[]msg(shop.Line)"}],
     "methods": [{"name": "Add", "shape": "unary", "arg": "msg(shop.Line)", "result": "int"}]}
  ],
  "messages": [
    {"name": "shop.Line", "go_type": "example.com/shop.Line",
     "fields": [{"name": "Qty", "type": "int32"}, {"name": "SKU", "type": "string"}]}
  ]
}`
	var s schema.Schema
	if err := json.Unmarshal([]byte(doc), &s); err != nil || s.Version > schema.Version {
		fmt.Println("unreadable schema:", err)
		return
	}
	for _, k := range s.Kinds {
		fmt.Printf("kind %s, %d replicas\n", k.Name, k.Replicas)
		for _, m := range k.Methods {
			fmt.Printf("  %s(%s) %s [%s]\n", m.Name, m.Arg, m.Result, m.Shape)
		}
	}
	for _, m := range s.Messages {
		fmt.Printf("message %s: %d fields\n", m.Name, len(m.Fields))
	}
	// Output:
	// kind shop.Cart, 3 replicas
	//   Add(msg(shop.Line)) int [unary]
	// message shop.Line: 2 fields
}
