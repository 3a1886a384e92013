// Inspection: an interceptor (casty.WithInterceptor) that turns lifecycle
// events into per-method metrics, a spy (sys.Spy) that watches one slice
// of the system by glob — kinds "shop.*", keys "order-*" — with payloads
// (arguments and results), and Kind.StateOf reading an actor's live state
// without going through its mailbox.
//
// Kinds are named with casty.Name so the globs read like the domain.
//
// Run it from the repository root:
//
//	go run ./examples/11_inspection
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/casty-go/casty/casty"
)

// Item is one order line.
type Item struct {
	SKU   string
	Qty   int
	Price int // cents
}

var _ = casty.Message[Item](casty.Name("shop.Item"))

// Order is an actor: its exported fields are its state.
type Order struct {
	Items []Item
	Total int
	Paid  bool
}

// Add adds a line and returns the new total.
func (o *Order) Add(ctx context.Context, it Item) (int, error) {
	o.Items = append(o.Items, it)
	o.Total += it.Qty * it.Price
	return o.Total, nil
}

// Amount returns the total; it changes nothing.
func (o *Order) Amount(ctx context.Context) (int, error) { return o.Total, nil }

// Pay marks the order paid; an empty order cannot be paid.
func (o *Order) Pay(ctx context.Context) error {
	if o.Total == 0 {
		return errors.New("nothing to pay")
	}
	o.Paid = true
	return nil
}

// Orders matches the spy's kind glob "shop.*".
var Orders = casty.Actor[Order](casty.Name("shop.Order"))

// Invoice is outside the spy's kind glob.
type Invoice struct{ Issued int }

// Issue issues an invoice and returns how many were issued.
func (i *Invoice) Issue(ctx context.Context) (int, error) { i.Issued++; return i.Issued, nil }

// Invoices does not match "shop.*".
var Invoices = casty.Actor[Invoice](casty.Name("billing.Invoice"))

// metrics is what an interceptor typically feeds: counts and durations
// per kind and method. The interceptor runs inline on every handler's
// goroutine, so it must be fast, never block, and be safe for concurrent
// use (activations run in parallel).
type metrics struct {
	mu sync.Mutex
	m  map[string]*stat
}

type stat struct {
	calls, failed int
	total         time.Duration
}

func (m *metrics) observe(ev casty.Event) {
	var name string
	var d time.Duration
	failed := false
	switch e := ev.(type) {
	case casty.Completed:
		name, d = e.Kind+"."+e.Method, e.Duration
	case casty.Failed:
		name, d, failed = e.Kind+"."+e.Method, e.Duration, true
	default:
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.m[name]
	if s == nil {
		s = &stat{}
		m.m[name] = s
	}
	s.calls++
	s.total += d
	if failed {
		s.failed++
	}
}

func (m *metrics) print() {
	m.mu.Lock()
	defer m.mu.Unlock()
	names := make([]string, 0, len(m.m))
	for n := range m.m {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		s := m.m[n]
		fmt.Printf("   %s: %d call(s), %d failed (mean %v)\n", n, s.calls, s.failed, (s.total / time.Duration(s.calls)).Round(time.Microsecond))
	}
}

// describe renders a spied event on one line.
func describe(ev casty.Event) string {
	i := ev.Info()
	at := fmt.Sprintf("#%d %s/%s", i.Seq, i.Kind, i.Key)
	switch e := ev.(type) {
	case casty.Activated:
		return at + " activated"
	case casty.Received:
		return fmt.Sprintf("%s received %s arg=%+v", at, e.Method, e.Arg)
	case casty.Completed:
		return fmt.Sprintf("%s completed %s result=%v changed=%v", at, e.Method, e.Result, e.Changed)
	case casty.Failed:
		return fmt.Sprintf("%s failed %s: %v -> %v", at, e.Method, e.Err, e.Directive)
	case casty.Deactivated:
		return fmt.Sprintf("%s deactivated (%v)", at, e.Reason)
	case casty.Lag:
		return fmt.Sprintf("spy fell behind: %d event(s) dropped", e.Dropped)
	}
	return fmt.Sprintf("%s %T", at, ev)
}

func main() {
	ctx := context.Background()
	met := &metrics{m: map[string]*stat{}}
	sys := casty.Local(casty.WithInterceptor(met.observe))
	defer sys.Close(ctx)

	// The spy buffers from the moment Spy returns; it ends with spyCtx.
	spyCtx, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	events, err := sys.Spy(spyCtx, casty.SpyFilter{Kind: "shop.*", Key: "order-*", Payloads: true})
	if err != nil {
		log.Fatal(err)
	}

	o1, o2 := Orders.Ref(sys, "order-1"), Orders.Ref(sys, "order-2")
	must(casty.Call(ctx, o1, (*Order).Add, Item{SKU: "sku-1", Qty: 2, Price: 500}))
	must(casty.Call(ctx, o1, (*Order).Add, Item{SKU: "sku-2", Qty: 1, Price: 1200}))
	must(casty.Call0(ctx, o1, (*Order).Amount))
	must(0, casty.Do0(ctx, o1, (*Order).Pay))
	must(casty.Call(ctx, Orders.Ref(sys, "draft-7"), (*Order).Add, Item{SKU: "sku-3", Qty: 1, Price: 99})) // key not spied
	must(casty.Call0(ctx, Invoices.Ref(sys, "order-1"), (*Invoice).Issue))                                 // kind not spied
	payErr := casty.Do0(ctx, o2, (*Order).Pay)
	var failed *casty.ActorFailedError
	if !errors.As(payErr, &failed) {
		log.Fatalf("paying an empty order: %v", payErr)
	}

	fmt.Println("1. spy on kind \"shop.*\", key \"order-*\", with payloads:")
	for ev := range events {
		fmt.Println("  ", describe(ev))
		if f, ok := ev.(casty.Failed); ok && f.Key == "order-2" {
			break // the last event this run expects; breaking ends the spy
		}
	}

	fmt.Println("2. interceptor metrics (every kind, every key):")
	met.print()

	fmt.Println("3. live state without the mailbox:")
	st, ok, err := Orders.StateOf(ctx, sys, "order-1")
	if err != nil {
		log.Fatal(err)
	}
	skus := make([]string, 0, len(st.Items))
	for _, it := range st.Items {
		skus = append(skus, it.SKU)
	}
	fmt.Printf("   order-1 active=%v items=[%s] total=%d paid=%v\n", ok, strings.Join(skus, " "), st.Total, st.Paid)
	_, ok, err = Orders.StateOf(ctx, sys, "order-99")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("   order-99 active=%v (StateOf never activates)\n", ok)
}

// must stops the example on an unexpected error.
func must[R any](_ R, err error) {
	if err != nil {
		log.Fatal(err)
	}
}
