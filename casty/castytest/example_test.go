package castytest_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
)

// Cell is a register actor: read, write and compare-and-set one value.
type Cell struct{ Value int }

func (c *Cell) Get(ctx context.Context) (int, error) { return c.Value, nil }

func (c *Cell) Set(ctx context.Context, v int) error { c.Value = v; return nil }

// Swap is a compare-and-set: it sets New when the value is Old.
func (c *Cell) Swap(ctx context.Context, s Swap) (bool, error) {
	if c.Value != s.Old {
		return false, nil
	}
	c.Value = s.New
	return true, nil
}

// Swap is Cell.Swap's argument.
type Swap struct{ Old, New int }

var (
	_     = casty.Message[Swap](casty.Name("castytest.example.Swap"))
	Cells = casty.Actor[Cell](casty.Name("castytest.example.Cell"))
)

// Four clients read, write and swap two cells concurrently; every call is
// recorded, and the history is checked against the register model. (In a
// test, castytest.Check(t, model, h) does the same and fails t with the
// path of the visualisation.)
func Example() {
	ctx := context.Background()
	sys := casty.Local()
	defer sys.Close(ctx)

	h := castytest.NewHistory[castytest.RegisterOp[int], castytest.RegisterResult[int]]()
	var wg sync.WaitGroup
	for client := range 4 {
		wg.Go(func() {
			for i := range 20 {
				key := fmt.Sprint("cell-", i%2)
				ref := Cells.Ref(sys, key)
				switch (client + i) % 3 {
				case 0:
					h.Record(client, castytest.ReadOp[int](key), func() (castytest.RegisterResult[int], error) {
						v, err := casty.Call0(ctx, ref, (*Cell).Get)
						return castytest.Read(v), err
					})
				case 1:
					v := client*100 + i
					h.Record(client, castytest.WriteOp(key, v), func() (castytest.RegisterResult[int], error) {
						return castytest.Written[int](), casty.Do(ctx, ref, (*Cell).Set, v)
					})
				default:
					old, v := client*100+i-1, client*100+i
					h.Record(client, castytest.CASOp(key, old, v), func() (castytest.RegisterResult[int], error) {
						ok, err := casty.Call(ctx, ref, (*Cell).Swap, Swap{Old: old, New: v})
						return castytest.Swapped[int](ok), err
					})
				}
			}
		})
	}
	wg.Wait()

	res := castytest.Verify(castytest.RegisterModel(0), h.Ops(), 10*time.Second)
	fmt.Println(res.Ops, "operations:", res.Verdict)
	// Output:
	// 80 operations: linearizable
}
