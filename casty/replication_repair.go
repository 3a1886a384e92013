package casty

import (
	"slices"
	"time"

	"github.com/casty-go/casty/replica"
	"github.com/casty-go/casty/ring"
)

// Anti-entropy (replica/SPEC.md, "Repair"): every Config.Replication.RepairInterval a
// settled member runs a replica.Repair per kind and per replica set of the
// ranges it replicates, one after the other, so the pass costs the calls
// little: brief listings, then only the copies it lacks or holds older.

// repairLoop runs the passes until the replicator closes.
func (r *replicator) repairLoop(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-r.done:
			return
		case <-t.C:
		}
		r.repairPass()
	}
}

// repairPass runs one pass over every replicated kind, unless the member
// is still syncing a placement change (those syncs do the same job first).
func (r *replicator) repairPass() {
	self := r.cl.self
	r.mu.Lock()
	pl := r.pl
	ready := pl != nil && pl.placed(self) && r.pending == 0 && (!r.joiner || r.settledJoin)
	r.mu.Unlock()
	if !ready {
		return
	}
	// Empty copies stamped before this are old tombstones: older than the
	// TTL by every member's clock within MaxClockDrift, so a member that
	// re-enters a range, dropping what it holds there older than the TTL
	// by its own clock, drops every copy such a tombstone superseded
	// (replica/SPEC.md, "Pruning").
	expired := r.clock.Now().Wall - (r.tombstoneTTL + r.maxDrift).Milliseconds()
	for _, d := range kinds.replicated() {
		for _, g := range r.groupsOf(pl.ring, d.repl.replicas) {
			if !g.mine {
				// Ranges it left: drop what their set holds.
				if !r.prune(d.k.Name, pl, g, true, 0) {
					return
				}
				continue
			}
			r.mu.Lock()
			p := replica.NewRepair(d.k.Name, g.rngs, pl.version, pl.digest, g.peers, r.rep)
			outs := p.Start()
			r.mu.Unlock()
			if !r.exchange(outs, p.Step, nil) {
				return // closing
			}
			r.repaired.Add(int64(p.Adopted()))
			if !r.prune(d.k.Name, pl, g, false, expired) {
				return
			}
		}
	}
}

// prune runs a replica.Prune over g's ranges for the candidates held
// there; it reports false when the replicator is closing.
func (r *replicator) prune(kind string, pl *layout, g ringGroup, moved bool, expired int64) bool {
	r.mu.Lock()
	cands := r.rep.Candidates(kind, g.rngs, moved, expired)
	if len(cands) == 0 {
		r.mu.Unlock()
		return true
	}
	p := replica.NewPrune(kind, g.rngs, pl.version, pl.digest, g.peers, cands, r.rep)
	outs := p.Start()
	r.mu.Unlock()
	if !r.exchange(outs, p.Step, nil) {
		return false
	}
	r.mu.Lock()
	r.pruned += int64(len(p.Pruned()))
	r.mu.Unlock()
	return true
}

// groupsOf is ringGroups(cur, self, n), worked out once per ring and
// replica count: a ring is immutable, and every repair pass of every
// replicated kind walks it (its 128 tokens per member, a replica set each).
// The groups are shared: callers only read them.
func (r *replicator) groupsOf(cur *ring.Ring, n int) []ringGroup {
	r.groupsMu.Lock()
	defer r.groupsMu.Unlock()
	if r.groupsRing != cur {
		r.groupsRing, r.groups = cur, map[int][]ringGroup{}
	}
	gs, ok := r.groups[n]
	if !ok {
		gs = ringGroups(cur, r.cl.self, n)
		r.groups[n] = gs
	}
	return gs
}

// ringGroup is the ranges of the ring whose replica set is the same: mine
// when self is in it, peers then the set's other members, otherwise the
// whole set.
type ringGroup struct {
	mine  bool
	peers []replica.NodeID
	rngs  []replica.Range
}

// ringGroups splits cur, for a kind of n replicas, into groups of ranges
// with the same replica set.
func ringGroups(cur *ring.Ring, self ring.NodeID, n int) []ringGroup {
	var out []ringGroup
	if cur.Len() == 0 {
		return nil
	}
	prev, _ := cur.Entry(cur.Len() - 1) // the wrap: (last, first]
	for i := range cur.Len() {
		p, _ := cur.Entry(i)
		rng := replica.Range{Start: prev, End: p}
		prev = p
		if cur.Len() == 1 {
			rng = replica.Range{} // one token: the whole ring
		}
		g := ringGroup{}
		for _, id := range cur.Replicas(p, n) {
			if id == self {
				g.mine = true
			} else {
				g.peers = append(g.peers, replica.NodeID(id))
			}
		}
		if len(g.peers) == 0 {
			continue
		}
		j := slices.IndexFunc(out, func(o ringGroup) bool { return o.mine == g.mine && slices.Equal(o.peers, g.peers) })
		if j < 0 {
			out = append(out, g)
			j = len(out) - 1
		}
		out[j].rngs = append(out[j].rngs, rng)
	}
	return out
}
