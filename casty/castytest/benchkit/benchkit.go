// Package benchkit is what Casty's own benchmarks share: the kinds they
// call, the floor they are measured against and the way they start and
// settle a cluster. The `go test -bench` benchmarks of package casty and
// `go run ./bench` (the repository's bench command, which builds
// BENCHMARKS.md) both use it, so a figure and its rerun command measure
// the same actor against the same floor.
//
// It is not an API for applications; its kinds are declared under the
// names "bench.…".
package benchkit

import (
	"context"
	"fmt"
	"iter"
	"strconv"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// Counter is the call benchmarks' actor: one int, one handler.
type Counter struct{ N int }

// Add adds d and returns the new total.
func (c *Counter) Add(_ context.Context, d int) (int, error) { c.N += d; return c.N, nil }

// Counters is the call benchmarks' kind: kept once, never replicated.
var Counters = casty.Actor[Counter](casty.Name("bench.Counter"))

// Register is the replication benchmarks' actor: one int of state, a
// handler that changes it and one that changes nothing.
type Register struct{ N int }

// Add adds d and returns the new total.
func (r *Register) Add(_ context.Context, d int) (int, error) { r.N += d; return r.N, nil }

// Get returns the total and changes nothing.
func (r *Register) Get(context.Context) (int, error) { return r.N, nil }

// The replication benchmarks' kinds: the same actor kept once, and kept on
// three members with a majority write and either read quorum.
var (
	Singles    = casty.Actor[Register](casty.Name("bench.Register1"))
	Majorities = casty.Actor[Register](casty.Name("bench.RegisterR3"), casty.Replicas(3), casty.Write(casty.Majority), casty.Read(casty.Majority))
	ReadOnes   = casty.Actor[Register](casty.Name("bench.RegisterR3One"), casty.Replicas(3), casty.Write(casty.Majority), casty.Read(casty.One))
)

// IntSource is the streaming benchmarks' actor.
type IntSource struct{}

// Count streams 0, 1, …, n-1.
func (s *IntSource) Count(_ context.Context, n int) iter.Seq2[int, error] {
	return func(yield func(int, error) bool) {
		for i := range n {
			if !yield(i, nil) {
				return
			}
		}
	}
}

// IntSources is the streaming benchmarks' kind.
var IntSources = casty.Actor[IntSource](casty.Name("bench.IntSource"))

// ChannelFloor is the local call's floor: a raw two-goroutine
// request/reply over unbuffered channels, the cheapest cross-goroutine
// round trip.
func ChannelFloor(b *testing.B) {
	req, rep := make(chan int), make(chan int)
	go func() {
		n := 0
		for d := range req {
			n += d
			rep <- n
		}
	}()
	for b.Loop() {
		req <- 1
		<-rep
	}
	close(req)
}

// StartMembers starts n members on 127.0.0.1 with opts, each after the
// first seeded by it, and returns them once each lists all n, or an
// error (the members started so far closed) when ctx ends first.
func StartMembers(ctx context.Context, n int, opts ...casty.Option) ([]*casty.System, error) {
	var nodes []*casty.System
	closeAll := func() {
		for _, s := range nodes {
			_ = s.Close(context.Background())
		}
	}
	for i := range n {
		o := opts
		if i > 0 {
			o = append([]casty.Option{casty.Seeds(nodes[0].Addr())}, opts...)
		}
		s, err := casty.Start(ctx, "127.0.0.1:0", o...)
		if err != nil {
			closeAll()
			return nil, err
		}
		nodes = append(nodes, s)
	}
	for _, s := range nodes {
		if err := s.WaitMembers(ctx, n); err != nil {
			closeAll()
			return nil, fmt.Errorf("benchkit: %d members did not see each other: %w", n, err)
		}
	}
	return nodes, nil
}

// Settled reports whether every member places all of nodes and has no
// range sync in flight: replicated figures are measured from there.
func Settled(nodes []*casty.System) bool {
	for _, s := range nodes {
		if st := s.Replication(); st.Syncing || st.Placed != len(nodes) {
			return false
		}
	}
	return true
}

// WaitSettled waits until Settled(nodes), or fails with ctx's error.
func WaitSettled(ctx context.Context, nodes []*casty.System) error {
	for !Settled(nodes) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("benchkit: replication did not settle: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// KeyOwnedBy returns the first key prefix+"0", prefix+"1", … of the kind
// named kind that the member at addr owns, as via sees the placement, or
// "" if none of the first 65,536 is (addr is not a placed member).
func KeyOwnedBy(via *casty.System, kind, addr, prefix string) string {
	for i := range 1 << 16 {
		k := prefix + strconv.Itoa(i)
		if m, _ := via.OwnerOf(kind, k); m.Addr == addr {
			return k
		}
	}
	return ""
}
