package casty_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest/benchkit"
)

func benchCluster(b *testing.B, n int) []*casty.System {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nodes, err := benchkit.StartMembers(ctx, n, quiet())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		for _, s := range nodes {
			s.Close(context.Background())
		}
	})
	return nodes
}

// BenchmarkClusterCallRemote: sequential calls to a key another member owns.
func BenchmarkClusterCallRemote(b *testing.B) {
	nodes := benchCluster(b, 2)
	ctx := context.Background()
	key := "r"
	for i := 0; ; i++ {
		key = "r" + strconv.Itoa(i)
		if m, _ := nodes[0].OwnerOf(Counters.Name(), key); m.Addr == nodes[1].Addr() {
			break
		}
	}
	ref := Counters.Ref(nodes[0], key)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := casty.Call(ctx, ref, (*Counter).Add, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClusterParallel: 64 callers over 1,000 keys spread across 3 members.
func BenchmarkClusterParallel(b *testing.B) {
	nodes := benchCluster(b, 3)
	ctx := context.Background()
	b.ResetTimer()
	per := b.N/64 + 1
	var wg sync.WaitGroup
	for w := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			from := nodes[w%3]
			i := w * 31
			for range per {
				i = (i + 1) % 1000
				if _, err := casty.Call(ctx, Counters.Ref(from, "p"+strconv.Itoa(i)), (*Counter).Add, 1); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
