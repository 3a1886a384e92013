package casty_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/casty-go/casty/casty"
)

// Catalog keeps prices in a tracked map.
type Catalog struct {
	Prices  casty.TrackedMap[string, float64]
	Version int
}

func (c *Catalog) Put(ctx context.Context, kv PriceUpdate) (int, error) {
	c.Prices.Set(kv.SKU, kv.Price)
	c.Version++
	return c.Prices.Len(), nil
}

type PriceUpdate struct {
	SKU   string
	Price float64
}

var _ = casty.Message[PriceUpdate]()
var Catalogs = casty.Actor[Catalog](casty.Name("test.Catalog"))

func TestTrackedMapStateAndExplain(t *testing.T) {
	sys := newSys(t)
	ctx := context.Background()
	if n, err := casty.Call(ctx, Catalogs.Ref(sys, "c"), (*Catalog).Put, PriceUpdate{"sku-1", 49.9}); err != nil || n != 1 {
		t.Fatalf("put: %d %v", n, err)
	}
	st, ok, err := Catalogs.StateOf(ctx, sys, "c")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if p, _ := st.Prices.Get("sku-1"); p != 49.9 || st.Version != 1 {
		t.Fatalf("state copy: %v %d", p, st.Version)
	}
	ex, err := casty.Explain[Catalog]()
	if err != nil {
		t.Fatal(err)
	}
	table := ex.String()
	if !strings.Contains(table, "Prices") || !strings.Contains(table, "Version") {
		t.Fatalf("explain:\n%s", table)
	}
}

// OutOfStock is a registered error type: it crosses the wire intact.
type OutOfStock struct {
	SKU  string
	Left int
}

func (e *OutOfStock) Error() string { return "out of stock: " + e.SKU }

var _ = casty.Message[OutOfStock]()

type Shelf struct{ Left int }

func (s *Shelf) Take(ctx context.Context, n int) error {
	if n > s.Left {
		return &OutOfStock{SKU: casty.Self(ctx).Key(), Left: s.Left}
	}
	s.Left -= n
	return nil
}

var Shelves = casty.Actor[Shelf](casty.Name("test.Shelf"))

func TestRegisteredErrorCrossesTheWire(t *testing.T) {
	nodes := startCluster(t, 2)
	key := keyOn(t, nodes[1], nodes[0], Shelves.Name())
	err := casty.Do(context.Background(), Shelves.Ref(nodes[0], key), (*Shelf).Take, 3)
	var oos *OutOfStock
	if !errors.As(err, &oos) || oos.SKU != key || oos.Left != 0 {
		t.Fatalf("remote registered error: %#v", err)
	}
	var fe *casty.ActorFailedError
	if !errors.As(err, &fe) || fe.Method != "Take" {
		t.Fatalf("not wrapped in ActorFailedError: %v", err)
	}
}
