package main

import (
	"encoding/json"
	"testing"

	"github.com/casty-go/casty/casty"
)

// schema check reads files CI hands it: whatever they hold, decoding
// either refuses them or yields schemas the comparison handles without
// panicking, and a schema compared with itself has no change.
func FuzzSchemaCheck(f *testing.F) {
	own, _ := json.Marshal(casty.Schemas())
	f.Add(own, own)
	f.Add([]byte(`{"version":1,"kinds":[{"name":"a","go_type":"x.A","replicas":1,"state":[{"name":"N","type":"int"}],"methods":[{"name":"M","shape":"unary"}]}],"messages":[]}`),
		[]byte(`{"version":1,"kinds":[{"name":"a","go_type":"y.B","service":true,"replicas":3,"state":null,"methods":null}],"messages":[{"name":"a","go_type":"z","fields":[{"name":"N","type":"string"}]}]}`))
	f.Add([]byte(`{"version":2}`), []byte(`{"kinds":3}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		old, errA := decodeSchema("old", a)
		new, errB := decodeSchema("new", b)
		if errA != nil || errB != nil {
			return
		}
		compareSchemas(old, new)
		for _, c := range compareSchemas(old, old) {
			if c.Severity == breaking {
				t.Fatalf("a schema is breaking against itself: %+v", c)
			}
		}
	})
}
