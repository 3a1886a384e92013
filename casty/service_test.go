package casty_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// Stock is the serial guardian a service calls.
type Stock struct {
	OnHand   int
	inFlight atomic.Int32
}

var stockOverlap atomic.Int32

func (s *Stock) Reserve(ctx context.Context, qty int) (bool, error) {
	if s.inFlight.Add(1) > 1 {
		stockOverlap.Add(1)
	}
	defer s.inFlight.Add(-1)
	if qty > s.OnHand {
		return false, nil
	}
	s.OnHand -= qty
	return true, nil
}

func (s *Stock) Fill(ctx context.Context, qty int) error { s.OnHand = qty; return nil }

var Stocks = casty.Actor[Stock]()

// Checkout is stateless: slow I/O then a call to the serial actor.
type Checkout struct {
	mu   sync.Mutex
	live int
	peak int
}

var checkoutPeak, checkoutLive atomic.Int32

func (c *Checkout) Buy(ctx context.Context, sku string) (bool, error) {
	n := checkoutLive.Add(1)
	for {
		p := checkoutPeak.Load()
		if n <= p || checkoutPeak.CompareAndSwap(p, n) {
			break
		}
	}
	defer checkoutLive.Add(-1)
	select {
	case <-time.After(50 * time.Millisecond): // simulated I/O
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return casty.Call(ctx, Stocks.Ref(casty.Self(ctx).System(), sku), (*Stock).Reserve, 1)
}

var hanging atomic.Int32

func (c *Checkout) Hang(ctx context.Context) error {
	hanging.Add(1)
	defer hanging.Add(-1)
	<-ctx.Done()
	return ctx.Err()
}

var Checkouts = casty.Service[Checkout](casty.Concurrency(4))

func TestServiceConcurrencyBoundAndSerialActors(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t)
	if err := casty.Do(ctx, Stocks.Ref(sys, "sku-1"), (*Stock).Fill, 10); err != nil {
		t.Fatal(err)
	}
	checkoutPeak.Store(0)
	stockOverlap.Store(0)
	start := time.Now()
	var wg sync.WaitGroup
	var sold atomic.Int32
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := casty.Call(ctx, Checkouts.Ref(sys), (*Checkout).Buy, "sku-1")
			if err != nil {
				t.Error(err)
			}
			if ok {
				sold.Add(1)
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if p := checkoutPeak.Load(); p != 4 {
		t.Fatalf("peak concurrency %d, want exactly the bound 4", p)
	}
	if sold.Load() != 10 {
		t.Fatalf("sold %d of 10 in stock", sold.Load())
	}
	if stockOverlap.Load() != 0 {
		t.Fatal("the serial actor ran two handlers at once")
	}
	// 12 calls of 50 ms at concurrency 4 take ~3 rounds, not 12.
	if el > 12*50*time.Millisecond {
		t.Fatalf("took %v: calls did not overlap", el)
	}
}

func TestServiceCallsCancelledOnClose(t *testing.T) {
	sys := casty.Local()
	// Concurrency 4: four calls run, two wait for a slot.
	const calls = 6
	errs := make(chan error, calls)
	for range calls {
		go func() { errs <- casty.Do0(context.Background(), Checkouts.Ref(sys), (*Checkout).Hang) }()
	}
	waitFor(t, 5*time.Second, "four calls in flight", func() bool { return hanging.Load() == 4 })
	start := time.Now()
	if err := sys.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range calls {
		if err := <-errs; !errors.Is(err, casty.ErrActorUnavailable) {
			t.Fatalf("service call on Close: %v", err)
		}
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("Close took %v", el)
	}
	waitFor(t, 5*time.Second, "every handler to return", func() bool { return hanging.Load() == 0 })
}

// A busy service never idles out: its calls outlast the idle timeout.
var SlowServices = casty.Service[Checkout](casty.Name("test.SlowCheckout"), casty.Concurrency(2), casty.IdleTimeout(10*time.Millisecond))

func TestBusyServiceNeverIdlesOut(t *testing.T) {
	var deactivated atomic.Int32
	sys := newSys(t, casty.WithInterceptor(func(ev casty.Event) {
		if _, ok := ev.(casty.Deactivated); ok {
			deactivated.Add(1)
		}
	}))
	ctx := context.Background()
	casty.Do(ctx, Stocks.Ref(sys, "sku-2"), (*Stock).Fill, 100)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			casty.Call(ctx, SlowServices.Ref(sys), (*Checkout).Buy, "sku-2") // 50 ms each, 5 idle timeouts
		}()
	}
	wg.Wait()
	if n := deactivated.Load(); n != 0 {
		// The Stock actor may idle out (300 s default: it will not); the
		// service must not while calls are in flight.
		t.Fatalf("%d deactivations while calls were in flight", n)
	}
}

type BadService struct{ Count int }

type HookedService struct{}

func (h *HookedService) Activate(ctx context.Context) error { return nil }

func TestServiceDeclarationRules(t *testing.T) {
	mustPanic(t, "services are stateless", func() { casty.Service[BadService]() })
	mustPanic(t, "services are stateless", func() { casty.Service[HookedService]() })
	mustPanic(t, "does not apply to stateless services", func() {
		type Quiet struct{}
		casty.Service[Quiet](casty.Replicas(3))
	})
}

var ReplicatedWheres = casty.Actor[Where](casty.Name("test.WhereR3"), casty.Replicas(3), casty.Write(casty.Majority))

// A service called Beside an actor runs on the member serving that actor,
// whichever node calls it, a lite member included; without Beside a
// member runs its service calls itself.
func TestBesideRunsTheServiceWhereTheActorIs(t *testing.T) {
	parallel(t)
	nodes := startCluster(t, 4)
	lite, err := connectLite(t, nodes[0].Addr())
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "the lite member routes to 4 members", func() bool { return casty.Routed(lite) == 4 })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	callers := append(append([]*casty.System{}, nodes...), lite)
	for _, kind := range []*casty.Kind[Where]{Wheres, ReplicatedWheres} {
		hosts := map[string]bool{}
		for i := range 12 {
			key := fmt.Sprint("beside-", i)
			where := func() string {
				out, err := casty.Call0(ctx, kind.Ref(nodes[0], key), (*Where).Hit)
				if err != nil {
					t.Fatal(err)
				}
				host, _, _ := strings.Cut(out, "#")
				return host
			}
			host := where()
			hosts[host] = true
			for _, c := range callers {
				for attempt := 0; ; attempt++ {
					at, err := casty.Call0(ctx, casty.Beside(Locators, kind.Ref(c, key)), (*Locator).Where)
					if err != nil {
						t.Fatal(err)
					}
					if at == host {
						break
					}
					// A member suspected for a moment on a loaded machine
					// moves a single-copy kind's keys while it is: the
					// actor and the service are compared again once every
					// view holds the 4 members. Only a difference that
					// stays fails.
					if attempt == 2 {
						t.Fatalf("%s: the service beside %s/%s, called from %s (lite %v), ran on %s; the actor is on %s", kind.Name(), kind.Name(), key, c.Addr(), c == lite, at, host)
					}
					waitConverged(t, callers[:len(nodes)], len(nodes))
					host = where()
				}
			}
		}
		if len(hosts) < 2 {
			t.Fatalf("%s: 12 keys all on %v: the test proves nothing", kind.Name(), hosts)
		}
	}
}

func ExampleBeside() {
	sys := casty.Local()
	defer sys.Close(context.Background())
	// On a local system every call is local: Beside is the service's Ref.
	at, err := casty.Call0(context.Background(), casty.Beside(Locators, Wheres.Ref(sys, "k")), (*Locator).Where)
	fmt.Println(at == sys.Addr(), err)
	// Output: true <nil>
}
