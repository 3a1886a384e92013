package casty_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/casty-go/casty/casty"
)

// What an operator's tool sees of a one-member cluster: the member table,
// where a key lives, how the ring divides the key space, and an actor's
// live state by kind name.
func ExampleSystem_MemberTable() {
	ctx := context.Background()
	sys, err := casty.Start(ctx, "127.0.0.1:0", casty.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sys.Close(ctx)

	for _, m := range sys.MemberTable() {
		fmt.Println(m.Addr == sys.Addr(), m.State, m.Lite)
	}
	p, _ := sys.Placement(Inventories.Name(), "sku-1", 0)
	fmt.Println(p.Owner.Addr == sys.Addr(), len(p.Replicas))
	for _, r := range sys.Ownership(1) {
		fmt.Printf("%d ranges, %.0f%% of the keys\n", r.Ranges, 100*r.Share)
	}
	casty.Call(ctx, Inventories.Ref(sys, "sku-1"), (*Inventory).Restock, 7)
	st, ok, err := sys.StateOf(ctx, Inventories.Name(), "sku-1")
	b, _ := json.Marshal(st)
	fmt.Println(string(b), ok, err)
	// Output:
	// true alive false
	// true 1
	// 128 ranges, 100% of the keys
	// {"Stock":7} true <nil>
}
