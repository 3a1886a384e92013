// Services: a stateless Checkout service runs up to 32 purchases at once,
// each waiting 0.2 s on simulated card-payment I/O, then reserves stock
// through a serial Inventory actor. Twelve parallel purchases finish in
// about 0.2 s instead of the 2.4 s a serial actor would take, and the
// Inventory, one handler at a time, never sells more than it holds.
//
// Run it from the repository root:
//
//	go run ./examples/07_service
package main

import (
	"context"
	"fmt"
	"log"
	"sync"
	"sync/atomic"
	"time"

	"github.com/casty-go/casty/casty"
)

// Inventory is the serial guardian of one SKU's stock: its handlers run one
// at a time, so Reserve's check-then-decrement can never oversell.
type Inventory struct {
	Stock int
}

// Restock adds qty units and returns the new stock.
func (i *Inventory) Restock(ctx context.Context, qty int) (int, error) {
	i.Stock += qty
	return i.Stock, nil
}

// Reserve takes qty units if there are that many, and reports whether it did.
func (i *Inventory) Reserve(ctx context.Context, qty int) (bool, error) {
	if qty > i.Stock {
		return false, nil
	}
	i.Stock -= qty
	return true, nil
}

// Left returns the stock on hand.
func (i *Inventory) Left(ctx context.Context) (int, error) { return i.Stock, nil }

// Inventories is declared once, at package level.
var Inventories = casty.Actor[Inventory](casty.Name("shop.Inventory"))

// Order is one purchase: a registered message struct.
type Order struct {
	SKU string
	Qty int
}

var _ = casty.Message[Order](casty.Name("shop.Order"))

// Checkout is a service: no exported fields (services are stateless), so
// its calls may run concurrently.
type Checkout struct{}

// inFlight and peak measure how many Buy calls overlap (package-level:
// a service holds no state of its own).
var inFlight, peak atomic.Int32

// chargeCard stands for the payment provider's round trip: 0.2 s of I/O
// that honours cancellation.
func chargeCard(ctx context.Context) error {
	t := time.NewTimer(200 * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Buy charges the card (slow, concurrent) and then reserves the stock
// through the SKU's Inventory actor (fast, serial). Passing the handler's
// ctx to the inner call keeps the call chain for reentrancy detection.
func (c *Checkout) Buy(ctx context.Context, o Order) (bool, error) {
	n := inFlight.Add(1)
	for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
	}
	defer inFlight.Add(-1)
	if err := chargeCard(ctx); err != nil {
		return false, err
	}
	sys := casty.Self(ctx).System()
	return casty.Call(ctx, Inventories.Ref(sys, o.SKU), (*Inventory).Reserve, o.Qty)
}

// Checkouts runs up to 32 Buy calls at once; the rest wait in its mailbox.
var Checkouts = casty.Service[Checkout](casty.Name("shop.Checkout"), casty.Concurrency(32))

func main() {
	ctx := context.Background()
	sys := casty.Local()
	defer sys.Close(ctx)

	stock, err := casty.Call(ctx, Inventories.Ref(sys, "sku-1"), (*Inventory).Restock, 10)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("stock of sku-1: %d\n", stock)

	const buyers = 12
	fmt.Printf("%d buyers, each purchase waits 0.2 s on the card (%.1f s if run one at a time)\n", buyers, buyers*0.2)
	var sold, refused atomic.Int32
	var wg sync.WaitGroup
	start := time.Now()
	for range buyers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := casty.Call(ctx, Checkouts.Ref(sys), (*Checkout).Buy, Order{SKU: "sku-1", Qty: 1})
			switch {
			case err != nil:
				log.Fatal(err)
			case ok:
				sold.Add(1)
			default:
				refused.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)

	left, err := casty.Call0(ctx, Inventories.Ref(sys, "sku-1"), (*Inventory).Left)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("all %d purchases done in %.1f s (peak %d in flight)\n", buyers, elapsed.Seconds(), peak.Load())
	fmt.Printf("elapsed under 1s: %v\n", elapsed < time.Second)
	fmt.Printf("all %d in flight at once: %v\n", buyers, peak.Load() == buyers)
	fmt.Printf("sold %d, refused %d, stock left %d\n", sold.Load(), refused.Load(), left)
	fmt.Printf("oversold: %v\n", int(sold.Load())+left != stock)
}
