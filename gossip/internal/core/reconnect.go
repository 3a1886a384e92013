package core

import (
	"slices"
	"time"
)

// Reconnect. A DEAD tombstone's anti-entropy probe (antientropy.go) is what
// lets two sides of a healed partition find each other, and it lasts only
// TombstoneTTL: once both sides dropped each other's tombstones neither
// holds an address on the other side, and a node re-joins through its
// seeds only when it is isolated (hyparview.go, rejoin). So a partition
// held longer than TombstoneTTL would split the cluster for good. Two
// rules close that gap (as Serf's reconnect_interval / reconnect_timeout
// do):
//
//   - a member-role member this node held live and then DEAD (its own
//     suspicion ran out, or it adopted the DEAD) whose tombstone expires
//     goes to the reconnect list for ReconnectTimeout; a LEFT one does
//     not (it said goodbye), nor does a tombstone this node only heard
//     of. Every ReconnectInterval the node sends one random entry the
//     tombstone probe's message, a SYNC digest on a new link. The list is
//     bounded by the table bound (MaxTableSize; the oldest entry gives
//     way); an entry is dropped after ReconnectTimeout, or once the
//     table holds a live member at its address or of its id.
//   - every ReconnectInterval, a node with Seeds none of which is its own
//     address or the address of a live member in its table sends that
//     digest to one random seed, unless it is still joining: a side that
//     lost all its seeds finds them again, however long ago the
//     tombstones went.
//
// Neither grants any trust: the digest is the one the tombstone probe and
// every anti-entropy round send, and whatever the address answers with is
// a table exchange whose records are admitted by the ordinary rules
// (verify.go, proof.go): a record the table does not hold live is probed
// at its own address before it is adopted. Whoever answers at a reconnect
// address, member or not, only ends the entry by being proven a live
// member there, so a non-member cannot keep a dead member alive, nor keep
// an entry on the list past ReconnectTimeout.

// lostPeer is a reconnect list entry.
type lostPeer struct {
	Peer
	until time.Time
}

// noteLost records that m, held live until now, became DEAD here: when its
// tombstone expires it goes to the reconnect list.
func (n *Node) noteLost(m Member) {
	if m.Role != RoleMember || m.ID == n.self.ID {
		return
	}
	if n.lost == nil {
		n.lost = make(map[NodeID]string)
	}
	n.lost[m.ID] = m.Addr
}

// expired handles a tombstone that expired: a member this node lost to a
// failure goes to the reconnect list.
func (n *Node) expired(m Member) {
	addr, ok := n.lost[m.ID]
	if !ok {
		return
	}
	delete(n.lost, m.ID)
	if m.Status != Dead || m.Role != RoleMember || m.Addr != addr {
		return
	}
	n.reconnect = slices.DeleteFunc(n.reconnect, func(r lostPeer) bool { return r.ID == m.ID || r.Addr == m.Addr })
	if len(n.reconnect) >= n.tableLimit() {
		n.reconnect = slices.Delete(n.reconnect, 0, 1) // entries are in order of expiry
	}
	n.reconnect = append(n.reconnect, lostPeer{Peer: m.Peer(), until: n.now.Add(n.cfg.ReconnectTimeout)})
	n.log.Debug("member lost to a failure: reconnecting", "peer", m.Peer().String())
}

// Reconnecting returns the reconnect list: members lost to a failure whose
// tombstones expired, contacted in turn every ReconnectInterval.
func (n *Node) Reconnecting() []Peer {
	out := make([]Peer, len(n.reconnect))
	for i, r := range n.reconnect {
		out[i] = r.Peer
	}
	return out
}

// tickReconnect runs the reconnect rules every ReconnectInterval.
func (n *Node) tickReconnect() {
	if n.now.Before(n.nextReconnect) {
		return
	}
	n.nextReconnect = n.now.Add(n.cfg.ReconnectInterval)
	if len(n.reconnect) == 0 && len(n.cfg.Seeds) == 0 {
		return
	}
	live := make(map[string]bool)
	for _, m := range n.table.Members() {
		if m.ID != n.self.ID && !m.Status.Gone() {
			live[m.Addr] = true
		}
	}
	n.reconnect = slices.DeleteFunc(n.reconnect, func(r lostPeer) bool {
		if !n.now.Before(r.until) || live[r.Addr] {
			return true
		}
		m, ok := n.table.Get(r.ID)
		return ok && !m.Status.Gone()
	})
	if len(n.reconnect) > 0 {
		r := n.reconnect[n.rng.IntN(len(n.reconnect))]
		n.log.Debug("reconnecting to a lost member", "peer", r.Peer.String())
		n.startSync(r.Peer, true)
	}
	if n.joining {
		return
	}
	var seeds []string
	for _, s := range n.cfg.Seeds {
		if live[s] || s == n.self.Addr {
			return // a seed of this side is live (this node may be one)
		}
		seeds = append(seeds, s)
	}
	if len(seeds) > 0 {
		s := seeds[n.rng.IntN(len(seeds))]
		n.log.Debug("no seed is live: contacting one", "seed", s)
		n.startSync(Peer{Addr: s}, true)
	}
}
