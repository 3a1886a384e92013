package declorder

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/casty-go/casty/casty"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The actor was declared before its argument's type was registered; the
// package initialised, and a system starts and serves it, locally and on a
// member.
func TestDeclarationOrderNeverMatters(t *testing.T) {
	ctx := context.Background()
	local := casty.Local()
	defer local.Close(ctx)
	member, err := casty.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close(ctx)
	for _, sys := range []*casty.System{local, member} {
		r, err := casty.Call(ctx, Stocks.Ref(sys, "north"), (*Stock).Apply, Change{Lines: []Line{{Sku: "sku-1", N: 3}}})
		if err != nil || r.Lines != 1 {
			t.Fatalf("%v: %+v, %v", sys, r, err)
		}
	}
}
