package core

import (
	"slices"
	"time"
)

// Plumtree (Leitão, Pereira, Rodrigues, SRDS 2007): payloads go to eager
// peers, ids (IHAVE) to lazy peers. A duplicate payload prunes its sender
// to lazy; an announced id whose payload does not arrive within
// GraftTimeout is grafted from the announcer, whose link turns eager. The
// eager links converge to a spanning tree and the lazy ones repair it.
// One addition to the paper: a node that had to graft a payload turns its
// links eager before it forwards it (as it does when it loses an eager
// neighbour, see plumtreeDown) — all but the links of neighbours that
// announced the payload, which have it already. The tree was cut above it,
// and the neighbours it would only announce the payload to may sit behind
// the same cut, each about to wait GraftTimeout in turn; pushed, they do
// not, and the duplicates prune the extra links back to a tree. (Turning
// the announcers' links eager too flooded a young cluster with duplicates
// whose prunes cut it elsewhere: at N = 100, seed 61 took 3.5 minutes to
// converge.)

// seenRec is a delivered payload, kept SeenTTL to detect duplicates and
// answer grafts.
type seenRec struct {
	rec Member
	at  time.Time
}

// missingRec is an id announced by IHAVE whose payload has not arrived.
type missingRec struct {
	deadline   time.Time
	announcers []Peer
	grafted    bool // a GRAFT went out for it
}

type lazyItem struct {
	to Peer
	id MsgID
}

func (n *Node) markSeen(rec Member) {
	id := idOf(rec)
	if _, ok := n.seen[id]; ok {
		return
	}
	n.seen[id] = seenRec{rec: rec, at: n.now}
	n.seenQ = append(n.seenQ, id)
}

// broadcast originates rec: it is pushed to eager peers and announced to
// lazy ones (queued until the node has a neighbour).
func (n *Node) broadcast(rec Member) {
	if _, ok := n.seen[idOf(rec)]; ok {
		return
	}
	n.markSeen(rec)
	if len(n.active) == 0 {
		n.unsent = append(n.unsent, rec)
		return
	}
	n.eagerPush(rec, 0, NodeID{})
	n.lazyPush(idOf(rec), NodeID{})
}

func (n *Node) eagerPush(rec Member, round uint32, except NodeID) {
	unproven := !n.holdsRecord(rec)
	for _, a := range n.active {
		if a.eager && a.ID != except {
			n.send(a.Peer, &Message{Kind: KindGossip, Round: round, Flag: unproven, Members: []Member{rec}})
		}
	}
}

func (n *Node) lazyPush(id MsgID, except NodeID) {
	for _, a := range n.active {
		if !a.eager && a.ID != except {
			n.lazyQ = append(n.lazyQ, lazyItem{to: a.Peer, id: id})
		}
	}
}

// flushLazy sends the queued announcements, one IHAVE per peer.
func (n *Node) flushLazy() {
	if len(n.lazyQ) == 0 {
		return
	}
	q := n.lazyQ
	n.lazyQ = nil
	for i := 0; i < len(q); i++ {
		if q[i].to.ID.IsZero() {
			continue
		}
		to := q[i].to
		ids := []MsgID{q[i].id}
		for j := i + 1; j < len(q); j++ {
			if q[j].to.ID == to.ID {
				if len(ids) < MaxIDs {
					ids = append(ids, q[j].id)
					q[j].to = Peer{}
				}
			}
		}
		n.send(to, &Message{Kind: KindIHave, IDs: ids})
	}
}

func (n *Node) setEager(id NodeID, eager bool) {
	if i := n.activeIndex(id); i >= 0 {
		n.active[i].eager = eager
	}
}

// stale reports whether the table already holds a record for id's node at
// least as recent as id (so fetching or forwarding it is pointless).
func (n *Node) stale(id MsgID) bool {
	cur, ok := n.table.Get(id.Node)
	if id.Node == n.self.ID {
		cur, ok = n.self, true
	}
	if !ok {
		return false
	}
	if cur.Incarnation != id.Incarnation {
		return cur.Incarnation > id.Incarnation
	}
	return cur.Status > id.Status
}

func (n *Node) onGossip(m *Message) {
	rec := m.Members[0]
	if !n.plausible(rec, m.From) || n.unvouched(rec, m) {
		return // neither applied nor forwarded
	}
	if _, known := n.table.Get(rec.ID); !known && !n.mayIntroduce(rec, m.From) {
		return // likewise: a client-only sender's record of another (verify.go)
	}
	if n.unproven(rec, m.From) {
		// neither marked seen nor forwarded: a member's copy that arrives
		// later is applied and relayed, and this one waits for the probe
		n.hold(rec, 0)
		return
	}
	id := idOf(rec)
	from := m.From.ID
	if _, dup := n.seen[id]; dup {
		if i := n.activeIndex(from); i >= 0 && n.active[i].eager {
			n.active[i].eager = false
			n.send(m.From, &Message{Kind: KindPrune})
		}
		return
	}
	n.markSeen(rec)
	mr := n.missing[id]
	delete(n.missing, id)
	if n.stale(id) {
		n.log.Debug("gossip: stale record not forwarded", "record", rec.String())
		return
	}
	n.bounced = false
	n.apply(rec, 0, m.From)
	if n.bounced {
		// refused for the lite-client bound: the other members' are at it
		// too (or will be), and relaying a flood of them would only cost
		// every member the flood again and prune the broadcast tree
		return
	}
	if mr != nil && mr.grafted { // repair: see the top of this file
		for i := range n.active {
			if !slices.ContainsFunc(mr.announcers, func(p Peer) bool { return p.ID == n.active[i].ID }) {
				n.active[i].eager = true
			}
		}
	}
	n.eagerPush(rec, m.Round+1, from)
	n.lazyPush(id, from)
	n.setEager(from, true)
}

func (n *Node) onIHave(m *Message) {
	if !n.isActive(m.From.ID) {
		n.drop(m, "ihave from a non-neighbour")
		return
	}
	for _, id := range m.IDs {
		if _, ok := n.seen[id]; ok || n.stale(id) {
			continue
		}
		mr := n.missing[id]
		if mr == nil {
			mr = &missingRec{deadline: n.now.Add(n.cfg.GraftTimeout)}
			n.missing[id] = mr
			if len(n.missing) == 1 || mr.deadline.Before(n.missMin) {
				n.missMin = mr.deadline
			}
		}
		if !slices.ContainsFunc(mr.announcers, func(p Peer) bool { return p.ID == m.From.ID }) {
			mr.announcers = append(mr.announcers, m.From)
		}
	}
}

func (n *Node) onPrune(m *Message) {
	n.setEager(m.From.ID, false)
}

func (n *Node) onGraft(m *Message) {
	if !n.isActive(m.From.ID) && !n.leaving {
		n.drop(m, "graft from a non-neighbour")
		return
	}
	n.setEager(m.From.ID, true)
	for _, id := range m.IDs {
		s, ok := n.seen[id]
		if !ok {
			n.drop(m, "graft for an unknown id "+id.String())
			continue
		}
		n.send(m.From, &Message{Kind: KindGossip, Flag: !n.holdsRecord(s.rec), Members: []Member{s.rec}})
	}
}

// keepEagerLink makes sure a node with neighbours has at least one eager
// one. Plumtree prunes a link in both directions when one side receives a
// duplicate, so a leaf can end with every link lazy and would then receive
// every payload only after a GraftTimeout; an id-less GRAFT to a random
// neighbour restores one eager link both ways.
func (n *Node) keepEagerLink() {
	if len(n.active) == 0 || n.leaving {
		return
	}
	for _, a := range n.active {
		if a.eager {
			return
		}
	}
	i := n.rng.IntN(len(n.active))
	n.active[i].eager = true
	n.send(n.active[i].Peer, &Message{Kind: KindGraft})
}

// plumtreeDown forgets a neighbour that left the active view. Losing an
// eager neighbour may have cut the broadcast tree, so the remaining lazy
// links turn eager: the next broadcast floods this neighbourhood once and
// the duplicates prune it back to a tree, instead of every node behind the
// cut waiting GraftTimeout for each broadcast until grafts repair it.
func (n *Node) plumtreeDown(id NodeID, wasEager bool) {
	if wasEager {
		for i := range n.active {
			n.active[i].eager = true
		}
	}
	for _, mr := range n.missing {
		mr.announcers = slices.DeleteFunc(mr.announcers, func(p Peer) bool { return p.ID == id })
	}
	for i := range n.lazyQ {
		if n.lazyQ[i].to.ID == id {
			n.lazyQ[i].to = Peer{}
		}
	}
}

// tickPlumtree grafts overdue announced ids and expires old seen ids.
func (n *Node) tickPlumtree() {
	var due []MsgID
	if len(n.missing) == 0 {
		n.missing = make(map[MsgID]*missingRec) // maps never shrink: drop the old buckets
	}
	for id, mr := range n.missing {
		if !n.now.Before(mr.deadline) {
			due = append(due, id)
		}
	}
	slices.SortFunc(due, func(a, b MsgID) int {
		if c := a.Node.Compare(b.Node); c != 0 {
			return c
		}
		if a.Incarnation != b.Incarnation {
			if a.Incarnation < b.Incarnation {
				return -1
			}
			return 1
		}
		return int(a.Status) - int(b.Status)
	})
	for _, id := range due {
		mr := n.missing[id]
		if len(mr.announcers) == 0 {
			delete(n.missing, id)
			continue
		}
		a := mr.announcers[0]
		mr.announcers = mr.announcers[1:]
		mr.deadline = n.now.Add(n.cfg.GraftTimeout)
		mr.grafted = true
		n.setEager(a.ID, true)
		n.send(a, &Message{Kind: KindGraft, IDs: []MsgID{id}})
	}
	n.missMin = time.Time{}
	for _, mr := range n.missing {
		if n.missMin.IsZero() || mr.deadline.Before(n.missMin) {
			n.missMin = mr.deadline
		}
	}
	ttl := n.cfg.seenTTL()
	for n.seenQ0 < len(n.seenQ) {
		id := n.seenQ[n.seenQ0]
		if n.now.Sub(n.seen[id].at) < ttl {
			break
		}
		delete(n.seen, id)
		n.seenQ0++
	}
	if n.seenQ0 > 1024 && n.seenQ0*2 > len(n.seenQ) {
		n.seenQ = append([]MsgID(nil), n.seenQ[n.seenQ0:]...)
		n.seenQ0 = 0
	}
}
