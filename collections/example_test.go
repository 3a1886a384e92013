package collections_test

import (
	"context"
	"fmt"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/collections"
)

func ExampleNewMap() {
	ctx := context.Background()
	sys := casty.Local() // or casty.Start / casty.Connect: the same calls
	defer sys.Close(ctx)

	prices, err := collections.NewMap[string, float64](sys, "prices")
	if err != nil {
		panic(err)
	}
	_ = prices.Put(ctx, "sku-1234", 49.90)
	_ = prices.Put(ctx, "sku-5678", 12.50)
	v, ok, _ := prices.Get(ctx, "sku-1234")
	n, _ := prices.Size(ctx)
	fmt.Println(v, ok, n)
	// Output: 49.9 true 2
}

func ExampleMap_Items() {
	ctx := context.Background()
	sys := casty.Local()
	defer sys.Close(ctx)

	stock, _ := collections.NewMap[string, int](sys, "stock", collections.Shards(1))
	for sku, n := range map[string]int{"apple": 3, "pear": 5} {
		_ = stock.Put(ctx, sku, n)
	}
	total := 0
	for e, err := range stock.Items(ctx) {
		if err != nil {
			panic(err)
		}
		total += e.Value
	}
	fmt.Println(total)
	// Output: 8
}

func ExampleNewSet() {
	ctx := context.Background()
	sys := casty.Local()
	defer sys.Close(ctx)

	seen, _ := collections.NewSet[string](sys, "seen")
	first, _ := seen.Add(ctx, "alice")
	again, _ := seen.Add(ctx, "alice")
	fmt.Println(first, again)
	// Output: true false
}

func ExampleNewMultiMap() {
	ctx := context.Background()
	sys := casty.Local()
	defer sys.Close(ctx)

	follows, _ := collections.NewMultiMap[string, string](sys, "follows")
	_, _ = follows.Put(ctx, "ann", "bob")
	_, _ = follows.Put(ctx, "ann", "cyd")
	for who, err := range follows.Get(ctx, "ann") {
		if err != nil {
			panic(err)
		}
		fmt.Println(who)
	}
	// Output:
	// bob
	// cyd
}

func ExampleNewCounter() {
	ctx := context.Background()
	sys := casty.Local()
	defer sys.Close(ctx)

	hits, _ := collections.NewCounter(sys, "hits")
	for range 10 {
		_ = hits.Add(ctx, 1) // each add lands on the next of 32 stripes
	}
	n, _ := hits.Get(ctx)
	fmt.Println(n)
	// Output: 10
}

func ExampleNewRegister() {
	ctx := context.Background()
	sys := casty.Local()
	defer sys.Close(ctx)

	leader, _ := collections.NewRegister[string](sys, "leader")
	won, _ := leader.CompareAndSwapUnset(ctx, "node-a")
	lost, _ := leader.CompareAndSwapUnset(ctx, "node-b")
	v, _, _ := leader.Get(ctx)
	fmt.Println(won, lost, v)
	// Output: true false node-a
}

// A triple other than the declared ones is declared at package level, in
// a package every member's program imports.
var fiveCopies = collections.Declare(collections.Replicas(5), collections.Write(casty.Majority))

func ExampleDeclare() {
	ctx := context.Background()
	sys := casty.Local()
	defer sys.Close(ctx)

	m, err := collections.NewMap[string, int](sys, "audit", collections.Replicas(5))
	fmt.Println(fiveCopies, err == nil)
	_ = m.Put(ctx, "k", 1)
	// Output: r5,wmajority,rone true
}
