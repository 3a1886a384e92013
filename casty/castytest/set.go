package castytest

import (
	"cmp"
	"fmt"
	"slices"
)

// SetOp is an operation on the grow-only set named Key: an add of Elem,
// or (Read true) a read of every element.
type SetOp[E cmp.Ordered] struct {
	Key  string
	Read bool
	Elem E
}

// String renders the operation as add(k, e) or read(k).
func (op SetOp[E]) String() string {
	if op.Read {
		return fmt.Sprintf("read(%s)", op.Key)
	}
	return fmt.Sprintf("add(%s, %v)", op.Key, op.Elem)
}

// AddOp and ReadSetOp build set operations.
func AddOp[E cmp.Ordered](key string, e E) SetOp[E] { return SetOp[E]{Key: key, Elem: e} }

// ReadSetOp builds a read of the set key.
func ReadSetOp[E cmp.Ordered](key string) SetOp[E] { return SetOp[E]{Key: key, Read: true} }

// SetResult is a set operation's output: for a read, the elements in
// ascending order without duplicates (nil for none; SortedSet builds it);
// for an add, nil.
type SetResult[E cmp.Ordered] struct {
	Elems []E
}

// SortedSet returns the result of a read that returned elems in any order.
func SortedSet[E cmp.Ordered](elems []E) SetResult[E] {
	s := slices.Clone(elems)
	slices.Sort(s)
	s = slices.Compact(s)
	if len(s) == 0 {
		s = nil
	}
	return SetResult[E]{Elems: s}
}

// GrowOnlySetModel is a set of independent grow-only sets, one per Key,
// each starting empty: an add inserts its element, a read returns all.
func GrowOnlySetModel[E cmp.Ordered]() Model[[]E, SetOp[E], SetResult[E]] {
	return Model[[]E, SetOp[E], SetResult[E]]{
		Name:      "grow-only set",
		Init:      func() []E { return nil },
		Partition: func(op SetOp[E]) string { return op.Key },
		Step: func(s []E, op SetOp[E]) ([]E, SetResult[E]) {
			if op.Read {
				return s, SetResult[E]{Elems: s}
			}
			i, found := slices.BinarySearch(s, op.Elem)
			if found {
				return s, SetResult[E]{}
			}
			return slices.Insert(slices.Clip(s), i, op.Elem), SetResult[E]{}
		},
		EqualState:  func(a, b []E) bool { return slices.Equal(a, b) },
		EqualOutput: func(a, b SetResult[E]) bool { return slices.Equal(a.Elems, b.Elems) },
		ReadOnly:    func(op SetOp[E]) bool { return op.Read },
	}
}
