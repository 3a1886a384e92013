package core

import (
	"slices"
	"time"
)

// Second-hand records. A record carried by a rumour (GOSSIP) or a table
// exchange (SYNC) is a claim made by whoever sent it, and the sender is not
// authenticated by the protocol. The table adopts such a claim only when a
// probe of the member it names settles it (SPEC.md, Admission):
//
//   - ALIVE or SUSPECT for a member the table does not hold live at that
//     address (unknown, a tombstone, or another address or role) is held
//     until the member answers a PING carrying a fresh random nonce with a
//     PONG echoing it, from that id, address and role; then it is adopted
//     (EventJoined). No answer, a refused dial or a "leaving" answer drops
//     it. A forger off the path between the two cannot answer for the
//     member: it never sees the nonce.
//   - LEFT for a member the table holds live is held the same way, with the
//     outcomes reversed: a live answer refutes it (dropped); a "leaving"
//     answer, a refused dial or silence through every attempt adopts it. A
//     member that really left answers "leaving" while it lingers and
//     refuses dials after, so a graceful leave costs one round trip.
//   - DEAD for a member the table holds live is adopted only once this
//     node held the suspicion SuspicionTimeout/2 (deadHeard, suspicion.go);
//     until then it counts as a SUSPECT at the DEAD's incarnation,
//     broadcast so the member hears it and refutes, and it is probed like
//     a LEFT: DEAD is adopted when the probe fails (this node cannot reach
//     the member either); a live answer leaves the suspicion to the
//     member's refutation.
//
// Claims and table records together stay within Config.MaxTableSize: a claim
// about an id the table does not hold (or a tombstone of one) is dropped when
// the table is full, unless another source holds more such claims than the
// claim's own, in which case one of that source's unprobed claims makes room.
// Within that, lite-client records (RoleClient: table records, tombstones
// included, and claims about ids the table does not hold) stay within
// Config.MaxClientRecords: a record that would add one past it is dropped,
// so the rest of the table stays for members whatever the holder of a
// client credential introduces.
// Probes of ALIVE/SUSPECT claims run at most maxProbing at a time, at most
// maxSourceProbing of them for the claims of one source (the connection
// they arrived over, Message.Via), and a freed slot goes to the sources with
// queued claims in turn; a claim that could not be probed within
// NeighborTimeout of its arrival is dropped (anti-entropy brings an honest
// record back), so every claim is settled or gone within
// (1 + probeAttempts) × NeighborTimeout. A flood of claims from one
// connection thus delays the claims relayed by others by at most one turn.

// maxProbing bounds the admission probes in flight (LEFT and DEAD probes,
// about members the table holds and so bounded by it, are not held back).
const maxProbing = 64

// maxSourceProbing bounds the admission probes in flight for the claims of
// one source: a flood from one connection leaves the other slots to the rest.
const maxSourceProbing = maxProbing / 4

// source is where claims came from: the connection a frame arrived over.
type source struct {
	q      []NodeID // its claims waiting for a probe slot, oldest first (ids of claims gone since are skipped)
	probed []NodeID // its claims probed, in the order their first PING went out (likewise)
	held   int      // its claims
	flight int      // its claims with a PING in flight
	fresh  int      // its claims about ids the table does not hold
	inTurn bool     // in Node.turn
}

// probeAttempts is how many PINGs a claim gets, NeighborTimeout apart.
const probeAttempts = 2

// DefaultMaxTableSize is the member table bound when Config.MaxTableSize is 0.
const DefaultMaxTableSize = 4096

// claim is a second-hand record waiting for its probe.
type claim struct {
	rec     Member
	age     time.Duration // tombstone age at the sender (LEFT)
	fresh   bool          // the table held no record of the id: counts against the bound
	via     string        // the source it arrived from
	created time.Time
	nonce   uint64    // of the PING in flight; 0 while none is
	sent    time.Time // when that PING went out
	tries   int
}

// answer is how a probe ended.
type answer uint8

const (
	noAnswer answer = iota // dial refused, or silence through every attempt
	answeredAlive
	answeredLeaving
)

// String names the outcome for logs.
func (a answer) String() string {
	switch a {
	case answeredAlive:
		return "alive"
	case answeredLeaving:
		return "leaving"
	}
	return "no answer"
}

func (n *Node) tableLimit() int { return n.cfg.tableLimit() }

// full reports whether the table has no room for a record of a new id.
func (n *Node) full() bool { return n.table.Len()+n.fresh >= n.tableLimit() }

// clientsFull reports whether the lite-client records (table records of
// role RoleClient, tombstones included, plus claims of that role about ids
// the table does not hold) are at Config.MaxClientRecords.
func (n *Node) clientsFull() bool {
	return n.table.Clients()+n.freshClients >= n.cfg.clientLimit()
}

// addsClient reports whether rec would add a lite-client record: it is of
// role RoleClient and the table holds no record of its id (known false) or
// one of another role (cur).
func addsClient(rec, cur Member, known bool) bool {
	return rec.Role == RoleClient && (!known || cur.Role != RoleClient)
}

// countsClient reports whether c counts against the lite-client bound
// (Node.freshClients): a claim of role RoleClient about an id the table
// does not hold.
func countsClient(c *claim) bool { return c.fresh && c.rec.Role == RoleClient }

// Unverified returns how many second-hand records wait for a probe.
func (n *Node) Unverified() int { return len(n.claims) }

// Refused returns how many second-hand records about new ids were dropped
// because the table was full, or, for lite clients' records, because
// lite-client records were at Config.MaxClientRecords.
func (n *Node) Refused() uint64 { return n.refused }

// refusedLogInterval is the least time between two log lines about records
// refused by a full table: a flood of claims costs one line per interval.
const refusedLogInterval = 10 * time.Second

// refuse drops rec, a record of an id the table does not hold, because the
// table is full, or (clients) because it is a lite client's and lite-client
// records are at their bound: it is counted (Refused), and logged at most
// once per refusedLogInterval, both bounds together, with the count since
// the last line; the line names the bound that refused its example.
func (n *Node) refuse(rec Member, clients bool) {
	n.refused++
	n.bounced = n.bounced || clients
	if n.now.Before(n.refLog) {
		return
	}
	msg, limit := "gossip: member table full, refusing records of new members", n.tableLimit()
	if clients {
		msg, limit = "gossip: lite-client records at their bound, refusing records of new lite clients", n.cfg.clientLimit()
	}
	n.log.Warn(msg, "limit", limit, "refused", n.refused-n.refLast, "refused_total", n.refused, "example", rec.String())
	n.refLog = n.now.Add(refusedLogInterval)
	n.refLast = n.refused
}

// hold keeps rec (age: its tombstone age at the sender) as a claim until a
// probe settles it, merging it into the claim already held for the id.
func (n *Node) hold(rec Member, age time.Duration) {
	if c, ok := n.claims[rec.ID]; ok {
		if !Supersedes(rec, c.rec) {
			return
		}
		if c.fresh && addsClient(rec, c.rec, true) && n.clientsFull() {
			n.refuse(rec, true) // the claim held stays
			return
		}
		if countsClient(c) {
			n.freshClients--
		}
		moved := rec.Addr != c.rec.Addr || rec.Role != c.rec.Role
		c.rec, c.age = rec, age
		if countsClient(c) {
			n.freshClients++
		}
		if moved { // the probe in flight asks the wrong address
			if c.nonce != 0 {
				n.probing--
				n.srcs[c.via].flight--
				delete(n.byNonce, c.nonce)
			}
			c.nonce, c.tries, c.created = 0, 0, n.now
			n.claimMin = n.now // stale-early is harmless: one extra tick
			n.queueClaim(c)
		}
		return
	}
	cur, known := n.table.Get(rec.ID)
	if addsClient(rec, cur, known) && n.clientsFull() {
		n.refuse(rec, true)
		return
	}
	if !known && n.full() && !n.evictFor(n.via) {
		n.refuse(rec, false)
		return
	}
	c := &claim{rec: rec, age: age, fresh: !known, via: n.via, created: n.now}
	if n.claims == nil {
		n.claims = make(map[NodeID]*claim)
	}
	n.claims[rec.ID] = c
	src := n.source(c.via)
	src.held++
	if !known {
		n.fresh++
		src.fresh++
	}
	if countsClient(c) {
		n.freshClients++
	}
	if d := n.claimDeadline(c); len(n.claims) == 1 || d.Before(n.claimMin) {
		n.claimMin = d
	}
	n.queueClaim(c)
}

// source returns the counts of the claims from via, created if none.
func (n *Node) source(via string) *source {
	s, ok := n.srcs[via]
	if !ok {
		s = &source{}
		if n.srcs == nil {
			n.srcs = make(map[string]*source)
		}
		n.srcs[via] = s
	}
	return s
}

// evictFor makes room in a full table for a claim from via: if another
// source holds more claims about ids the table does not hold than via does
// (by two or more), its newest unprobed one is dropped (and counted as
// refused). It reports whether it made room.
func (n *Node) evictFor(via string) bool {
	mine := 0
	if s, ok := n.srcs[via]; ok {
		mine = s.fresh
	}
	var hog string
	most := mine + 1
	for v, s := range n.srcs {
		if s.fresh > most || (s.fresh == most && hog != "" && v < hog) {
			hog, most = v, s.fresh
		}
	}
	if hog == "" {
		return false
	}
	s := n.srcs[hog]
	for i := len(s.q) - 1; i >= 0; i-- {
		c, ok := n.claims[s.q[i]]
		if ok && c.via == hog && c.nonce == 0 && c.fresh {
			s.q = slices.Delete(s.q, i, i+1)
			n.dropClaim(c.rec.ID)
			n.refuse(c.rec, false)
			return true
		}
	}
	return false
}

// preemptFor frees a probe slot for a claim of s when all are taken: if
// other sources have more probes in flight than s, the probe sent first
// among those of the sources with the most is abandoned and its claim
// dropped (an honest record comes back with anti-entropy). So the slots are
// shared evenly between the sources that want them, a source's probe is
// abandoned only for one with fewer, and a flood over many connections
// cannot hold every slot while the claims of others wait out their
// NeighborTimeout: an answered probe takes a round trip, an unanswered one
// is the oldest in flight.
func (n *Node) preemptFor(s *source) bool {
	most := s.flight
	for _, o := range n.srcs {
		most = max(most, o.flight)
	}
	if most <= s.flight {
		return false
	}
	var victim *claim
	for via, o := range n.srcs {
		if o.flight != most {
			continue
		}
		if c := n.oldestProbe(via, o); c != nil && (victim == nil || c.sent.Before(victim.sent) ||
			(c.sent.Equal(victim.sent) && c.rec.ID.Compare(victim.rec.ID) < 0)) {
			victim = c
		}
	}
	if victim == nil {
		return false
	}
	n.log.Debug("gossip: probe slot given to another source", "record", victim.rec.String(), "from", victim.via)
	n.dropClaim(victim.rec.ID)
	return true
}

// oldestProbe returns the claim of source via (counts s) whose probe went
// out first, among those that may be abandoned (not LEFT or DEAD), dropping
// the ids of claims settled since from the front of s.probed.
func (n *Node) oldestProbe(via string, s *source) *claim {
	live := func(id NodeID) *claim {
		if c, ok := n.claims[id]; ok && c.via == via && c.nonce != 0 {
			return c
		}
		return nil
	}
	for len(s.probed) > 0 && live(s.probed[0]) == nil {
		s.probed = s.probed[1:]
	}
	for _, id := range s.probed {
		if c := live(id); c != nil && !c.rec.Status.Gone() {
			return c
		}
	}
	return nil
}

// queueClaim probes c now if it may, else queues it.
func (n *Node) queueClaim(c *claim) {
	s := n.srcs[c.via]
	if c.rec.Status.Gone() || (s.flight < maxSourceProbing && (n.probing < maxProbing || n.preemptFor(s))) {
		n.probe(c)
		return
	}
	if !s.inTurn {
		s.inTurn = true
		n.turn = append(n.turn, c.via)
	}
	s.q = append(s.q, c.rec.ID)
}

// probe sends c's member a PING with a fresh nonce.
func (n *Node) probe(c *claim) {
	if c.nonce == 0 {
		n.probing++
		s := n.srcs[c.via]
		s.flight++
		s.probed = append(s.probed, c.rec.ID)
		if len(s.probed) > 2*s.flight+16 { // drop ids of claims settled meanwhile
			s.probed = slices.DeleteFunc(s.probed, func(id NodeID) bool {
				o, ok := n.claims[id]
				return !ok || o.via != c.via || (o.nonce == 0 && o != c)
			})
		}
	} else {
		delete(n.byNonce, c.nonce)
	}
	c.nonce = n.nonce()
	if n.byNonce == nil {
		n.byNonce = make(map[uint64]NodeID)
	}
	n.byNonce[c.nonce] = c.rec.ID
	c.sent = n.now
	c.tries++
	n.send(c.rec.Peer(), &Message{Kind: KindPing, Digest: c.nonce})
}

// nonce returns a non-zero random 64-bit value (zero is "no digest" on the wire).
func (n *Node) nonce() uint64 {
	for {
		var v uint64
		if n.nonces != nil {
			v = n.nonces.Uint64()
		} else {
			v = n.rng.Uint64()
		}
		if v != 0 {
			return v
		}
	}
}

// pumpClaims probes queued claims while there is room: one claim from each
// source in turn, skipping sources at their own bound.
func (n *Node) pumpClaims() {
	for idle := 0; n.probing < maxProbing && len(n.turn) > 0 && idle < len(n.turn); {
		if n.rr >= len(n.turn) {
			n.rr = 0
		}
		via := n.turn[n.rr]
		s := n.srcs[via]
		if s.flight >= maxSourceProbing {
			n.rr++
			idle++
			continue
		}
		probed := false
		for len(s.q) > 0 && !probed {
			id := s.q[0]
			s.q = s.q[1:]
			if c, ok := n.claims[id]; ok && c.via == via && c.nonce == 0 {
				n.probe(c)
				probed = true
			}
		}
		if probed {
			idle = 0
		} else {
			idle++
		}
		if len(s.q) > 0 {
			n.rr++
			continue
		}
		n.turn = slices.Delete(n.turn, n.rr, n.rr+1)
		s.q, s.inTurn = nil, false
		if s.held == 0 {
			delete(n.srcs, via)
		}
	}
	for _, via := range n.turn { // drop ids of claims gone meanwhile
		if s := n.srcs[via]; len(s.q) > 2*s.held+64 {
			s.q = slices.DeleteFunc(s.q, func(id NodeID) bool {
				c, ok := n.claims[id]
				return !ok || c.via != via || c.nonce != 0
			})
		}
	}
}

func (n *Node) dropClaim(id NodeID) *claim {
	c, ok := n.claims[id]
	if !ok {
		return nil
	}
	s := n.srcs[c.via]
	if c.nonce != 0 {
		n.probing--
		s.flight--
		delete(n.byNonce, c.nonce)
	}
	if c.fresh {
		n.fresh--
		s.fresh--
	}
	if countsClient(c) {
		n.freshClients--
	}
	s.held--
	if s.held == 0 && !s.inTurn {
		delete(n.srcs, c.via)
	}
	delete(n.claims, id)
	return c
}

// settle ends c's probe with a: the claim is adopted or dropped.
func (n *Node) settle(id NodeID, a answer) {
	c := n.dropClaim(id)
	if c == nil {
		return
	}
	adopt := a == answeredAlive
	if c.rec.Status.Gone() {
		adopt = a != answeredAlive
	}
	if !adopt {
		n.log.Info("gossip: probe refuted a second-hand record", "record", c.rec.String(), "answer", a.String())
		return
	}
	n.adoptRecord(c.rec, c.age)
}

// adoptRecord merges a settled record into the table and emits the change.
// A record that would add a lite client past Config.MaxClientRecords is
// refused instead (a claim about an id the table held, counted only now).
func (n *Node) adoptRecord(rec Member, age time.Duration) {
	if cur, known := n.table.Get(rec.ID); addsClient(rec, cur, known) && n.clientsFull() {
		n.refuse(rec, true)
		return
	}
	prev, existed, changed := n.table.ApplyAged(rec, n.now, age)
	if !changed {
		return
	}
	n.transition(prev, existed, rec, false)
	if rec.Status == Suspect || (existed && !prev.Status.Gone() && rec.Status == Alive) {
		// the suspect must hear a suspicion to refute it; a raised
		// incarnation held for its proof was not relayed when it arrived
		// (proof.go)
		n.broadcast(rec)
	}
}

// unvouched reports, logging it, whether rec is a member-role record about
// the sender of m that m's connection cannot vouch for: the transport
// reported that it did not prove the member credential (a lite client's
// secret). Such a record is neither adopted nor forwarded: a client would
// otherwise put itself on every member's ring.
func (n *Node) unvouched(rec Member, m *Message) bool {
	if !m.ClientOnly || rec.Role != RoleMember || rec.ID != m.From.ID {
		return false
	}
	n.log.Info("gossip: refusing a member-role record from a sender that did not prove the member credential",
		"record", rec.String(), "from", m.From.Addr)
	return true
}

// mayIntroduce reports, logging why not, whether rec, about an id the table
// holds no record of (not even a tombstone), may become a claim or a
// tombstone when the message being stepped arrived over a connection that
// proved no member credential (Node.client). Such a sender (a lite client,
// or whoever holds only the client or operator secret) introduces at most
// its own record: the one about the sender (from), at the address of the
// connection it came over (Node.via), while no other new claim of that
// connection waits and the table holds no other record at that address
// that is suspected or gone. Otherwise one credential would let its holder
// name as many lite clients as it can answer for and fill every table to
// Config.MaxTableSize (SPEC.md, Admission): now each one takes a
// connection of its own, which the transport's connection limits bound, and
// cycling identities at one address is held to one new id per
// SuspicionTimeout + TombstoneTTL (the address's previous identity is
// suspected when the next is admitted, Failure detection input 3). Records
// of others that the table already holds follow the other rules, which
// add no entry. Members relay new records for each other as before, so a
// lite client's own relay of other clients is lost, not their
// dissemination.
func (n *Node) mayIntroduce(rec Member, from Peer) bool {
	if !n.client {
		return true
	}
	why := ""
	switch {
	case rec.ID != from.ID || rec.Addr != from.Addr || rec.Addr != n.via:
		why = "not the sender's own record at its connection's address"
	default:
		if _, ok := n.claims[rec.ID]; ok {
			return true // merged into the claim held (hold)
		}
		if s, ok := n.srcs[n.via]; ok && s.fresh > 0 {
			why = "the connection has another new record waiting for its probe"
			break
		}
		for _, o := range n.table.At(rec.Addr) {
			if o.ID != rec.ID && o.Status != Alive {
				why = "the address's previous identity is suspected or gone"
				break
			}
		}
		if why == "" {
			return true
		}
	}
	n.log.Debug("gossip: a sender that proved no member credential may not introduce this record",
		"record", rec.String(), "from", from.Addr, "why", why)
	return false
}

// onPong settles the claim whose probe it answers: same id, address, role
// and nonce; Flag set means the member is leaving. A PONG echoing the nonce
// of a probe sent to an address, but from another id, says that address now
// answers as someone else (a member restarted there with a new identity):
// the probed claim is settled as unanswered, and the members the table
// holds live at that address are suspected (replacedAt).
func (n *Node) onPong(m *Message) {
	if m.Digest == 0 {
		return
	}
	c, ok := n.claims[m.From.ID]
	if !ok || c.nonce != m.Digest {
		n.otherAnswered(m)
		return
	}
	if m.From.Addr != c.rec.Addr || m.From.Role != c.rec.Role {
		return
	}
	if m.ClientOnly && c.rec.Role == RoleMember {
		n.log.Warn("gossip: a member-role answer over a connection that did not prove the member credential, ignored",
			"record", c.rec.String())
		return
	}
	if m.Flag {
		n.settle(m.From.ID, answeredLeaving)
		return
	}
	n.settle(m.From.ID, answeredAlive)
	if !c.rec.Status.Gone() {
		n.replacedAt(m.From, m.ClientOnly)
	}
}

// otherAnswered handles a PONG that answers no probe of its sender's own
// id: if it echoes the nonce of a probe sent to the sender's address about
// another id, that address answers as another node now.
func (n *Node) otherAnswered(m *Message) {
	id, ok := n.byNonce[m.Digest]
	if !ok {
		return
	}
	c := n.claims[id]
	if c == nil || c.nonce != m.Digest || c.rec.ID == m.From.ID || c.rec.Addr != m.From.Addr {
		return
	}
	if m.ClientOnly && c.rec.Role == RoleMember {
		return // a client cannot speak for a member's address
	}
	n.log.Info("gossip: another node answered the probe of a record", "record", c.rec.String(), "answered", m.From.String())
	n.settle(id, noAnswer)
	n.replacedAt(m.From, m.ClientOnly)
}

// replacedAt handles proof that by answers at by.Addr (a PONG echoing a
// nonce sent there): any other member the table holds live at that address
// is no longer there. Each one leaves the views and, if ALIVE, is
// suspected (refutable as any suspicion: a member that is in fact alive
// elsewhere outranks it). An answer over a connection that did not prove
// the member credential (clientOnly) does not speak for members' records.
func (n *Node) replacedAt(by Peer, clientOnly bool) {
	for _, m := range n.table.At(by.Addr) {
		if m.ID == n.self.ID || m.ID == by.ID || m.Status.Gone() {
			continue
		}
		if clientOnly && m.Role == RoleMember {
			continue
		}
		n.log.Info("gossip: another node answers at a member's address, suspecting the member",
			"member", m.String(), "answered", by.String())
		n.removeActive(m.ID)
		n.removePassive(m.ID)
		n.removePending(m.ID)
		if m.Status == Alive {
			n.suspect(m)
		}
	}
}

// claimLinkDown settles the probed claims at addr: the dial failed.
func (n *Node) claimLinkDown(addr string) {
	var ids []NodeID
	for id, c := range n.claims {
		if c.nonce != 0 && c.rec.Addr == addr {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, NodeID.Compare)
	for _, id := range ids {
		n.settle(id, noAnswer)
	}
}

// tickClaims re-probes or settles unanswered claims, drops claims never
// probed in time, and probes queued ones.
func (n *Node) tickClaims() {
	if len(n.claims) == 0 {
		n.claims = nil
		n.srcs, n.turn, n.rr = nil, nil, 0
		n.byNonce = nil
		return
	}
	var due []NodeID
	for id, c := range n.claims {
		if !n.now.Before(n.claimDeadline(c)) {
			due = append(due, id)
		}
	}
	slices.SortFunc(due, NodeID.Compare)
	for _, id := range due {
		c := n.claims[id]
		switch {
		case c.nonce == 0:
			n.log.Debug("gossip: unverified record not probed in time, dropped", "record", c.rec.String())
			n.dropClaim(id)
		case c.tries < probeAttempts:
			n.probe(c)
		default:
			n.settle(id, noAnswer)
		}
	}
	n.pumpClaims()
	n.claimMin = n.nextClaim()
}

// claimDeadline is when c needs attention: its probe's answer window ends,
// or (not probed yet) its wait for a probe slot does.
func (n *Node) claimDeadline(c *claim) time.Time {
	if c.nonce != 0 {
		return c.sent.Add(n.cfg.NeighborTimeout)
	}
	return c.created.Add(n.cfg.NeighborTimeout)
}

// nextClaim returns the earliest claim deadline (zero if none).
func (n *Node) nextClaim() time.Time {
	var next time.Time
	for _, c := range n.claims {
		if d := n.claimDeadline(c); next.IsZero() || d.Before(next) {
			next = d
		}
	}
	return next
}
