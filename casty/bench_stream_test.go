package casty_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest/benchkit"
)

// IntSource and IntSources are benchkit's streaming actor and kind
// (castytest/benchkit, shared with go run ./bench).
type IntSource = benchkit.IntSource

// IntSources is benchkit's kind of IntSource.
var IntSources = benchkit.IntSources

// streamElems is how many ints one benchmark operation moves.
const streamElems = 1024

// BenchmarkStreamInts: one op is a local server stream of streamElems small
// ints, consumed as fast as they come; ns/elem is the figure.
func BenchmarkStreamInts(b *testing.B) {
	ctx := context.Background()
	sys := casty.Local()
	defer sys.Close(ctx)
	ref := IntSources.Ref(sys, "bench")
	b.ReportAllocs()
	for b.Loop() {
		sum := 0
		for v, err := range casty.Stream(ctx, ref, (*IntSource).Count, streamElems) {
			if err != nil {
				b.Fatal(err)
			}
			sum += v
		}
		if sum != streamElems*(streamElems-1)/2 {
			b.Fatalf("sum %d, want %d", sum, streamElems*(streamElems-1)/2)
		}
	}
	reportPerElem(b)
}

// BenchmarkStreamChannelFloor is the floor: streamElems ints moved from a
// producer goroutine to the consumer through a raw channel of capacity
// casty.StreamBuffer, the stream's own buffer size.
func BenchmarkStreamChannelFloor(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		ch := make(chan int, casty.StreamBuffer)
		go func() {
			for i := range streamElems {
				ch <- i
			}
			close(ch)
		}()
		sum := 0
		for v := range ch {
			sum += v
		}
		if sum != streamElems*(streamElems-1)/2 {
			b.Fatalf("sum %d", sum)
		}
	}
	reportPerElem(b)
}

func reportPerElem(b *testing.B) {
	elems := float64(b.N) * streamElems
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/elems, "ns/elem")
	b.ReportMetric(elems/b.Elapsed().Seconds(), "elems/s")
}

// BenchmarkStreamIntsRemote: one op is a server stream of streamElems
// small ints from an actor on another member of a 2-member cluster,
// consumed as fast as they come.
func BenchmarkStreamIntsRemote(b *testing.B) {
	nodes := benchCluster(b, 2)
	ctx := context.Background()
	key := ""
	for i := 0; ; i++ {
		key = "s" + strconv.Itoa(i)
		if m, _ := nodes[0].OwnerOf(IntSources.Name(), key); m.Addr == nodes[1].Addr() {
			break
		}
	}
	ref := IntSources.Ref(nodes[0], key)
	b.ReportAllocs()
	for b.Loop() {
		sum := 0
		for v, err := range casty.Stream(ctx, ref, (*IntSource).Count, streamElems) {
			if err != nil {
				b.Fatal(err)
			}
			sum += v
		}
		if sum != streamElems*(streamElems-1)/2 {
			b.Fatalf("sum %d, want %d", sum, streamElems*(streamElems-1)/2)
		}
	}
	reportPerElem(b)
}

// BenchmarkStreamBigRemote: one op is a server stream of 64 elements of
// 16 KiB from an actor on another member; MB/s is the figure.
func BenchmarkStreamBigRemote(b *testing.B) {
	nodes := benchCluster(b, 2)
	ctx := context.Background()
	key := ""
	for i := 0; ; i++ {
		key = "b" + strconv.Itoa(i)
		if m, _ := nodes[0].OwnerOf(Pumps.Name(), key); m.Addr == nodes[1].Addr() {
			break
		}
	}
	ref := Pumps.Ref(nodes[0], key)
	b.SetBytes(64 * 16 << 10)
	for b.Loop() {
		n := 0
		for _, err := range casty.Stream(ctx, ref, (*Pump).Big, 64) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 64 {
			b.Fatalf("%d elements, want 64", n)
		}
	}
}
