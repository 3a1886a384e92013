package core

import (
	"slices"
	"time"
)

// Probes of non-neighbours. The overlay's monitored links only watch the
// active view, so a member whose active neighbours all fail with it (a
// crashed rack, a killed group that formed each other's views) is in no
// survivor's active view and no link failure would ever name it. Two rules
// close that gap:
//
//   - every anti-entropy round also sends its digest to one random ALIVE
//     member that is neither an active neighbour nor a pending NEIGHBOR
//     target (the probe), and
//   - a link failure reported for a member this node dialled outside its
//     active view (a probe or a NEIGHBOR request, within dialWindow of the
//     dial) raises an ordinary suspicion of it, if it is still ALIVE at the
//     dialled address.
//
// Such a suspicion is the SWIM one of suspicion.go: broadcast, refutable by
// the suspect, DEAD only after SuspicionTimeout. Two limits keep a node
// whose own network failed (or that sits on the minority side of a
// partition) from suspecting the members it cannot reach faster than the
// neighbour rule does: a node with no active neighbour raises none (its
// dials fail because it is cut off), and a node raises at most one at a
// time (the next only once its previous one was refuted or expired).

// maxWatched bounds the dials a node keeps watching for a failure.
const maxWatched = 16

// dialWatch is a member dialled outside the active view.
type dialWatch struct {
	Peer
	until time.Time
}

// dialWindow is how long after a dial its failure still counts.
func (n *Node) dialWindow() time.Duration {
	return max(n.cfg.NeighborTimeout, n.cfg.AntiEntropyInterval)
}

// probeTarget picks a random ALIVE member that is neither self, an active
// neighbour nor a pending NEIGHBOR target.
func (n *Node) probeTarget() (Peer, bool) {
	var cand []Peer
	for _, m := range n.table.Members() {
		if m.ID != n.self.ID && m.Status == Alive && !n.isActive(m.ID) && n.pendingIndex(m.ID) < 0 {
			cand = append(cand, m.Peer())
		}
	}
	if len(cand) == 0 {
		return Peer{}, false
	}
	return cand[n.rng.IntN(len(cand))], true
}

// watchDial records a dial of p outside the active view.
func (n *Node) watchDial(p Peer) {
	if p.ID.IsZero() {
		return
	}
	n.watched = slices.DeleteFunc(n.watched, func(w dialWatch) bool {
		return w.ID == p.ID || !n.now.Before(w.until)
	})
	if len(n.watched) >= maxWatched {
		n.watched = n.watched[1:]
	}
	n.watched = append(n.watched, dialWatch{Peer: p, until: n.now.Add(n.dialWindow())})
}

// heardFrom drops the watch of a member that sent us a message: it answered.
func (n *Node) heardFrom(id NodeID) {
	if len(n.watched) > 0 {
		n.watched = slices.DeleteFunc(n.watched, func(w dialWatch) bool { return w.ID == id })
	}
}

// dialFailed handles a link failure reported for addr, which is not an
// active neighbour's: if it answers a watched dial, the member is suspected
// (within the limits above).
func (n *Node) dialFailed(addr string) {
	i := slices.IndexFunc(n.watched, func(w dialWatch) bool { return w.Addr == addr })
	if i < 0 {
		return
	}
	w := n.watched[i]
	n.watched = slices.Delete(n.watched, i, i+1)
	if !n.now.Before(w.until) {
		return
	}
	rec, ok := n.table.Get(w.ID)
	if !ok || rec.Status != Alive || rec.Addr != w.Addr {
		return
	}
	if len(n.active) == 0 {
		n.log.Info("gossip: dial failed while isolated, not suspecting", "peer", w.Peer.String())
		return
	}
	if _, busy := n.suspects[n.indirect]; busy && !n.indirect.IsZero() {
		n.log.Debug("dial failed, a dial suspicion is already running", "peer", w.Peer.String())
		return
	}
	n.log.Info("gossip: dial of a non-neighbour failed, suspecting", "peer", w.Peer.String())
	n.indirect = rec.ID
	n.suspect(rec)
}
