package casty_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// Hop calls the next key in its route, passing the handler's ctx on.
type Hop struct{ Visits int }

type route struct{ Keys []string }

var _ = casty.Message[route]()

func (h *Hop) Go(ctx context.Context, r route) (int, error) {
	h.Visits++
	if len(r.Keys) == 0 {
		return h.Visits, nil
	}
	next := Hops.Ref(casty.Self(ctx).System(), r.Keys[0])
	return casty.Call(ctx, next, (*Hop).Go, route{Keys: r.Keys[1:]})
}

var Hops = casty.Actor[Hop]()

func TestReentrancy(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t)
	cases := []struct {
		name  string
		start string
		route []string
		fails bool
	}{
		{"A→A", "a", []string{"a"}, true},
		{"A→B→A", "a", []string{"b", "a"}, true},
		{"A→B→C", "a", []string{"b", "c"}, false},
		{"A→B→C→B", "a", []string{"b", "c", "b"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := casty.Call(ctx, Hops.Ref(sys, c.start), (*Hop).Go, route{Keys: c.route})
			if !c.fails {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *casty.ActorFailedError
			if !errors.Is(err, casty.ErrReentrancy) || !errors.As(err, &fe) {
				t.Fatalf("got %v", err)
			}
		})
	}
}

// hopRoute is n distinct keys after start.
func hopRoute(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("hop-%d", i)
	}
	return keys
}

// A chain may hold MaxCallChain activations waiting; the call that would
// make it longer fails with ErrCallChainTooLong, definite, and the chain
// unwinds with it.
func TestCallChainBound(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t)
	if _, err := casty.Call(ctx, Hops.Ref(sys, "start"), (*Hop).Go, route{Keys: hopRoute(casty.MaxCallChain - 1)}); err != nil {
		t.Fatalf("%d nested activations: %v", casty.MaxCallChain, err)
	}
	_, err := casty.Call(ctx, Hops.Ref(sys, "start"), (*Hop).Go, route{Keys: hopRoute(casty.MaxCallChain)})
	var fe *casty.ActorFailedError
	if !errors.Is(err, casty.ErrCallChainTooLong) || !errors.As(err, &fe) {
		t.Fatalf("%d nested activations: %v", casty.MaxCallChain+1, err)
	}
}

// Across nodes the bound is the same, whichever member the chain crosses,
// and a hostile request naming 4 million entries is answered with the
// sentinel — without the tens of megabytes decoding them would take.
func TestClusterCallChainBound(t *testing.T) {
	// Keep-alives patient enough for a 4 MB message under the race
	// detector.
	cfg := fastCluster()
	cfg.Transport.KeepAliveTimeout = 5 * time.Second
	nodes := startCluster(t, 2, casty.WithConfig(cfg))
	ctx := context.Background()
	if _, err := casty.Call(ctx, Hops.Ref(nodes[0], "start"), (*Hop).Go, route{Keys: hopRoute(casty.MaxCallChain - 1)}); err != nil {
		t.Fatalf("%d nested activations: %v", casty.MaxCallChain, err)
	}
	_, err := casty.Call(ctx, Hops.Ref(nodes[0], "start"), (*Hop).Go, route{Keys: hopRoute(casty.MaxCallChain)})
	if !errors.Is(err, casty.ErrCallChainTooLong) {
		t.Fatalf("%d nested activations: %v", casty.MaxCallChain+1, err)
	}

	hostile := casty.HostileChain(Hops.Name(), 4_000_000)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err = casty.RawCall(ctx, nodes[0], nodes[1], hostile)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, casty.ErrCallChainTooLong) {
		t.Fatalf("4,000,000 entries: %v", err)
	}
	// Both ends are in this process: the 4 MB request compressed, sent,
	// received and decompressed. Decoding the entries would add 64 MB for
	// the slice alone.
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("a 4 MB request naming 4,000,000 entries, both ends: %d MB allocated", alloc>>20)
	// 8 MB since decompression is bounded: the
	// receiver decodes into one buffer of the declared 4 MB; 17 MB before.
	if alloc > 12<<20 {
		t.Fatalf("a 4 MB request naming 4,000,000 entries allocated %d MB in all", alloc>>20)
	}
}
