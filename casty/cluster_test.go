package casty_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// fastCluster is a Config that makes membership react in test time.
func fastCluster() casty.Config {
	return casty.Config{
		SuspicionTimeout:    500 * time.Millisecond,
		ShuffleInterval:     time.Second,
		AntiEntropyInterval: time.Second,
		JoinTimeout:         5 * time.Second,
		KeepAliveInterval:   200 * time.Millisecond,
		KeepAliveTimeout:    500 * time.Millisecond,
		DrainTimeout:        5 * time.Second,
		CallTimeout:         5 * time.Second,
	}
}

func startNode(t *testing.T, seeds []string, opts ...casty.Option) *casty.System {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts = append([]casty.Option{casty.WithConfig(fastCluster()), casty.Seeds(seeds...)}, opts...)
	sys, err := casty.Start(ctx, "127.0.0.1:0", opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSys(t, sys) })
	return sys
}

func closeSys(t *testing.T, sys *casty.System) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sys.Close(ctx); err != nil {
		t.Errorf("Close %s: %v", sys.Addr(), err)
	}
}

// startCluster starts n members and waits until each sees all n.
func startCluster(t *testing.T, n int, opts ...casty.Option) []*casty.System {
	t.Helper()
	first := startNode(t, nil, opts...)
	nodes := []*casty.System{first}
	for range n - 1 {
		nodes = append(nodes, startNode(t, []string{first.Addr()}, opts...))
	}
	waitConverged(t, nodes, n)
	return nodes
}

func waitConverged(t *testing.T, nodes []*casty.System, n int) {
	t.Helper()
	waitFor(t, 15*time.Second, fmt.Sprintf("%d members everywhere", n), func() bool {
		for _, s := range nodes {
			if len(s.Members()) != n {
				return false
			}
		}
		return true
	})
}

// Where reports the node it runs on.
type Where struct{ Calls int }

func (w *Where) Hit(ctx context.Context) (string, error) {
	w.Calls++
	return fmt.Sprintf("%s#%d", casty.Self(ctx).System().Addr(), w.Calls), nil
}

var Wheres = casty.Actor[Where](casty.Name("test.Where"))

func TestClusterSameKeyOneActivation(t *testing.T) {
	nodes := startCluster(t, 3)
	ctx := context.Background()
	var hosts []string
	for i := range 9 {
		out, err := casty.Call0(ctx, Wheres.Ref(nodes[i%3], "the-key"), (*Where).Hit)
		if err != nil {
			t.Fatal(err)
		}
		host, n, _ := strings.Cut(out, "#")
		if n != fmt.Sprint(i+1) {
			t.Fatalf("call %d saw count %s: not one activation", i+1, n)
		}
		hosts = append(hosts, host)
	}
	for _, h := range hosts {
		if h != hosts[0] {
			t.Fatalf("the key ran on %v", hosts)
		}
	}
	total := 0
	for _, s := range nodes {
		total += s.Active()
	}
	if total != 1 {
		t.Fatalf("%d activations across the cluster", total)
	}
}

func TestClusterSpreadsKeys(t *testing.T) {
	nodes := startCluster(t, 3)
	ctx := context.Background()
	per := map[string]int{}
	for i := range 60 {
		out, err := casty.Call0(ctx, Wheres.Ref(nodes[i%3], fmt.Sprint("k", i)), (*Where).Hit)
		if err != nil {
			t.Fatal(err)
		}
		host, _, _ := strings.Cut(out, "#")
		per[host]++
	}
	if len(per) != 3 {
		t.Fatalf("60 keys landed on %d members: %v", len(per), per)
	}
}

func TestClusterRemoteErrorsKeepTheirTypes(t *testing.T) {
	nodes := startCluster(t, 2)
	ctx := context.Background()
	// Find a key owned by node 1 and call it from node 0.
	key := keyOwnedBy(t, nodes[1], nodes[0])
	err := casty.Do0(ctx, Flakies.Ref(nodes[0], key), (*Flaky).Fail)
	var fe *casty.ActorFailedError
	if !errors.As(err, &fe) || fe.Method != "Fail" || fe.Key != key || fe.Message != "flaky" || fe.Kind != Flakies.Name() {
		t.Fatalf("remote failure: %#v", err)
	}
	_, err = casty.Call(ctx, Hops.Ref(nodes[0], key), (*Hop).Go, route{Keys: []string{key}})
	if !errors.Is(err, casty.ErrReentrancy) {
		t.Fatalf("remote A→A: %v", err)
	}
}

// keyOwnedBy finds a key whose owner is owner, as seen from via.
func keyOwnedBy(t *testing.T, owner, via *casty.System) string {
	t.Helper()
	for i := range 1000 {
		key := fmt.Sprint("probe-", i)
		out, err := casty.Call0(context.Background(), Wheres.Ref(via, key), (*Where).Hit)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(out, owner.Addr()+"#") {
			return key
		}
	}
	t.Fatal("no key owned by", owner.Addr())
	return ""
}

var _ = sync.Mutex{}
