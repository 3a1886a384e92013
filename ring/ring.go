package ring

import (
	"slices"
)

// Ring is the token ring of one member set: every member's VNodes tokens,
// sorted by (token, node id). A Ring is immutable once built and safe for
// concurrent use; build a new one with New when the member set changes.
//
// The zero Ring and a Ring built from no members are empty: they own nothing,
// Owner reports false and Replicas returns no nodes.
type Ring struct {
	members []NodeID // distinct, ascending
	tokens  []uint64 // ascending; ties broken by owner node id
	owners  []uint32 // owners[i] indexes members: the node of tokens[i]

	// Lookup index: bucket b holds the tokens whose top bits (token >> shift)
	// equal b; they are tokens[index[b]:index[b+1]]. With about one token per
	// bucket, Owner reads two index words and one or two tokens instead of
	// binary-searching the whole slice.
	index []uint32
	shift uint
}

// New builds the ring of a member set. The ring depends only on the set:
// the order of members never matters and duplicates are ignored. The nil
// node id is rejected with ErrNilNode. Only full members belong in the set;
// lite members are never placed.
func New(members []NodeID) (*Ring, error) {
	ms := slices.Clone(members)
	for _, m := range ms {
		if m.IsZero() {
			return nil, ErrNilNode
		}
	}
	slices.SortFunc(ms, NodeID.Compare)
	ms = slices.Compact(ms)

	// Each member's tokens come sorted (tokensOf); merging the members'
	// runs pairwise, the left run first on equal tokens, sorts the entries
	// by (token, node id), since members is ascending.
	n := len(ms) * VNodes
	tokens, owners := make([]uint64, n), make([]uint32, n)
	for mi, m := range ms {
		copy(tokens[mi*VNodes:], tokensOf(m)[:])
		for i := range VNodes {
			owners[mi*VNodes+i] = uint32(mi)
		}
	}
	if len(ms) > 1 {
		tb, ob := make([]uint64, n), make([]uint32, n)
		for width := VNodes; width < n; width *= 2 {
			for lo := 0; lo < n; lo += 2 * width {
				mid, hi := min(lo+width, n), min(lo+2*width, n)
				i, j, k := lo, mid, lo
				for i < mid && j < hi {
					if tokens[j] < tokens[i] {
						tb[k], ob[k] = tokens[j], owners[j]
						j++
					} else {
						tb[k], ob[k] = tokens[i], owners[i]
						i++
					}
					k++
				}
				k += copy(tb[k:], tokens[i:mid])
				copy(ob[k-(mid-i):], owners[i:mid])
				k += copy(tb[k:], tokens[j:hi])
				copy(ob[k-(hi-j):], owners[j:hi])
			}
			tokens, tb = tb, tokens
			owners, ob = ob, owners
		}
	}
	r := &Ring{members: ms, tokens: tokens, owners: owners}
	r.buildIndex()
	return r, nil
}

// maxIndexBits caps the lookup index at 2^20+1 words (4 MiB, reached from
// 4096 members on).
const maxIndexBits = 20

func (r *Ring) buildIndex() {
	if len(r.tokens) == 0 {
		return
	}
	bits := uint(1)
	for bits < maxIndexBits && 1<<bits < len(r.tokens) {
		bits++
	}
	r.shift = 64 - bits
	r.index = make([]uint32, 1<<bits+1)
	j := 0
	for b := range 1 << bits {
		for j < len(r.tokens) && r.tokens[j]>>r.shift < uint64(b) {
			j++
		}
		r.index[b] = uint32(j)
	}
	r.index[1<<bits] = uint32(len(r.tokens))
}

// Members returns the ring's members in ascending node id order. The slice
// is a copy.
func (r *Ring) Members() []NodeID { return slices.Clone(r.members) }

// Size returns the number of members.
func (r *Ring) Size() int { return len(r.members) }

// Has reports whether id is a member of the ring.
func (r *Ring) Has(id NodeID) bool {
	_, ok := slices.BinarySearchFunc(r.members, id, NodeID.Compare)
	return ok
}

// Len returns the number of tokens (entries) on the ring: Size()*VNodes.
func (r *Ring) Len() int { return len(r.tokens) }

// Entry returns the i-th entry in ring order (0 <= i < Len()): its token and
// the member that holds it. The entry owns the range (token of entry i-1,
// token of entry i], entry 0 wrapping around to the last token.
func (r *Ring) Entry(i int) (token uint64, node NodeID) {
	return r.tokens[i], r.members[r.owners[i]]
}

// search returns the index of the first token >= point, wrapping to 0 past
// the last token. The ring must not be empty.
func (r *Ring) search(point uint64) int {
	// Narrow to point's bucket, then a hand-rolled lower bound inside it: no
	// closure, no allocation. If no token of the bucket is >= point, the
	// answer is the bucket's end, the first token of a higher bucket.
	lo, hi := 0, len(r.tokens)
	if r.index != nil {
		b := point >> r.shift
		lo, hi = int(r.index[b]), int(r.index[b+1])
	}
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if r.tokens[mid] < point {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == len(r.tokens) {
		return 0
	}
	return lo
}

// Owner returns the member owning point: the node of the first entry whose
// token is >= point, wrapping around past the largest token. It reports false
// on an empty ring. It does not allocate.
func (r *Ring) Owner(point uint64) (NodeID, bool) {
	if len(r.tokens) == 0 {
		return NodeID{}, false
	}
	return r.members[r.owners[r.search(point)]], true
}

// OwnerOf is Owner(Point(kind, key)).
func (r *Ring) OwnerOf(kind, key string) (NodeID, bool) {
	return r.Owner(Point(kind, key))
}

// Replicas returns the first n distinct members met walking the ring
// clockwise from point's owner, owner first: the replica set of point for
// replication factor n. The result has min(n, Size()) members; it is empty
// when n <= 0 or the ring is empty.
func (r *Ring) Replicas(point uint64, n int) []NodeID {
	return r.AppendReplicas(nil, point, n)
}

// AppendReplicas is Replicas appending to dst; with enough capacity in dst it
// does not allocate for n <= 64.
func (r *Ring) AppendReplicas(dst []NodeID, point uint64, n int) []NodeID {
	if n <= 0 || len(r.tokens) == 0 {
		return dst
	}
	n = min(n, len(r.members))
	var small [linearScanMax]uint32
	var idx []uint32
	if n <= len(small) {
		idx = r.walk(small[:0], r.search(point), n, nil)
	} else {
		idx = r.walk(make([]uint32, 0, n), r.search(point), n, nil)
	}
	for _, m := range idx {
		dst = append(dst, r.members[m])
	}
	return dst
}

// linearScanMax is the largest replica count for which walk checks
// distinctness by scanning what it collected instead of a seen-set.
const linearScanMax = 64

// walk appends to dst the member indexes of the first n distinct members met
// walking clockwise from entry start. n must be <= Size(). seen is optional
// scratch of Size() false values, used for large n and left all false.
func (r *Ring) walk(dst []uint32, start, n int, seen []bool) []uint32 {
	if n > linearScanMax && seen == nil {
		seen = make([]bool, len(r.members))
	}
	from := len(dst)
	for i, steps := start, 0; len(dst)-from < n && steps < len(r.tokens); steps++ {
		m := r.owners[i]
		var dup bool
		if seen != nil {
			dup = seen[m]
			seen[m] = true
		} else {
			dup = slices.Contains(dst[from:], m)
		}
		if !dup {
			dst = append(dst, m)
		}
		if i++; i == len(r.tokens) {
			i = 0
		}
	}
	if seen != nil {
		for _, m := range dst[from:] {
			seen[m] = false
		}
	}
	return dst
}
