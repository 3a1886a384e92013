package collections

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/casty-go/casty/casty"
)

// base is what every collection's facade holds: where its shards are and
// whether the catalog has confirmed what it is.
type base struct {
	sys   *casty.System
	kind  *casty.Kind[shard]
	name  string
	meta  meta
	refs  []casty.Ref[shard] // one per shard or stripe; one for a single-owner collection
	opt   options
	catal casty.Ref[shard]

	// opened: the catalog has confirmed the collection. Callers racing
	// to open it each ask the catalog (Open is idempotent for the same
	// meta) rather than queue behind one lock: a lock held across the
	// call would make a caller wait past its own ctx for another's,
	// and on a testing/synctest clock a goroutine waiting on a mutex is
	// not durably blocked, so the bubble's clock — and the holder's
	// timeout — would never advance.
	opened atomic.Bool

	// acks are grants this facade collected whose records the shard may
	// drop: sent with the facade's next calls (waits.go).
	ackMu sync.Mutex
	acks  []string
}

// newBase checks a collection's name and options and finds its kind.
// param is its shard or stripe count, permits or parties; shards how many
// shard actors it has.
func newBase(sys *casty.System, typ, name string, param int64, shards int, o options) (*base, error) {
	if name == "" || len(name) > MaxName {
		return nil, fmt.Errorf("%w: %q: a name has 1 to %d bytes", ErrInvalidName, truncate(name), MaxName)
	}
	if sys == nil {
		return nil, fmt.Errorf("%w: a nil *casty.System", ErrInvalidOption)
	}
	if o.maxItem < 1 {
		return nil, fmt.Errorf("%w: MaxItem must be at least 1, got %d", ErrInvalidOption, o.maxItem)
	}
	if o.ttl <= 0 {
		return nil, fmt.Errorf("%w: TTL must be positive, got %v", ErrInvalidOption, o.ttl)
	}
	t, err := o.triple()
	if err != nil {
		return nil, err
	}
	k := kindOf(t)
	if k == nil {
		return nil, fmt.Errorf("%w: %s %q wants %s; declare it at package level in a package every member imports: var _ = collections.Declare(...)", ErrUndeclared, typ, name, t)
	}
	b := &base{
		sys: sys, kind: k, name: name, opt: o,
		meta:  meta{Type: typ, Triple: t.String(), Param: param},
		catal: kindOf(catalogTriple).Ref(sys, "catalog/"+name),
	}
	if shards == 1 {
		b.refs = []casty.Ref[shard]{k.Ref(sys, typ+"/"+name)}
	} else {
		b.refs = make([]casty.Ref[shard], shards)
		for i := range b.refs {
			b.refs[i] = k.Ref(sys, typ+"/"+name+"/"+strconv.Itoa(i))
		}
	}
	return b, nil
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// shardCount reads the Shards option for a sharded collection.
func shardCount(o options) (int, error) {
	if o.shards < 1 || o.shards > MaxShards {
		return 0, fmt.Errorf("%w: Shards must be 1 to %d, got %d", ErrInvalidOption, MaxShards, o.shards)
	}
	return o.shards, nil
}

// open makes sure, once per facade (or once per caller among the first
// ones, should they race), that the catalog agrees on what the
// collection is: the first opener records it, later ones must match.
func (b *base) open(ctx context.Context) error {
	if b.opened.Load() {
		return nil
	}
	r, err := casty.Call(ctx, b.catal, (*shard).Open, req{Meta: b.meta})
	if err != nil {
		return fmt.Errorf("collections: opening %s %q: %w", b.meta.Type, b.name, err)
	}
	if !r.Found {
		return fmt.Errorf("%w: %q is a %s with %s, param %d; opened as a %s with %s, param %d",
			ErrMismatch, b.name, r.Meta.Type, r.Meta.Triple, r.Meta.Param, b.meta.Type, b.meta.Triple, b.meta.Param)
	}
	b.opened.Store(true)
	return nil
}

// call makes one call to a shard, after open.
func (b *base) call(ctx context.Context, i int, m func(*shard, context.Context, req) (resp, error), q req) (resp, error) {
	if err := b.open(ctx); err != nil {
		return resp{}, err
	}
	return casty.Call(ctx, b.refs[i], m, q)
}

// each calls every shard at once and returns their responses in order,
// or the first error.
func (b *base) each(ctx context.Context, m func(*shard, context.Context, req) (resp, error), q req) ([]resp, error) {
	if err := b.open(ctx); err != nil {
		return nil, err
	}
	out := make([]resp, len(b.refs))
	errs := make([]error, len(b.refs))
	var wg sync.WaitGroup
	for i, ref := range b.refs {
		wg.Go(func() { out[i], errs[i] = casty.Call(ctx, ref, m, q) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Name returns the collection's name.
func (b *base) Name() string { return b.name }
