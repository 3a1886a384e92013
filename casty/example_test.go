package casty_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/casty-go/casty/casty"
)

type Inventory struct {
	Stock int
}

func (i *Inventory) Restock(ctx context.Context, qty int) (int, error) {
	i.Stock += qty
	return i.Stock, nil
}

func (i *Inventory) Reserve(ctx context.Context, qty int) error {
	if qty > i.Stock {
		return fmt.Errorf("only %d left", i.Stock)
	}
	i.Stock -= qty
	return nil
}

var Inventories = casty.Actor[Inventory](casty.Name("example.Inventory"))

func Example() {
	ctx := context.Background()
	sys := casty.Local()
	defer sys.Close(ctx)

	sku := Inventories.Ref(sys, "sku-1234")
	n, err := casty.Call(ctx, sku, (*Inventory).Restock, 10)
	fmt.Println(n, err)

	err = casty.Do(ctx, sku, (*Inventory).Reserve, 12)
	var failed *casty.ActorFailedError
	if errors.As(err, &failed) {
		fmt.Println(failed.Method, "failed:", failed.Message, "- directive:", failed.Directive)
	}
	// Output:
	// 10 <nil>
	// Reserve failed: only 10 left - directive: keep
}

func ExampleSelf() {
	ctx := context.Background()
	sys := casty.Local()
	defer sys.Close(ctx)
	fmt.Println(casty.Self(ctx).InHandler())
	msg, _ := casty.Call(ctx, Greeters.Ref(sys, "hall"), (*Greeter).Greet, "example")
	fmt.Println(msg)
	// Output:
	// false
	// hello, example! (greeting #1)
}
