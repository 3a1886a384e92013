package castytest_test

import (
	"context"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
)

// Tally is a replicated counter: three replicas, majority writes.
type Tally struct{ N int }

func (t *Tally) Add(ctx context.Context, d int) (int, error) { t.N += d; return t.N, nil }

func (t *Tally) Get(ctx context.Context) (int, error) { return t.N, nil }

var Tallies = casty.Actor[Tally](casty.Name("castytest.test.Tally"), casty.Replicas(3), casty.Write(casty.Majority))

// Five members start, see each other, serve calls and stop within the
// test's cleanup.
func TestClusterStartsAndServes(t *testing.T) {
	start := time.Now()
	c := castytest.NewCluster(t, 5)
	t.Logf("started in %v", time.Since(start))
	if len(c.Members()) != 5 {
		t.Fatalf("%d members", len(c.Members()))
	}
	ctx := context.Background()
	for i := range 5 {
		n, err := casty.Call(ctx, Tallies.Ref(c.Member(i), "k"), (*Tally).Add, 1)
		if err != nil || n != i+1 {
			t.Fatalf("add through member %d: %d, %v", i, n, err)
		}
	}
	if n, err := casty.Call0(ctx, Tallies.Ref(c.Lite(), "k"), (*Tally).Get); err != nil || n != 5 {
		t.Fatalf("get through the lite member: %d, %v", n, err)
	}
}
