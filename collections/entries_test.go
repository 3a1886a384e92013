package collections_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
	"github.com/casty-go/casty/collections"
)

// systems runs f on a local system, then from a member and from the lite
// member of a 3-member cluster.
func systems(t *testing.T, f func(t *testing.T, sys *casty.System)) {
	t.Run("local", func(t *testing.T) {
		sys := casty.Local()
		t.Cleanup(func() { sys.Close(context.Background()) })
		f(t, sys)
	})
	c := castytest.NewCluster(t, 3)
	t.Run("member", func(t *testing.T) { f(t, c.Member(1)) })
	t.Run("lite", func(t *testing.T) { f(t, c.Lite()) })
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

type price struct {
	Amount   float64
	Currency string
}

func TestMapOperations(t *testing.T) {
	systems(t, func(t *testing.T, sys *casty.System) {
		ctx := ctxFor(t)
		m, err := collections.NewMap[string, price](sys, "prices-"+t.Name())
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]price{}
		for i := range 100 {
			k := fmt.Sprint("sku-", i)
			want[k] = price{Amount: float64(i) + 0.5, Currency: "EUR"}
			if err := m.Put(ctx, k, want[k]); err != nil {
				t.Fatal(err)
			}
		}
		if v, ok, err := m.Get(ctx, "sku-7"); err != nil || !ok || v != want["sku-7"] {
			t.Fatalf("Get sku-7 = %v %v %v", v, ok, err)
		}
		if _, ok, err := m.Get(ctx, "nope"); err != nil || ok {
			t.Fatalf("Get of a missing key = %v %v", ok, err)
		}
		if ok, err := m.Contains(ctx, "sku-9"); err != nil || !ok {
			t.Fatalf("Contains sku-9 = %v %v", ok, err)
		}
		if n, err := m.Size(ctx); err != nil || n != 100 {
			t.Fatalf("Size = %d %v", n, err)
		}
		if ok, err := m.Remove(ctx, "sku-9"); err != nil || !ok {
			t.Fatalf("Remove sku-9 = %v %v", ok, err)
		}
		if ok, err := m.Remove(ctx, "sku-9"); err != nil || ok {
			t.Fatalf("second Remove sku-9 = %v %v", ok, err)
		}
		delete(want, "sku-9")
		got := map[string]price{}
		for e, err := range m.Items(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			if _, dup := got[e.Key]; dup {
				t.Fatalf("Items listed %s twice", e.Key)
			}
			got[e.Key] = e.Value
		}
		if len(got) != len(want) {
			t.Fatalf("Items listed %d entries, want %d", len(got), len(want))
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("Items: %s = %v, want %v", k, got[k], v)
			}
		}
		if err := m.Clear(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := m.Size(ctx); err != nil || n != 0 {
			t.Fatalf("Size after Clear = %d %v", n, err)
		}
	})
}

// Items pages through a shard holding more entries than a page.
func TestMapItemsPagesThroughLargeShards(t *testing.T) {
	sys := casty.Local()
	defer sys.Close(context.Background())
	ctx := ctxFor(t)
	m, err := collections.NewMap[int, int](sys, "big", collections.Shards(2))
	if err != nil {
		t.Fatal(err)
	}
	const n = 1500
	for i := range n {
		if err := m.Put(ctx, i, i*i); err != nil {
			t.Fatal(err)
		}
	}
	seen := make([]bool, n)
	count := 0
	for e, err := range m.Items(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Value != e.Key*e.Key || seen[e.Key] {
			t.Fatalf("entry %v (seen before: %v)", e, seen[e.Key])
		}
		seen[e.Key] = true
		count++
	}
	if count != n {
		t.Fatalf("Items listed %d of %d", count, n)
	}
	// Breaking the loop stops the stream.
	count = 0
	for range m.Items(ctx) {
		count++
		if count == 10 {
			break
		}
	}
}

func TestSetOperations(t *testing.T) {
	systems(t, func(t *testing.T, sys *casty.System) {
		ctx := ctxFor(t)
		s, err := collections.NewSet[string](sys, "tags-"+t.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{"a", "b", "c"} {
			if added, err := s.Add(ctx, v); err != nil || !added {
				t.Fatalf("Add %s = %v %v", v, added, err)
			}
		}
		if added, err := s.Add(ctx, "a"); err != nil || added {
			t.Fatalf("Add a again = %v %v", added, err)
		}
		if ok, err := s.Contains(ctx, "b"); err != nil || !ok {
			t.Fatalf("Contains b = %v %v", ok, err)
		}
		if ok, err := s.Remove(ctx, "b"); err != nil || !ok {
			t.Fatalf("Remove b = %v %v", ok, err)
		}
		if n, err := s.Size(ctx); err != nil || n != 2 {
			t.Fatalf("Size = %d %v", n, err)
		}
		var got []string
		for v, err := range s.Items(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, v)
		}
		slices.Sort(got)
		if !slices.Equal(got, []string{"a", "c"}) {
			t.Fatalf("Items = %v", got)
		}
		if err := s.Clear(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := s.Size(ctx); err != nil || n != 0 {
			t.Fatalf("Size after Clear = %d %v", n, err)
		}
	})
}

func TestMultiMapOperations(t *testing.T) {
	systems(t, func(t *testing.T, sys *casty.System) {
		ctx := ctxFor(t)
		m, err := collections.NewMultiMap[string, int](sys, "followers-"+t.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []int{3, 1, 2} {
			if added, err := m.Put(ctx, "ann", v); err != nil || !added {
				t.Fatalf("Put ann %d = %v %v", v, added, err)
			}
		}
		if added, err := m.Put(ctx, "ann", 2); err != nil || added {
			t.Fatalf("Put ann 2 again = %v %v", added, err)
		}
		if _, err := m.Put(ctx, "bob", 9); err != nil {
			t.Fatal(err)
		}
		var got []int
		for v, err := range m.Get(ctx, "ann") {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, v)
		}
		slices.Sort(got)
		if !slices.Equal(got, []int{1, 2, 3}) {
			t.Fatalf("Get ann = %v", got)
		}
		if ok, err := m.Contains(ctx, "ann", 3); err != nil || !ok {
			t.Fatalf("Contains ann 3 = %v %v", ok, err)
		}
		if ok, err := m.ContainsKey(ctx, "zed"); err != nil || ok {
			t.Fatalf("ContainsKey zed = %v %v", ok, err)
		}
		if n, err := m.Size(ctx); err != nil || n != 4 {
			t.Fatalf("Size = %d %v", n, err)
		}
		if ok, err := m.Remove(ctx, "ann", 3); err != nil || !ok {
			t.Fatalf("Remove ann 3 = %v %v", ok, err)
		}
		if n, err := m.RemoveKey(ctx, "ann"); err != nil || n != 2 {
			t.Fatalf("RemoveKey ann = %d %v", n, err)
		}
		if ok, err := m.ContainsKey(ctx, "ann"); err != nil || ok {
			t.Fatalf("ContainsKey ann after RemoveKey = %v %v", ok, err)
		}
		if err := m.Clear(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := m.Size(ctx); err != nil || n != 0 {
			t.Fatalf("Size after Clear = %d %v", n, err)
		}
	})
}

func TestCounterOperations(t *testing.T) {
	systems(t, func(t *testing.T, sys *casty.System) {
		ctx := ctxFor(t)
		c, err := collections.NewCounter(sys, "hits-"+t.Name(), collections.Shards(8))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			if err := c.Add(ctx, int64(i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Add(ctx, -10); err != nil {
			t.Fatal(err)
		}
		if n, err := c.Get(ctx); err != nil || n != 180 {
			t.Fatalf("Get = %d %v, want 180", n, err)
		}
		if err := c.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := c.Get(ctx); err != nil || n != 0 {
			t.Fatalf("Get after Reset = %d %v", n, err)
		}
	})
}

func TestRegisterOperations(t *testing.T) {
	systems(t, func(t *testing.T, sys *casty.System) {
		ctx := ctxFor(t)
		r, err := collections.NewRegister[map[string]int](sys, "config-"+t.Name())
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := r.Get(ctx); err != nil || ok {
			t.Fatalf("Get of an unset register = %v %v", ok, err)
		}
		if ok, err := r.CompareAndSwap(ctx, map[string]int{}, map[string]int{"a": 1}); err != nil || ok {
			t.Fatalf("CompareAndSwap on an unset register = %v %v", ok, err)
		}
		if ok, err := r.CompareAndSwapUnset(ctx, map[string]int{"a": 1, "b": 2}); err != nil || !ok {
			t.Fatalf("CompareAndSwapUnset = %v %v", ok, err)
		}
		// Equal maps compare equal, whatever their iteration order.
		if ok, err := r.CompareAndSwap(ctx, map[string]int{"b": 2, "a": 1}, map[string]int{"c": 3}); err != nil || !ok {
			t.Fatalf("CompareAndSwap of an equal map = %v %v", ok, err)
		}
		if ok, err := r.CompareAndSwap(ctx, map[string]int{"b": 2, "a": 1}, map[string]int{"d": 4}); err != nil || ok {
			t.Fatalf("CompareAndSwap of a stale value = %v %v", ok, err)
		}
		old, had, err := r.Swap(ctx, map[string]int{"e": 5})
		if err != nil || !had || old["c"] != 3 {
			t.Fatalf("Swap = %v %v %v", old, had, err)
		}
		if err := r.Set(ctx, map[string]int{"f": 6}); err != nil {
			t.Fatal(err)
		}
		if v, ok, err := r.Get(ctx); err != nil || !ok || v["f"] != 6 {
			t.Fatalf("Get = %v %v %v", v, ok, err)
		}
	})
}

// Bad input is a typed error, before anything is sent.
func TestBadInputIsRefused(t *testing.T) {
	sys := casty.Local()
	defer sys.Close(context.Background())
	ctx := ctxFor(t)
	if _, err := collections.NewMap[string, int](sys, ""); !errors.Is(err, collections.ErrInvalidName) {
		t.Fatalf("empty name: %v", err)
	}
	if _, err := collections.NewMap[string, int](sys, string(make([]byte, collections.MaxName+1))); !errors.Is(err, collections.ErrInvalidName) {
		t.Fatalf("oversized name: %v", err)
	}
	if _, err := collections.NewMap[string, chan int](sys, "chans"); !errors.Is(err, collections.ErrNotEncodable) || !contains(err, "chan int") {
		t.Fatalf("a channel value: %v", err)
	}
	if _, err := collections.NewSet[any](sys, "anys"); !errors.Is(err, collections.ErrNotEncodable) {
		t.Fatalf("an interface element: %v", err)
	}
	if _, err := collections.NewMap[string, int](sys, "odd", collections.Replicas(7)); !errors.Is(err, collections.ErrUndeclared) || !contains(err, "r7,wmajority,rone") {
		t.Fatalf("an undeclared triple: %v", err)
	}
	if _, err := collections.NewMap[string, int](sys, "odd", collections.Replicas(3), collections.Write(casty.Quorum(4))); !errors.Is(err, collections.ErrInvalidOption) {
		t.Fatalf("a write quorum above replicas: %v", err)
	}
	if _, err := collections.NewCounter(sys, "odd", collections.Shards(0)); !errors.Is(err, collections.ErrInvalidOption) {
		t.Fatalf("zero stripes: %v", err)
	}
	m, err := collections.NewMap[string, string](sys, "small", collections.MaxItem(16))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Put(ctx, "k", "a value longer than sixteen bytes"); !errors.Is(err, collections.ErrTooLarge) {
		t.Fatalf("an oversized value: %v", err)
	}
	// The same name opened as another type, triple or shard count.
	if _, err := m.Size(ctx); err != nil {
		t.Fatal(err)
	}
	for _, open := range []func() error{
		func() error {
			q, _ := collections.NewMap[string, string](sys, "small", collections.Shards(8))
			_, err := q.Size(ctx)
			return err
		},
		func() error {
			q, _ := collections.NewMap[string, string](sys, "small", collections.Read(casty.Majority))
			_, err := q.Size(ctx)
			return err
		},
		func() error { q, _ := collections.NewSet[string](sys, "small"); _, err := q.Size(ctx); return err },
	} {
		if err := open(); !errors.Is(err, collections.ErrMismatch) {
			t.Fatalf("opened differently: %v", err)
		}
	}
}

func contains(err error, s string) bool {
	return err != nil && len(err.Error()) > 0 && stringsContains(err.Error(), s)
}

// A collection keeps its items however long nobody calls it: its shards
// never idle out (on a local system, or with Replicas(1), an idle
// deactivation would drop them).
func TestAnIdleCollectionKeepsItsItems(t *testing.T) {
	cfg := casty.DefaultConfig()
	cfg.Actors.IdleTimeout = 20 * time.Millisecond
	sys := casty.Local(casty.WithConfig(cfg))
	defer sys.Close(context.Background())
	ctx := ctxFor(t)
	m, err := collections.NewMap[string, int](sys, "idle", collections.Shards(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Put(ctx, "k", 7); err != nil {
		t.Fatal(err)
	}
	// Hold: ten idle timeouts without a call.
	time.Sleep(10 * cfg.Actors.IdleTimeout)
	if v, ok, err := m.Get(ctx, "k"); err != nil || !ok || v != 7 {
		t.Fatalf("after an idle spell Get = %d %v %v, want 7", v, ok, err)
	}
}
