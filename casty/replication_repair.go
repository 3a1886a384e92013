package casty

import (
	"slices"
	"time"

	"github.com/casty-go/casty/replica"
	"github.com/casty-go/casty/ring"
)

// Anti-entropy (replica/SPEC.md, "Repair"): every Config.RepairInterval a
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
	for _, d := range kinds.replicated() {
		for _, g := range replicaGroups(pl.ring, self, d.repl.replicas) {
			r.mu.Lock()
			p := replica.NewRepair(d.k.Name, g.rngs, pl.version, pl.digest, g.peers, r.rep)
			outs := p.Start()
			r.mu.Unlock()
			if !r.exchange(outs, p.Step) {
				return // closing
			}
			r.repaired.Add(int64(p.Adopted()))
		}
	}
}

// replicaGroup is the ranges of the ring where a member replicates with
// the same peers.
type replicaGroup struct {
	peers []replica.NodeID
	rngs  []replica.Range
}

// replicaGroups lists, for a kind of n replicas, the ranges of cur where
// self is a replica, grouped by the other members of their replica set.
func replicaGroups(cur *ring.Ring, self ring.NodeID, n int) []replicaGroup {
	var out []replicaGroup
	for _, seg := range enteredSegments(nil, cur, self, n) {
		var peers []replica.NodeID
		for _, id := range cur.Replicas(seg.rng.End, n) {
			if id != self {
				peers = append(peers, replica.NodeID(id))
			}
		}
		if len(peers) == 0 {
			continue
		}
		i := slices.IndexFunc(out, func(g replicaGroup) bool { return slices.Equal(g.peers, peers) })
		if i < 0 {
			out = append(out, replicaGroup{peers: peers})
			i = len(out) - 1
		}
		out[i].rngs = append(out[i].rngs, seg.rng)
	}
	return out
}
