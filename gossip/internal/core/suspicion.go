package core

import (
	"slices"
	"time"
)

// SWIM-style suspicion (Das, Gupta, Motivala, DSN 2002), driven by the
// overlay: a suspicion is raised only when an active neighbour's link fails
// or a dial of a non-neighbour fails (a NEIGHBOR request or an anti-entropy
// probe, probe.go), or another node answers a probe at the member's address
// (replacedAt, verify.go), never from a data-path connection; it is broadcast, and every node that
// holds it starts a SuspicionTimeout timer. The suspect refutes by bumping
// its incarnation (aboutSelf in node.go); an unrefuted suspicion becomes
// DEAD. The nodes that raised the suspicion broadcast the DEAD record; the
// others mark it locally at their own deadline (and learn it by gossip or
// anti-entropy if they missed the suspicion).

// suspicion is a running suspicion timer.
type suspicion struct {
	inc      uint64
	began    time.Time // when this node adopted the suspicion
	deadline time.Time
	origin   bool // raised here: broadcast DEAD when it expires
}

// suspect raises a suspicion of rec (an ALIVE record of an active neighbour
// whose link failed) and broadcasts it.
func (n *Node) suspect(rec Member) {
	s := rec
	s.Status = Suspect
	prev, existed, changed := n.table.Apply(s, n.now)
	if !changed {
		return
	}
	n.transition(prev, existed, s, true)
	n.broadcast(s)
}

// trackSuspicion keeps the timer set in step with the table after cur was
// adopted.
func (n *Node) trackSuspicion(cur Member, origin bool) {
	if cur.Status != Suspect {
		delete(n.suspects, cur.ID)
		return
	}
	if s, ok := n.suspects[cur.ID]; ok && s.inc == cur.Incarnation {
		s.origin = s.origin || origin
		return
	}
	d := n.now.Add(n.cfg.SuspicionTimeout)
	n.suspects[cur.ID] = &suspicion{inc: cur.Incarnation, began: n.now, deadline: d, origin: origin}
	if len(n.suspects) == 1 || d.Before(n.suspMin) {
		n.suspMin = d
	}
}

// tickSuspicions turns expired suspicions into DEAD records.
func (n *Node) tickSuspicions() {
	var due []NodeID
	if len(n.suspects) == 0 {
		n.suspects = make(map[NodeID]*suspicion)
	}
	for id, s := range n.suspects {
		if !n.now.Before(s.deadline) {
			due = append(due, id)
		}
	}
	slices.SortFunc(due, NodeID.Compare)
	for _, id := range due {
		s := n.suspects[id]
		delete(n.suspects, id)
		rec, ok := n.table.Get(id)
		if !ok || rec.Status != Suspect || rec.Incarnation != s.inc {
			continue
		}
		dead := rec
		dead.Status = Dead
		prev, existed, _ := n.table.Apply(dead, n.now)
		n.log.Info("gossip: suspicion expired, declaring dead", "member", dead.String())
		n.transition(prev, existed, dead, s.origin)
		if s.origin {
			n.broadcast(dead)
		}
	}
	n.suspMin = time.Time{}
	for _, s := range n.suspects {
		if n.suspMin.IsZero() || s.deadline.Before(n.suspMin) {
			n.suspMin = s.deadline
		}
	}
}

// deadHeard handles a DEAD record rec from the network about a member the
// table holds live (cur). The table adopts DEAD only once this node has
// itself held the suspicion at that incarnation for SuspicionTimeout/2: the
// suspect had at least that long to hear of it and refute. Until then the
// record counts as a SUSPECT at its incarnation (adopted and broadcast, so
// the member hears it), whose deadline moves to SuspicionTimeout/2 after
// this node's suspicion began; and the member is probed (verify.go): DEAD
// is adopted at once if the probe fails. It reports whether the table
// changed.
func (n *Node) deadHeard(cur, rec Member, age time.Duration) bool {
	s := cur
	s.Incarnation, s.Status = rec.Incarnation, Suspect
	changed := Supersedes(s, cur)
	if changed {
		n.adoptRecord(s, 0)
	}
	sp, ok := n.suspects[cur.ID]
	if !ok || sp.inc != rec.Incarnation {
		return changed
	}
	due := sp.began.Add(n.cfg.SuspicionTimeout / 2)
	if !n.now.Before(due) {
		dead, _ := n.table.Get(cur.ID)
		dead.Status = Dead
		delete(n.suspects, cur.ID)
		prev, existed, _ := n.table.Apply(dead, n.now)
		n.transition(prev, existed, dead, false)
		return true
	}
	if due.Before(sp.deadline) {
		sp.deadline = due
		if due.Before(n.suspMin) {
			n.suspMin = due
		}
	}
	n.hold(rec, age)
	return changed
}
