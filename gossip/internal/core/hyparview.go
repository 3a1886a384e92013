package core

import (
	"slices"
	"time"
)

// HyParView (Leitão, Pereira, Rodrigues, DSN 2007): a small symmetric
// active view of monitored links and a larger passive view of addresses in
// reserve. Joins random-walk the overlay; shuffles refresh the passive view;
// a failed active link is replaced from the passive view.

// neighbor is an active-view entry; eager is its Plumtree role.
type neighbor struct {
	Peer
	eager bool
}

// pendingReq is a NEIGHBOR request in flight.
type pendingReq struct {
	Peer
	deadline time.Time
}

func (n *Node) activeIndex(id NodeID) int {
	for i, a := range n.active {
		if a.ID == id {
			return i
		}
	}
	return -1
}

func (n *Node) isActive(id NodeID) bool { return n.activeIndex(id) >= 0 }

func (n *Node) passiveIndex(id NodeID) int {
	for i, p := range n.passive {
		if p.ID == id {
			return i
		}
	}
	return -1
}

func (n *Node) pendingIndex(id NodeID) int {
	for i, p := range n.pending {
		if p.ID == id {
			return i
		}
	}
	return -1
}

func (n *Node) removePassive(id NodeID) {
	if i := n.passiveIndex(id); i >= 0 {
		n.passive = append(n.passive[:i], n.passive[i+1:]...)
	}
}

func (n *Node) removePending(id NodeID) bool {
	if i := n.pendingIndex(id); i >= 0 {
		n.pending = append(n.pending[:i], n.pending[i+1:]...)
		return true
	}
	return false
}

// gone reports whether the table holds a tombstone for id.
func (n *Node) gone(id NodeID) bool {
	m, ok := n.table.Get(id)
	return ok && m.Status.Gone()
}

// addActive puts p in the active view (evicting a random neighbour when
// full), opens its link and makes it an eager Plumtree peer. It reports
// whether p was added (false if p is self or already active).
func (n *Node) addActive(p Peer) bool {
	if p.ID == n.self.ID || p.ID.IsZero() {
		return false
	}
	if i := n.activeIndex(p.ID); i >= 0 {
		n.active[i].Addr = p.Addr
		return false
	}
	n.removePassive(p.ID)
	n.removePending(p.ID)
	if len(n.active) >= n.cfg.ActiveViewSize {
		victim := n.evictionVictim()
		n.send(victim, &Message{Kind: KindDisconnect})
		n.removeActive(victim.ID)
		n.addPassive(victim)
	}
	n.active = append(n.active, neighbor{Peer: p, eager: true})
	n.out.Links = append(n.out.Links, LinkOp{Peer: p, Open: true})
	n.joining = false
	if len(n.unsent) > 0 {
		recs := n.unsent
		n.unsent = nil
		for _, r := range recs {
			n.eagerPush(r, 0, NodeID{})
			n.lazyPush(idOf(r), NodeID{})
		}
	}
	return true
}

// evictionVictim picks the neighbour to drop from a full active view: a
// random lazy one if any (dropping an eager link would cut the Plumtree
// broadcast tree and delay deliveries until a graft repairs it), else a
// random one.
func (n *Node) evictionVictim() Peer {
	var lazy []Peer
	for _, a := range n.active {
		if !a.eager {
			lazy = append(lazy, a.Peer)
		}
	}
	if len(lazy) > 0 {
		return lazy[n.rng.IntN(len(lazy))]
	}
	return n.active[n.rng.IntN(len(n.active))].Peer
}

// removeActive drops id from the active view and closes its link.
func (n *Node) removeActive(id NodeID) (Peer, bool) {
	i := n.activeIndex(id)
	if i < 0 {
		return Peer{}, false
	}
	p, eager := n.active[i].Peer, n.active[i].eager
	n.active = append(n.active[:i], n.active[i+1:]...)
	// links are kept by address: another neighbour at the same address (a
	// node restarted there with a new identity) still needs it
	if !slices.ContainsFunc(n.active, func(a neighbor) bool { return a.Addr == p.Addr }) {
		n.out.Links = append(n.out.Links, LinkOp{Peer: p})
	}
	n.plumtreeDown(id, eager)
	return p, true
}

// addPassive puts p in the passive view, evicting a random entry when full.
func (n *Node) addPassive(p Peer) {
	n.addPassivePreferring(p, nil)
}

// addPassivePreferring is addPassive that evicts, when full, a peer of
// prefer (what we just sent in a shuffle) before a random one.
func (n *Node) addPassivePreferring(p Peer, prefer []Peer) {
	if p.ID == n.self.ID || p.ID.IsZero() || p.Addr == "" || n.isActive(p.ID) || n.gone(p.ID) {
		return
	}
	if i := n.passiveIndex(p.ID); i >= 0 {
		n.passive[i].Addr = p.Addr
		return
	}
	if len(n.passive) >= n.cfg.PassiveViewSize {
		victim := -1
		for _, q := range prefer {
			if i := n.passiveIndex(q.ID); i >= 0 {
				victim = i
				break
			}
		}
		if victim < 0 {
			victim = n.rng.IntN(len(n.passive))
		}
		n.passive = append(n.passive[:victim], n.passive[victim+1:]...)
	}
	n.passive = append(n.passive, p)
}

// forget removes a departed or dead node from the passive view and pending
// requests; a LEFT node also leaves the active view (it said goodbye).
func (n *Node) forget(m Member) {
	n.removePassive(m.ID)
	n.removePending(m.ID)
	if m.Status == Left {
		n.removeActive(m.ID)
	}
}

// randomActive returns a random active neighbour other than the given ids.
func (n *Node) randomActive(not ...NodeID) (Peer, bool) {
	var cand []Peer
outer:
	for _, a := range n.active {
		for _, x := range not {
			if a.ID == x {
				continue outer
			}
		}
		cand = append(cand, a.Peer)
	}
	if len(cand) == 0 {
		return Peer{}, false
	}
	return cand[n.rng.IntN(len(cand))], true
}

// rejoin is join for a node that finds itself isolated: it first bumps its
// incarnation and broadcasts its record, which goes out on the first link
// that opens: its ALIVE record then outranks whatever the others concluded
// about it meanwhile (a suspicion, or DEAD at the old incarnation), with no
// refutation round.
func (n *Node) rejoin() {
	n.bumpIncarnation(n.self.Incarnation)
	n.broadcast(n.self) // held until a link opens (Node.unsent)
	n.join()
}

// join sends JOIN to a random known address: a seed, or (rejoin) any
// remembered member.
func (n *Node) join() {
	var cand []Peer
	for _, s := range n.cfg.Seeds {
		if s != n.self.Addr {
			cand = append(cand, Peer{Addr: s})
		}
	}
	cand = append(cand, n.passive...)
	for _, m := range n.table.Members() {
		if m.ID != n.self.ID && !m.Status.Gone() {
			cand = append(cand, m.Peer())
		}
	}
	n.joining = true
	n.joinDeadline = n.now.Add(n.cfg.JoinTimeout)
	if len(cand) == 0 {
		return
	}
	c := cand[n.rng.IntN(len(cand))]
	n.log.Debug("joining", "contact", c.Addr)
	n.send(c, &Message{Kind: KindJoin})
}

func (n *Node) onJoin(m *Message) {
	j := m.From
	if n.gone(j.ID) {
		// a rejoin at a higher incarnation arrives by gossip; the link is fine
		n.log.Debug("join from a tombstoned node", "peer", j.String())
	}
	added := n.addActive(j)
	n.send(j, &Message{Kind: KindJoinAccept})
	if added {
		n.startSync(j, true)
	}
	for _, a := range n.active {
		if a.ID != j.ID {
			n.send(a.Peer, &Message{Kind: KindForwardJoin, Subject: j, TTL: uint8(n.cfg.ActiveRandomWalkLength)})
		}
	}
}

func (n *Node) onForwardJoin(m *Message) {
	j := m.Subject
	if j.ID == n.self.ID {
		return
	}
	if m.TTL == 0 || len(n.active) <= 1 {
		n.adopt(j)
		return
	}
	if int(m.TTL) == n.cfg.PassiveRandomWalkLength {
		n.addPassive(j)
	}
	next, ok := n.randomActive(m.From.ID, j.ID)
	if !ok {
		n.adopt(j)
		return
	}
	n.send(next, &Message{Kind: KindForwardJoin, Subject: j, TTL: m.TTL - 1})
}

// adopt ends a forward-join walk: j becomes an active neighbour.
func (n *Node) adopt(j Peer) {
	if n.addActive(j) {
		n.send(j, &Message{Kind: KindJoinAccept})
		n.startSync(j, true)
	}
}

func (n *Node) onJoinAccept(m *Message) {
	n.addActive(m.From)
}

func (n *Node) onNeighbor(m *Message) {
	p := m.From
	if n.isActive(p.ID) {
		n.send(p, &Message{Kind: KindNeighborReply, Flag: true})
		return
	}
	if m.Flag || len(n.active) < n.cfg.ActiveViewSize {
		n.addActive(p)
		n.send(p, &Message{Kind: KindNeighborReply, Flag: true})
		n.startSync(p, true)
		return
	}
	n.addPassive(p)
	n.send(p, &Message{Kind: KindNeighborReply})
}

func (n *Node) onNeighborReply(m *Message) {
	p := m.From
	wasPending := n.removePending(p.ID)
	if m.Flag {
		n.addActive(p)
		n.nextPromote = n.now
		return
	}
	if wasPending {
		n.nextPromote = n.now.Add(n.cfg.NeighborTimeout)
	}
	n.promote()
}

func (n *Node) onDisconnect(m *Message) {
	p := m.From
	if _, ok := n.removeActive(p.ID); ok && !m.Flag {
		n.addPassive(p)
	}
	n.removePending(p.ID)
	if m.Flag {
		n.removePassive(p.ID)
	}
	n.promote()
}

// onLinkDown: suspicion comes from the loss of an active link, or from a
// failed dial of a non-neighbour (probe.go).
func (n *Node) onLinkDown(addr string, why LinkFailure) {
	for _, a := range n.active {
		if a.Addr != addr {
			continue
		}
		n.removeActive(a.ID)
		if rec, ok := n.table.Get(a.ID); ok && rec.Status == Alive {
			n.log.Info("gossip: neighbour link failed, suspecting", "peer", a.Peer.String(), "why", why.String())
			n.suspect(rec)
		}
		n.promote()
		return
	}
	n.dialFailed(addr)
	for _, p := range n.pending {
		if p.Addr == addr {
			n.removePending(p.ID)
			n.removePassive(p.ID)
			n.promote()
			return
		}
	}
	for _, p := range n.passive {
		if p.Addr == addr {
			n.removePassive(p.ID)
			break
		}
	}
	if n.joining && len(n.active) == 0 {
		n.join()
	}
}

// wantPromote reports whether the active view has room the node should fill.
func (n *Node) wantPromote() bool {
	return len(n.active)+len(n.pending) < n.cfg.ActiveViewSize
}

// promote sends NEIGHBOR requests to passive peers (falling back on live
// table members) while the active view has room. With an empty active view
// the request is high priority and goes out at once; otherwise requests
// are paced by nextPromote. An isolated node with nobody to ask rejoins.
func (n *Node) promote() {
	for n.wantPromote() {
		empty := len(n.active) == 0
		if !empty && n.now.Before(n.nextPromote) {
			return
		}
		if empty && len(n.pending) > 0 {
			return
		}
		c, ok := n.promotionCandidate()
		if !ok {
			if empty && !n.joining {
				n.rejoin()
			}
			return
		}
		n.pending = append(n.pending, pendingReq{Peer: c, deadline: n.now.Add(n.cfg.NeighborTimeout)})
		n.send(c, &Message{Kind: KindNeighbor, Flag: empty})
		n.watchDial(c)
		if !empty {
			n.nextPromote = n.now.Add(n.cfg.NeighborTimeout / 4)
		}
	}
}

func (n *Node) promotionCandidate() (Peer, bool) {
	var cand []Peer
	for _, p := range n.passive {
		if n.pendingIndex(p.ID) < 0 {
			cand = append(cand, p)
		}
	}
	if len(cand) == 0 {
		// The table's candidates in id order: filtered before sorting, so a
		// tick that finds none copies nothing.
		for _, e := range n.table.entries {
			if n.tableCandidate(e.Member) {
				cand = append(cand, e.Peer())
			}
		}
		slices.SortFunc(cand, func(a, b Peer) int { return a.ID.Compare(b.ID) })
	}
	if len(cand) == 0 {
		return Peer{}, false
	}
	return cand[n.rng.IntN(len(cand))], true
}

// tableCandidate reports whether m, a record of the table, may be asked to
// become a neighbour.
func (n *Node) tableCandidate(m Member) bool {
	return m.ID != n.self.ID && m.Status == Alive && !n.isActive(m.ID) && n.pendingIndex(m.ID) < 0
}

// promotable reports whether promote has anything to do at nextPromote:
// ask a candidate, or, with an empty active view, nothing pending and no
// join under way, rejoin. When it has not, no tick is due for promotion:
// whatever makes a candidate (a record or passive peer learned, a
// neighbour lost, a request timed out) happens in an entry point, which
// computes the deadline again.
func (n *Node) promotable() bool {
	if !n.wantPromote() {
		return false
	}
	empty := len(n.active) == 0
	if empty && len(n.pending) > 0 {
		return false // promote waits for the requests' deadlines
	}
	for _, p := range n.passive {
		if n.pendingIndex(p.ID) < 0 {
			return true
		}
	}
	for _, e := range n.table.entries {
		if n.tableCandidate(e.Member) {
			return true
		}
	}
	return empty && !n.joining
}

// tickViews runs the HyParView timers: request timeouts, join retries,
// promotions and the periodic shuffle.
func (n *Node) tickViews() {
	for i := 0; i < len(n.pending); {
		if p := n.pending[i]; !n.now.Before(p.deadline) {
			n.pending = append(n.pending[:i], n.pending[i+1:]...)
			n.removePassive(p.ID)
			continue
		}
		i++
	}
	if n.joining && !n.now.Before(n.joinDeadline) {
		if len(n.active) == 0 {
			n.join()
		} else {
			n.joining = false
		}
	}
	n.promote()
	if !n.now.Before(n.nextShuffle) {
		n.nextShuffle = n.now.Add(n.cfg.ShuffleInterval)
		n.shuffle()
	}
}

// sample returns up to k random peers of from (a copy, order random).
func (n *Node) sample(from []Peer, k int) []Peer {
	c := append([]Peer(nil), from...)
	n.rng.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
	if len(c) > k {
		c = c[:k]
	}
	return c
}

func (n *Node) shuffle() {
	to, ok := n.randomActive()
	if !ok {
		return
	}
	s := []Peer{n.self.Peer()}
	s = append(s, n.sample(n.Active(), n.cfg.ShuffleActive)...)
	s = append(s, n.sample(n.passive, n.cfg.ShufflePassive)...)
	n.lastSample = s
	n.send(to, &Message{Kind: KindShuffle, Subject: n.self.Peer(), TTL: uint8(n.cfg.PassiveRandomWalkLength), Peers: s})
}

func (n *Node) maxSample() int { return n.cfg.ShuffleActive + n.cfg.ShufflePassive + 1 }

func (n *Node) onShuffle(m *Message) {
	if len(m.Peers) > n.maxSample() {
		n.drop(m, "oversized shuffle sample")
		return
	}
	o := m.Subject
	if o.ID == n.self.ID {
		return
	}
	if m.TTL > 1 && len(n.active) > 1 {
		if next, ok := n.randomActive(m.From.ID, o.ID); ok {
			fw := *m
			fw.TTL--
			n.send(next, &fw)
			return
		}
	}
	reply := n.sample(n.passive, len(m.Peers))
	n.send(o, &Message{Kind: KindShuffleReply, Peers: reply})
	for _, p := range m.Peers {
		n.addPassivePreferring(p, reply)
	}
}

func (n *Node) onShuffleReply(m *Message) {
	if len(m.Peers) > n.maxSample() {
		n.drop(m, "oversized shuffle reply")
		return
	}
	for _, p := range m.Peers {
		n.addPassivePreferring(p, n.lastSample)
	}
}
