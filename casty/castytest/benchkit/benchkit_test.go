package benchkit_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest/benchkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = casty.WithLogger(slog.New(slog.DiscardHandler))

// Three members started together see each other, settle, and a key chosen
// for one of them is owned by it: what the replicated benchmarks stand on.
func TestStartMembersSettleAndKeysOwnedBy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three members on loopback TCP")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nodes, err := benchkit.StartMembers(ctx, 3, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, s := range nodes {
			s.Close(context.Background())
		}
	}()
	if err := benchkit.WaitSettled(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	for _, o := range nodes {
		k := benchkit.KeyOwnedBy(nodes[0], benchkit.Majorities.Name(), o.Addr(), "k")
		if m, _ := o.OwnerOf(benchkit.Majorities.Name(), k); k == "" || m.Addr != o.Addr() {
			t.Fatalf("KeyOwnedBy(%s) = %q, owned by %s", o.Addr(), k, m.Addr)
		}
		n, err := casty.Call(ctx, benchkit.Majorities.Ref(nodes[0], k), (*benchkit.Register).Add, 2)
		if err != nil || n != 2 {
			t.Fatalf("Add on %s's key: %d, %v", o.Addr(), n, err)
		}
	}
	if k := benchkit.KeyOwnedBy(nodes[0], benchkit.Majorities.Name(), "127.0.0.1:1", "k"); k != "" {
		t.Fatalf("a key owned by an address that is no member: %q", k)
	}
}

// The floor runs and stops its goroutine (goleak in TestMain).
func TestChannelFloorRuns(t *testing.T) {
	if r := testing.Benchmark(benchkit.ChannelFloor); r.N == 0 {
		t.Fatal("the floor ran no round trip")
	}
}

// A local call to the benchmarks' counter, as BenchmarkCallSequential
// makes it.
func Example() {
	ctx := context.Background()
	sys := casty.Local()
	defer sys.Close(ctx)
	n, err := casty.Call(ctx, benchkit.Counters.Ref(sys, "bench"), (*benchkit.Counter).Add, 3)
	fmt.Println(n, err)
	// Output: 3 <nil>
}
