package ring

import (
	"fmt"
	"math"
	"slices"
)

// Range is an arc of the ring: the points p with Start < p <= End, wrapping
// around past the largest uint64 when Start > End. Start == End denotes the
// whole circle (this package never produces an empty range; the whole circle
// is always reported as Range{0, 0}).
type Range struct {
	Start uint64 // exclusive
	End   uint64 // inclusive
}

// Full reports whether r is the whole circle.
func (r Range) Full() bool { return r.Start == r.End }

// Contains reports whether point p lies in r.
func (r Range) Contains(p uint64) bool {
	switch {
	case r.Start < r.End:
		return r.Start < p && p <= r.End
	case r.Start > r.End:
		return p > r.Start || p <= r.End
	}
	return true
}

// Size returns the number of points in r, modulo 2^64: the whole circle
// (2^64 points) reports 0. Use Share for a fraction.
func (r Range) Size() uint64 { return r.End - r.Start }

// Share returns the fraction of the circle covered by r, in (0, 1].
func (r Range) Share() float64 {
	if r.Full() {
		return 1
	}
	return float64(r.Size()) / (1 << 64)
}

// String formats r as "(Start, End]".
func (r Range) String() string { return fmt.Sprintf("(%d, %d]", r.Start, r.End) }

// Arc is a maximal range owned by one member.
type Arc struct {
	Range
	Owner NodeID
}

// seg is one elementary, non-empty segment of a cyclic partition of the
// circle: it runs from the previous segment's end (exclusive) to end
// (inclusive). key is what the caller coalesces on.
type seg[K comparable] struct {
	end uint64
	key K
}

type run[K comparable] struct {
	Range
	key K
}

// coalesce merges cyclically adjacent segments with equal keys into maximal
// runs and returns those whose key passes keep, sorted by End. segs must be
// in ascending end order and cover the circle.
func coalesce[K comparable](segs []seg[K], keep func(K) bool) []run[K] {
	m := len(segs)
	if m == 0 {
		return nil
	}
	first := -1
	for j := range segs {
		if segs[j].key != segs[(j+m-1)%m].key {
			first = j
			break
		}
	}
	if first < 0 { // a single key all around: the whole circle
		if keep(segs[0].key) {
			return []run[K]{{Range{0, 0}, segs[0].key}}
		}
		return nil
	}
	// at maps the k-th segment counted from first to its index.
	at := func(k int) int {
		if j := first + k; j < m {
			return j
		}
		return first + k - m
	}
	var out []run[K]
	for k := 0; k < m; {
		j := at(k)
		key := segs[j].key
		start := segs[(j+m-1)%m].end
		last := j
		for k++; k < m && segs[at(k)].key == key; k++ {
			last = at(k)
		}
		if keep(key) {
			out = append(out, run[K]{Range{start, segs[last].end}, key})
		}
	}
	slices.SortFunc(out, func(a, b run[K]) int {
		switch {
		case a.End < b.End:
			return -1
		case a.End > b.End:
			return 1
		}
		return 0
	})
	return out
}

// segments returns the ring's elementary segments, one per entry whose range
// is not empty (entry i > 0 is empty when its token equals entry i-1's),
// keyed by key(i).
func segments[K comparable](r *Ring, key func(i int) K) []seg[K] {
	segs := make([]seg[K], 0, len(r.tokens))
	for i, t := range r.tokens {
		if i > 0 && r.tokens[i-1] == t {
			continue
		}
		segs = append(segs, seg[K]{t, key(i)})
	}
	return segs
}

// Arcs partitions the circle into maximal arcs of a single owner, sorted by
// End. A one-member ring is a single Arc covering the whole circle; an empty
// ring has no arcs.
func (r *Ring) Arcs() []Arc {
	runs := coalesce(segments(r, func(i int) uint32 { return r.owners[i] }),
		func(uint32) bool { return true })
	out := make([]Arc, len(runs))
	for i, x := range runs {
		out[i] = Arc{x.Range, r.members[x.key]}
	}
	return out
}

// OwnedRanges returns the maximal ranges owned by id, sorted by End; nil when
// id is not a member.
func (r *Ring) OwnedRanges(id NodeID) []Range {
	mi, ok := slices.BinarySearchFunc(r.members, id, NodeID.Compare)
	if !ok {
		return nil
	}
	return ranges(coalesce(segments(r, func(i int) bool { return r.owners[i] == uint32(mi) }),
		func(k bool) bool { return k }))
}

// ReplicaRanges returns the maximal ranges whose replica set for replication
// factor n (see Replicas) contains id, owner included, sorted by End; nil when
// id is not a member or n <= 0. With n >= Size() a member replicates the
// whole circle.
func (r *Ring) ReplicaRanges(id NodeID, n int) []Range {
	mi, ok := slices.BinarySearchFunc(r.members, id, NodeID.Compare)
	if !ok || n <= 0 {
		return nil
	}
	if n >= len(r.members) {
		return []Range{{0, 0}} // every member replicates everything
	}
	buf := make([]uint32, 0, n)
	var seen []bool
	if n > linearScanMax {
		seen = make([]bool, len(r.members))
	}
	return ranges(coalesce(segments(r, func(i int) bool {
		buf = r.walk(buf[:0], i, n, seen)
		return slices.Contains(buf, uint32(mi))
	}), func(k bool) bool { return k }))
}

func ranges[K comparable](runs []run[K]) []Range {
	if len(runs) == 0 {
		return nil
	}
	out := make([]Range, len(runs))
	for i, x := range runs {
		out[i] = x.Range
	}
	return out
}

// Move is a range whose owner differs between two rings. From or To is the
// nil NodeID when the old or new ring is empty.
type Move struct {
	Range
	From NodeID // owner in the old ring
	To   NodeID // owner in the new ring
}

// Diff lists what changes owner between old and new: the maximal ranges over
// which the (old owner, new owner) pair is constant and the two differ,
// sorted by End. Diff of equal member sets is empty. On a join the moves all
// have To == the joiner; on a leave they all have From == the leaver.
// Either ring may be nil or empty.
func Diff(old, new *Ring) []Move {
	if old == nil {
		old = &Ring{}
	}
	if new == nil {
		new = &Ring{}
	}
	const none = math.MaxUint32
	type pair struct{ from, to uint32 }
	// Elementary segments: the union of both rings' tokens. Ownership in
	// either ring is constant on (previous breakpoint, breakpoint], and equal
	// to the owner of the breakpoint itself.
	segs := make([]seg[pair], 0, len(old.tokens)+len(new.tokens))
	i, j := 0, 0
	for i < len(old.tokens) || j < len(new.tokens) {
		var b uint64
		switch {
		case j == len(new.tokens) || (i < len(old.tokens) && old.tokens[i] <= new.tokens[j]):
			b = old.tokens[i]
		default:
			b = new.tokens[j]
		}
		p := pair{none, none}
		switch {
		case i < len(old.tokens):
			p.from = old.owners[i]
		case len(old.tokens) > 0: // past the last token: wrap to the first
			p.from = old.owners[0]
		}
		switch {
		case j < len(new.tokens):
			p.to = new.owners[j]
		case len(new.tokens) > 0:
			p.to = new.owners[0]
		}
		segs = append(segs, seg[pair]{b, p})
		// Advance past every token equal to b: the first one owns b.
		for i < len(old.tokens) && old.tokens[i] == b {
			i++
		}
		for j < len(new.tokens) && new.tokens[j] == b {
			j++
		}
	}
	name := func(r *Ring, m uint32) NodeID {
		if m == none {
			return NodeID{}
		}
		return r.members[m]
	}
	var out []Move
	for _, x := range coalesce(segs, func(p pair) bool {
		return name(old, p.from) != name(new, p.to)
	}) {
		out = append(out, Move{x.Range, name(old, x.key.from), name(new, x.key.to)})
	}
	return out
}
