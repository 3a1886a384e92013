package collections

import (
	"context"

	"github.com/casty-go/casty/casty"
)

// Register is a distributed atomic reference to a T, on one shard actor:
// its single owner serialises every operation, which is why
// CompareAndSwap needs no more than a comparison. Values compare by their
// encodings (map keys sorted), so equal values compare equal.
type Register[T any] struct {
	b *base
	v codec[T]
}

// NewRegister opens the register called name on sys. Options: Replicas,
// Write, Read, MaxItem. For reads that see every acknowledged write even
// while the owner is cut off, use Read(casty.Majority).
func NewRegister[T any](sys *casty.System, name string, opts ...Option) (*Register[T], error) {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	if err := checkType[T]("value"); err != nil {
		return nil, err
	}
	b, err := newBase(sys, "register", name, 0, 1, o)
	if err != nil {
		return nil, err
	}
	return &Register[T]{b: b, v: newCodec[T]("value", o.maxItem)}, nil
}

// Name returns the register's name.
func (r *Register[T]) Name() string { return r.b.name }

// Get returns the value and whether one was set.
func (r *Register[T]) Get(ctx context.Context) (T, bool, error) {
	res, err := r.b.call(ctx, 0, (*shard).RegGet, req{})
	return r.value(res, err)
}

func (r *Register[T]) value(res resp, err error) (T, bool, error) {
	var zero T
	if err != nil || !res.Found {
		return zero, false, err
	}
	v, err := r.v.decode(res.Value)
	return v, err == nil, err
}

// Set stores v.
func (r *Register[T]) Set(ctx context.Context, v T) error {
	ev, err := r.v.encode(v)
	if err != nil {
		return err
	}
	_, err = r.b.call(ctx, 0, (*shard).RegSwap, req{Value: ev})
	return err
}

// Swap stores v and returns the value it replaced, if one was set.
func (r *Register[T]) Swap(ctx context.Context, v T) (T, bool, error) {
	var zero T
	ev, err := r.v.encode(v)
	if err != nil {
		return zero, false, err
	}
	return r.value(r.b.call(ctx, 0, (*shard).RegSwap, req{Value: ev}))
}

// CompareAndSwap stores v if the register holds old, and reports whether
// it did. Of concurrent swaps from the same old value exactly one wins.
// An unset register holds no value: use CompareAndSwapUnset for it.
func (r *Register[T]) CompareAndSwap(ctx context.Context, old, v T) (bool, error) {
	eo, err := r.v.encode(old)
	if err != nil {
		return false, err
	}
	return r.cas(ctx, req{Old: eo, Has: true}, v)
}

// CompareAndSwapUnset stores v if no value was ever set, and reports
// whether it did.
func (r *Register[T]) CompareAndSwapUnset(ctx context.Context, v T) (bool, error) {
	return r.cas(ctx, req{}, v)
}

func (r *Register[T]) cas(ctx context.Context, q req, v T) (bool, error) {
	ev, err := r.v.encode(v)
	if err != nil {
		return false, err
	}
	q.Value = ev
	res, err := r.b.call(ctx, 0, (*shard).RegCAS, q)
	return err == nil && res.Found, err
}

// RegGet answers the register's value.
func (s *shard) RegGet(context.Context, req) (resp, error) {
	return resp{Value: s.Value, Found: s.Present}, nil
}

// RegSwap stores Value and answers the value it replaced.
func (s *shard) RegSwap(_ context.Context, q req) (resp, error) {
	old := resp{Value: s.Value, Found: s.Present}
	s.Value, s.Present = q.Value, true
	return old, nil
}

// RegCAS stores Value if the register holds Old (Has) or nothing (!Has);
// Found reports the swap.
func (s *shard) RegCAS(_ context.Context, q req) (resp, error) {
	if s.Present != q.Has || s.Present && s.Value != q.Old {
		return resp{}, nil
	}
	s.Value, s.Present = q.Value, true
	return resp{Found: true}, nil
}
