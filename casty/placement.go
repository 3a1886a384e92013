package casty

import (
	"slices"
	"time"

	"github.com/casty-go/casty/ring"
	"github.com/vmihailenco/msgpack/v5"
)

// Placement: which members hold replicated state (replica/SPEC.md, "Model").
//
// Kinds with Replicas(1) keep their single copy where the ring of live
// members puts it, as they always did: losing the copy with its member is
// what Replicas(1) means. Replicated kinds are placed on a second, stable
// ring: a member enters it when it is first seen alive as a full member and
// leaves it only when it leaves gracefully (LEFT) or when it has been dead
// for Config.RemoveDeadAfter and this node sees a strict majority of the
// placement alive (the minority side of a partition never removes the
// majority). Suspicion and death do not move replicas: the owner of a key
// is the first live member of its replica set, and a quorum that cannot be
// met fails with ErrQuorumUnavailable instead of picking other members.
//
// What a node knows of the placement is a set of facts that only grows —
// members joined, members removed — so two nodes' knowledge merges by
// union (gossip tells each node most of it; replicas refusing a request of
// an older placement send theirs along). The placement's version is the
// number of facts; its digest tells two placements of one version apart.

// placementFacts is what a node knows of the placement.
type placementFacts struct {
	Joined  []ring.NodeID `msgpack:"j"`
	Removed []ring.NodeID `msgpack:"r"`
}

// layout is one version of the placement of replicated kinds, immutable.
type layout struct {
	facts   placementFacts
	version uint64
	digest  uint64
	ring    *ring.Ring // the placed members: joined and not removed
}

func newLayout(f placementFacts) *layout {
	slices.SortFunc(f.Joined, ring.NodeID.Compare)
	f.Joined = slices.Compact(f.Joined)
	slices.SortFunc(f.Removed, ring.NodeID.Compare)
	f.Removed = slices.Compact(f.Removed)
	var placed []ring.NodeID
	for _, id := range f.Joined {
		if _, gone := slices.BinarySearchFunc(f.Removed, id, ring.NodeID.Compare); !gone {
			placed = append(placed, id)
		}
	}
	r, _ := ring.New(placed)
	h := make([]byte, 0, 16*(len(f.Joined)+len(f.Removed))+2)
	for _, id := range f.Joined {
		h = append(h, id[:]...)
	}
	h = append(h, '|', '|')
	for _, id := range f.Removed {
		h = append(h, id[:]...)
	}
	return &layout{facts: f, version: uint64(len(f.Joined) + len(f.Removed)), digest: ring.Hash(h) | 1, ring: r}
}

// merge returns the placement knowing both p's facts and f's (p itself
// when f adds nothing).
func (p *layout) merge(f placementFacts) *layout {
	joined, removed := p.facts.Joined, p.facts.Removed
	grew := false
	for _, id := range f.Joined {
		if _, ok := slices.BinarySearchFunc(joined, id, ring.NodeID.Compare); !ok {
			joined, grew = append(slices.Clone(joined), id), true
			slices.SortFunc(joined, ring.NodeID.Compare)
		}
	}
	for _, id := range f.Removed {
		if _, ok := slices.BinarySearchFunc(removed, id, ring.NodeID.Compare); !ok {
			removed, grew = append(slices.Clone(removed), id), true
			slices.SortFunc(removed, ring.NodeID.Compare)
		}
	}
	if !grew {
		return p
	}
	return newLayout(placementFacts{Joined: joined, Removed: removed})
}

// encode returns the facts' wire form (sent with a refusal).
func (p *layout) encode() []byte {
	b, _ := msgpack.Marshal(&p.facts)
	return b
}

// decodeFacts parses facts received from another member.
func decodeFacts(b []byte) (placementFacts, bool) {
	var f placementFacts
	if len(b) == 0 || len(b) > 1<<20 || msgpack.Unmarshal(b, &f) != nil {
		return placementFacts{}, false
	}
	return f, true
}

// removed reports whether p removed id (a leave, a replacement or a
// death): it never holds replicated state under this id again.
func (p *layout) removed(id ring.NodeID) bool {
	_, ok := slices.BinarySearchFunc(p.facts.Removed, id, ring.NodeID.Compare)
	return ok
}

// placed reports whether id holds replicated state in p.
func (p *layout) placed(id ring.NodeID) bool { return p.ring.Has(id) }

// deadline bookkeeping for removals.
type deathWatch struct {
	since map[ring.NodeID]time.Time // when each placed member was first seen dead or gone
}

// removals returns the placed members that may be removed now: dead (or
// gone from the table) for at least after, decided only while a strict
// majority of the placement is alive.
func (w *deathWatch) removals(p *layout, alive func(ring.NodeID) bool, now time.Time, after time.Duration) []ring.NodeID {
	if w.since == nil {
		w.since = map[ring.NodeID]time.Time{}
	}
	members := p.ring.Members()
	up := 0
	for _, id := range members {
		if alive(id) {
			up++
			delete(w.since, id)
		} else if _, ok := w.since[id]; !ok {
			w.since[id] = now
		}
	}
	if up*2 <= len(members) {
		return nil
	}
	var out []ring.NodeID
	for _, id := range members {
		if t, ok := w.since[id]; ok && now.Sub(t) >= after {
			out = append(out, id)
		}
	}
	return out
}
