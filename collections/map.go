package collections

import (
	"context"
	"iter"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/ring"
)

// Map is a distributed map from K to V, sharded by key over shard actors
// (default 32): a key's operations go to one shard, Size and Clear fan
// out to every shard at once, Items streams them shard by shard. Keys and
// values are encoded by the facade, so neither needs registering.
type Map[K comparable, V any] struct {
	b *base
	k codec[K]
	v codec[V]
}

// Entry is one key and its value, as Items lists them.
type Entry[K, V any] struct {
	Key   K
	Value V
}

// NewMap opens the map called name on sys, from a member or a lite member.
// Nothing is sent until the first operation, which checks that every
// opener agrees on the map's type, replication triple and shard count
// (ErrMismatch otherwise). Options: Replicas, Write, Read, Shards, MaxItem.
func NewMap[K comparable, V any](sys *casty.System, name string, opts ...Option) (*Map[K, V], error) {
	b, k, v, err := openEntries[K, V](sys, "map", name, opts)
	if err != nil {
		return nil, err
	}
	return &Map[K, V]{b: b, k: k, v: v}, nil
}

// openEntries is the part of opening a map, set or multimap they share.
func openEntries[K, V any](sys *casty.System, typ, name string, opts []Option) (*base, codec[K], codec[V], error) {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	kc, vc := newCodec[K]("key", o.maxItem), newCodec[V]("value", o.maxItem)
	if typ == "set" {
		kc.what = "element"
	}
	n, err := shardCount(o)
	if err == nil {
		err = checkType[K](kc.what)
	}
	if err == nil && typ != "set" {
		err = checkType[V]("value")
	}
	if err != nil {
		return nil, kc, vc, err
	}
	b, err := newBase(sys, typ, name, int64(n), n, o)
	return b, kc, vc, err
}

// shardOf is the shard an encoded item lives on: its hash modulo the
// shard count (ring.Shard's rule).
func (b *base) shardOf(enc string) int {
	return int(ring.HashString(enc) % uint64(len(b.refs)))
}

// Name returns the map's name.
func (m *Map[K, V]) Name() string { return m.b.name }

// Put stores v under k.
func (m *Map[K, V]) Put(ctx context.Context, k K, v V) error {
	ek, err := m.k.encode(k)
	if err != nil {
		return err
	}
	ev, err := m.v.encode(v)
	if err != nil {
		return err
	}
	_, err = m.b.call(ctx, m.b.shardOf(ek), (*shard).Put, req{Key: ek, Value: ev})
	return err
}

// Get returns k's value and whether k is present.
func (m *Map[K, V]) Get(ctx context.Context, k K) (V, bool, error) {
	var zero V
	ek, err := m.k.encode(k)
	if err != nil {
		return zero, false, err
	}
	r, err := m.b.call(ctx, m.b.shardOf(ek), (*shard).Get, req{Key: ek})
	if err != nil || !r.Found {
		return zero, false, err
	}
	v, err := m.v.decode(r.Value)
	return v, err == nil, err
}

// Remove deletes k and reports whether it was present.
func (m *Map[K, V]) Remove(ctx context.Context, k K) (bool, error) {
	ek, err := m.k.encode(k)
	if err != nil {
		return false, err
	}
	r, err := m.b.call(ctx, m.b.shardOf(ek), (*shard).Remove, req{Key: ek})
	return r.Found, err
}

// Contains reports whether k is present.
func (m *Map[K, V]) Contains(ctx context.Context, k K) (bool, error) {
	ek, err := m.k.encode(k)
	if err != nil {
		return false, err
	}
	r, err := m.b.call(ctx, m.b.shardOf(ek), (*shard).Contains, req{Key: ek})
	return r.Found, err
}

// Size counts the entries, asking every shard at once. Writes under way
// meanwhile may or may not be counted.
func (m *Map[K, V]) Size(ctx context.Context) (int, error) { return m.b.sum(ctx, (*shard).Size) }

// Clear removes every entry, shard by shard at once; entries put
// meanwhile may survive it.
func (m *Map[K, V]) Clear(ctx context.Context) error {
	_, err := m.b.each(ctx, (*shard).Clear, req{})
	return err
}

// Items streams the entries, a page at a time, shard after shard, each
// shard's in the order of its keys' encodings. An entry put or removed
// meanwhile may or may not be listed. A failure ends the stream with
// (zero, err); breaking the loop stops it.
func (m *Map[K, V]) Items(ctx context.Context) iter.Seq2[Entry[K, V], error] {
	return func(yield func(Entry[K, V], error) bool) {
		for pair, err := range m.b.pages(ctx, 2) {
			var e Entry[K, V]
			if err == nil {
				if e.Key, err = m.k.decode(pair[0]); err == nil {
					e.Value, err = m.v.decode(pair[1])
				}
			}
			if !yield(e, err) || err != nil {
				return
			}
		}
	}
}

// sum adds up every shard's N.
func (b *base) sum(ctx context.Context, m func(*shard, context.Context, req) (resp, error)) (int, error) {
	rs, err := b.each(ctx, m, req{})
	n := 0
	for _, r := range rs {
		n += int(r.N)
	}
	return n, err
}

// pages streams every shard's Page listing, each item as a slice of
// width strings (a key and its value, or an element).
func (b *base) pages(ctx context.Context, width int) iter.Seq2[[]string, error] {
	return func(yield func([]string, error) bool) {
		for i := range b.refs {
			cursor := ""
			for {
				r, err := b.call(ctx, i, (*shard).Page, req{Cursor: cursor, N: pageSize})
				if err != nil {
					yield(nil, err)
					return
				}
				for j := 0; j+1 < len(r.List); j += 2 {
					if !yield(r.List[j:j+width:j+width], nil) {
						return
					}
					cursor = r.List[j]
				}
				if !r.More {
					break
				}
			}
		}
	}
}
