package collections

import (
	"context"
	"iter"

	"github.com/casty-go/casty/casty"
)

// MultiMap is a distributed map from K to a set of V, sharded by key: a
// key's values live together on its shard.
type MultiMap[K comparable, V comparable] struct {
	b *base
	k codec[K]
	v codec[V]
}

// NewMultiMap opens the multimap called name on sys; see NewMap.
func NewMultiMap[K comparable, V comparable](sys *casty.System, name string, opts ...Option) (*MultiMap[K, V], error) {
	b, k, v, err := openEntries[K, V](sys, "multimap", name, opts)
	if err != nil {
		return nil, err
	}
	return &MultiMap[K, V]{b: b, k: k, v: v}, nil
}

// Name returns the multimap's name.
func (m *MultiMap[K, V]) Name() string { return m.b.name }

func (m *MultiMap[K, V]) pair(k K, v V) (string, string, error) {
	ek, err := m.k.encode(k)
	if err != nil {
		return "", "", err
	}
	ev, err := m.v.encode(v)
	return ek, ev, err
}

// Put adds v to k's values and reports whether it was new.
func (m *MultiMap[K, V]) Put(ctx context.Context, k K, v V) (bool, error) {
	ek, ev, err := m.pair(k, v)
	if err != nil {
		return false, err
	}
	r, err := m.b.call(ctx, m.b.shardOf(ek), (*shard).MultiPut, req{Key: ek, Value: ev})
	return err == nil && !r.Found, err
}

// Remove removes v from k's values and reports whether it was there.
func (m *MultiMap[K, V]) Remove(ctx context.Context, k K, v V) (bool, error) {
	ek, ev, err := m.pair(k, v)
	if err != nil {
		return false, err
	}
	r, err := m.b.call(ctx, m.b.shardOf(ek), (*shard).MultiRemove, req{Key: ek, Value: ev})
	return r.Found, err
}

// RemoveKey removes k with all its values and reports how many there were.
func (m *MultiMap[K, V]) RemoveKey(ctx context.Context, k K) (int, error) {
	ek, err := m.k.encode(k)
	if err != nil {
		return 0, err
	}
	r, err := m.b.call(ctx, m.b.shardOf(ek), (*shard).MultiRemoveKey, req{Key: ek})
	return int(r.N), err
}

// Contains reports whether v is among k's values.
func (m *MultiMap[K, V]) Contains(ctx context.Context, k K, v V) (bool, error) {
	ek, ev, err := m.pair(k, v)
	if err != nil {
		return false, err
	}
	r, err := m.b.call(ctx, m.b.shardOf(ek), (*shard).MultiContains, req{Key: ek, Value: ev, Has: true})
	return r.Found, err
}

// ContainsKey reports whether k has any value.
func (m *MultiMap[K, V]) ContainsKey(ctx context.Context, k K) (bool, error) {
	ek, err := m.k.encode(k)
	if err != nil {
		return false, err
	}
	r, err := m.b.call(ctx, m.b.shardOf(ek), (*shard).MultiContains, req{Key: ek})
	return r.Found, err
}

// Get streams k's values, a page at a time, in the order of their
// encodings.
func (m *MultiMap[K, V]) Get(ctx context.Context, k K) iter.Seq2[V, error] {
	return func(yield func(V, error) bool) {
		var zero V
		ek, err := m.k.encode(k)
		if err != nil {
			yield(zero, err)
			return
		}
		i, cursor := m.b.shardOf(ek), ""
		for {
			r, err := m.b.call(ctx, i, (*shard).MultiGet, req{Key: ek, Cursor: cursor, N: pageSize})
			if err != nil {
				yield(zero, err)
				return
			}
			for _, ev := range r.List {
				v, err := m.v.decode(ev)
				if !yield(v, err) || err != nil {
					return
				}
				cursor = ev
			}
			if !r.More {
				return
			}
		}
	}
}

// Size counts the values of every key, asking every shard at once.
func (m *MultiMap[K, V]) Size(ctx context.Context) (int, error) {
	return m.b.sum(ctx, (*shard).MultiSize)
}

// Clear removes every key, shard by shard at once.
func (m *MultiMap[K, V]) Clear(ctx context.Context) error {
	_, err := m.b.each(ctx, (*shard).Clear, req{})
	return err
}
