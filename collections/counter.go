package collections

import (
	"context"
	"math/rand/v2"
	"sync/atomic"

	"github.com/casty-go/casty/casty"
)

// Counter is a distributed integer striped over shard actors (default 32
// stripes): each Add lands on the next stripe in turn, so concurrent adds
// spread over the stripes' owners; Get sums every stripe at once.
type Counter struct {
	b    *base
	next atomic.Uint32
}

// NewCounter opens the counter called name on sys. Options: Replicas,
// Write, Read, Shards (the stripe count).
func NewCounter(sys *casty.System, name string, opts ...Option) (*Counter, error) {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	n, err := shardCount(o)
	if err != nil {
		return nil, err
	}
	b, err := newBase(sys, "counter", name, int64(n), n, o)
	if err != nil {
		return nil, err
	}
	c := &Counter{b: b}
	c.next.Store(rand.Uint32()) // openers start on different stripes
	return c, nil
}

// Name returns the counter's name.
func (c *Counter) Name() string { return c.b.name }

// Add adds delta (which may be negative) to one stripe.
func (c *Counter) Add(ctx context.Context, delta int64) error {
	i := int(c.next.Add(1) % uint32(len(c.b.refs)))
	_, err := c.b.call(ctx, i, (*shard).CounterAdd, req{N: delta})
	return err
}

// Get returns the sum of every stripe, read at once: adds under way
// meanwhile may or may not be counted.
func (c *Counter) Get(ctx context.Context) (int64, error) {
	rs, err := c.b.each(ctx, (*shard).CounterGet, req{})
	var n int64
	for _, r := range rs {
		n += r.N
	}
	return n, err
}

// Reset sets every stripe to zero. Adds made meanwhile may survive it.
func (c *Counter) Reset(ctx context.Context) error {
	_, err := c.b.each(ctx, (*shard).CounterReset, req{})
	return err
}

// CounterAdd adds N to the stripe and answers its new value.
func (s *shard) CounterAdd(_ context.Context, q req) (resp, error) {
	s.Count += q.N
	return resp{N: s.Count}, nil
}

// CounterGet answers the stripe's value.
func (s *shard) CounterGet(context.Context, req) (resp, error) { return resp{N: s.Count}, nil }

// CounterReset sets the stripe to zero.
func (s *shard) CounterReset(context.Context, req) (resp, error) {
	s.Count = 0
	return resp{}, nil
}
