package collections

import (
	"context"
	"iter"

	"github.com/casty-go/casty/casty"
)

// Set is a distributed set of T, sharded by element like a Map.
type Set[T comparable] struct {
	b *base
	e codec[T]
}

// NewSet opens the set called name on sys; see NewMap.
func NewSet[T comparable](sys *casty.System, name string, opts ...Option) (*Set[T], error) {
	b, e, _, err := openEntries[T, struct{}](sys, "set", name, opts)
	if err != nil {
		return nil, err
	}
	return &Set[T]{b: b, e: e}, nil
}

// Name returns the set's name.
func (s *Set[T]) Name() string { return s.b.name }

// Add adds v and reports whether it was new.
func (s *Set[T]) Add(ctx context.Context, v T) (bool, error) {
	ev, err := s.e.encode(v)
	if err != nil {
		return false, err
	}
	r, err := s.b.call(ctx, s.b.shardOf(ev), (*shard).Put, req{Key: ev})
	return err == nil && !r.Found, err
}

// Remove removes v and reports whether it was present.
func (s *Set[T]) Remove(ctx context.Context, v T) (bool, error) {
	ev, err := s.e.encode(v)
	if err != nil {
		return false, err
	}
	r, err := s.b.call(ctx, s.b.shardOf(ev), (*shard).Remove, req{Key: ev})
	return r.Found, err
}

// Contains reports whether v is present.
func (s *Set[T]) Contains(ctx context.Context, v T) (bool, error) {
	ev, err := s.e.encode(v)
	if err != nil {
		return false, err
	}
	r, err := s.b.call(ctx, s.b.shardOf(ev), (*shard).Contains, req{Key: ev})
	return r.Found, err
}

// Size counts the elements, asking every shard at once.
func (s *Set[T]) Size(ctx context.Context) (int, error) { return s.b.sum(ctx, (*shard).Size) }

// Clear removes every element, shard by shard at once.
func (s *Set[T]) Clear(ctx context.Context) error {
	_, err := s.b.each(ctx, (*shard).Clear, req{})
	return err
}

// Items streams the elements, as Map.Items streams entries.
func (s *Set[T]) Items(ctx context.Context) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for pair, err := range s.b.pages(ctx, 2) {
			var v T
			if err == nil {
				v, err = s.e.decode(pair[0])
			}
			if !yield(v, err) || err != nil {
				return
			}
		}
	}
}
