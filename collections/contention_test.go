package collections_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
	"github.com/casty-go/casty/collections"
)

// Clients on every member and the lite member race to CompareAndSwap the
// register from round r to r+1: exactly one wins each round, since the
// register's single owner serialises the swaps.
func TestRegisterCompareAndSwapHasOneWinnerPerRound(t *testing.T) {
	c := castytest.NewCluster(t, 3)
	ctx := ctxFor(t)
	callers := []*casty.System{c.Member(0), c.Member(1), c.Member(2), c.Lite()}
	const rounds, perCaller = 30, 2
	type win struct{ round, client int }
	var (
		mu   sync.Mutex
		wins []win
	)
	r0, err := collections.NewRegister[int](callers[0], "race")
	if err != nil {
		t.Fatal(err)
	}
	if err := r0.Set(ctx, 0); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var round atomic.Int64
	for i, sys := range callers {
		reg, err := collections.NewRegister[int](sys, "race")
		if err != nil {
			t.Fatal(err)
		}
		for j := range perCaller {
			client := i*perCaller + j
			wg.Go(func() {
				for {
					r := int(round.Load())
					if r >= rounds {
						return
					}
					ok, err := reg.CompareAndSwap(ctx, r, r+1)
					if err != nil {
						t.Error(err)
						return
					}
					if ok {
						mu.Lock()
						wins = append(wins, win{r, client})
						mu.Unlock()
						round.CompareAndSwap(int64(r), int64(r+1))
					}
				}
			})
		}
	}
	wg.Wait()
	perRound := map[int]int{}
	for _, w := range wins {
		perRound[w.round]++
	}
	for r := range rounds {
		if perRound[r] != 1 {
			t.Fatalf("round %d had %d winners (%v)", r, perRound[r], wins)
		}
	}
	if v, _, err := r0.Get(ctx); err != nil || v != rounds {
		t.Fatalf("register = %d %v, want %d", v, err, rounds)
	}
}

// Concurrent adds from every member and the lite member sum exactly.
func TestCounterSumsConcurrentAddsExactly(t *testing.T) {
	c := castytest.NewCluster(t, 3)
	ctx := ctxFor(t)
	callers := []*casty.System{c.Member(0), c.Member(1), c.Member(2), c.Lite()}
	const perClient = 50
	var wg sync.WaitGroup
	for i, sys := range callers {
		n, err := collections.NewCounter(sys, "sum", collections.Shards(8))
		if err != nil {
			t.Fatal(err)
		}
		for j := range 4 {
			wg.Go(func() {
				for k := range perClient {
					if err := n.Add(ctx, int64(i*1000+j*100+k%7)); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	var want int64
	for i := range callers {
		for j := range 4 {
			for k := range perClient {
				want += int64(i*1000 + j*100 + k%7)
			}
		}
	}
	n, _ := collections.NewCounter(c.Member(0), "sum", collections.Shards(8))
	if got, err := n.Get(ctx); err != nil || got != want {
		t.Fatalf("counter = %d %v, want %d", got, err, want)
	}
}
