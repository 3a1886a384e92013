// Consumer of github.com/casty-go/casty/casty: one local system, one actor
// kind, two calls to the same key reaching the same activation.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/casty-go/casty/casty"
)

// Counter is an actor: its exported field is its state.
type Counter struct {
	N int
}

// Add adds d and returns the new total.
func (c *Counter) Add(ctx context.Context, d int) (int, error) {
	c.N += d
	return c.N, nil
}

// Counters declares the kind once, at package level.
var Counters = casty.Actor[Counter]()

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sys := casty.Local()
	defer sys.Close(ctx)
	var got int
	for _, d := range []int{2, 40} {
		n, err := casty.Call(ctx, Counters.Ref(sys, "c1"), (*Counter).Add, d)
		if err != nil {
			fail(err)
		}
		got = n
	}
	if got != 42 {
		fail(fmt.Errorf("total %d, want 42", got))
	}
	fmt.Println("casty consumer: c1 =", got)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "casty consumer:", err)
	os.Exit(1)
}
