package core

import (
	crand "crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"time"
)

// EventKind is the kind of a member event.
type EventKind uint8

// The member events a Node emits (each on a change of the local table).
const (
	// EventJoined: a node became known ALIVE (new, or back after a tombstone).
	EventJoined EventKind = iota + 1
	// EventAlive: a suspected node refuted its suspicion.
	EventAlive
	// EventSuspect: a node is suspected.
	EventSuspect
	// EventDead: a suspicion went unrefuted (or the death was learned).
	EventDead
	// EventLeft: a node left gracefully.
	EventLeft
)

// String names the event kind.
func (k EventKind) String() string {
	switch k {
	case EventJoined:
		return "joined"
	case EventAlive:
		return "alive"
	case EventSuspect:
		return "suspect"
	case EventDead:
		return "dead"
	case EventLeft:
		return "left"
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

// Event is one member event: the record after the change.
type Event struct {
	Kind   EventKind
	Member Member
}

// Send is a message the runtime must deliver to To.Addr (To.ID may be zero
// when only the address is known, e.g. a seed).
type Send struct {
	To  Peer
	Msg *Message
}

// LinkOp asks the runtime to keep (Open) or drop (!Open) a monitored link to
// Peer. Open links are the active view: the runtime reports their loss or
// keepalive failure with Node.LinkDown, which is the main source of
// suspicion (with the failed dials of probe.go, also reported by LinkDown,
// and probes answered by another node at a member's address, verify.go).
type LinkOp struct {
	Peer Peer
	Open bool
}

// Output is what one call of a Node asks its runtime to do. The slices are
// fresh on every call and owned by the caller.
type Output struct {
	Sends  []Send
	Links  []LinkOp
	Events []Event
	// Next is when the runtime must call Tick at the latest.
	Next time.Time
}

// LinkFailure says why a link went down.
type LinkFailure uint8

// The link failure reasons a runtime reports.
const (
	// LinkLost: the connection closed or a dial failed.
	LinkLost LinkFailure = iota + 1
	// KeepaliveFailed: the connection stayed open but stopped answering pings.
	KeepaliveFailed
)

// String names the reason.
func (f LinkFailure) String() string {
	switch f {
	case LinkLost:
		return "link lost"
	case KeepaliveFailed:
		return "keepalive failed"
	}
	return fmt.Sprintf("failure(%d)", uint8(f))
}

// Node is the membership state machine of one node: member table,
// HyParView views, Plumtree broadcast state, suspicions and anti-entropy.
// It is pure: it never reads the clock (now is an argument), never starts a
// goroutine and never touches a socket. Each method returns the Output the
// caller must carry out. Not safe for concurrent use.
type Node struct {
	cfg   Config
	rng   *rand.Rand
	log   *slog.Logger
	now   time.Time
	self  Member
	table *Table
	out   Output

	// HyParView (hyparview.go)
	active       []neighbor
	passive      []Peer
	pending      []pendingReq
	joining      bool
	joinDeadline time.Time
	nextShuffle  time.Time
	nextPromote  time.Time
	lastSample   []Peer
	started      bool
	leaving      bool

	// Plumtree (plumtree.go)
	seen    map[MsgID]seenRec
	seenQ   []MsgID
	seenQ0  int
	missing map[MsgID]*missingRec
	missMin time.Time // no missing deadline is earlier (may be stale-early)
	lazyQ   []lazyItem
	unsent  []Member

	// suspicion (suspicion.go)
	suspects map[NodeID]*suspicion
	suspMin  time.Time // no suspicion deadline is earlier (may be stale-early)

	// anti-entropy (antientropy.go)
	nextSync time.Time

	// reconnect (reconnect.go)
	lost          map[NodeID]string // members held live, now DEAD here: their address
	reconnect     []lostPeer        // lost members whose tombstones expired, oldest first
	nextReconnect time.Time

	// probes of non-neighbours (probe.go)
	watched  []dialWatch
	indirect NodeID // the member this node last suspected on a failed dial

	// second-hand records awaiting a probe (verify.go)
	claims       map[NodeID]*claim
	byNonce      map[uint64]NodeID  // the claim each PING in flight probes
	srcs         map[string]*source // per connection: its claims' queue and counts
	turn         []string           // sources with queued claims, in round-robin order
	rr           int                // the source in turn whose claim is probed next
	via          string             // the source of the message being stepped
	client       bool               // the message being stepped proved no member credential (Message.ClientOnly)
	relayed      bool               // the message being stepped is a GOSSIP its sender relays unproven (proof.go)
	probing      int                // claims with a PING in flight
	fresh        int                // claims about ids the table does not hold
	freshClients int                // those of role RoleClient
	refused      uint64             // claims dropped because the table was full
	bounced      bool               // a record was refused for the lite-client bound (reset by onGossip)
	refLog       time.Time          // when refusals may next be logged
	refLast      uint64             // Refused at the last log line
	nonces       *rand.ChaCha8      // probe nonces; nil: drawn from rng (Config.Rand set)
	claimMin     time.Time          // no claim deadline is earlier (may be stale-early)
}

// NewNode returns the state machine of node self. cfg nil means
// DefaultConfig(); cfg is copied.
func NewNode(self Peer, cfg *Config) (*Node, error) {
	if cfg == nil {
		cfg = DefaultConfig()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if self.ID.IsZero() || self.Addr == "" || len(self.Addr) > MaxAddrLen || self.Role > RoleClient {
		return nil, fmt.Errorf("%w: self %v", ErrInvalidConfig, self)
	}
	n := &Node{cfg: *cfg, rng: cfg.Rand, log: cfg.Logger}
	if n.rng == nil {
		// nonces must be unguessable: seeded from the system, not from the id
		var seed [32]byte
		_, _ = crand.Read(seed[:]) // never fails (crypto/rand documents it)
		n.nonces = rand.NewChaCha8(seed)
		var s1, s2 uint64
		for i := range 8 {
			s1 = s1<<8 | uint64(self.ID[i])
			s2 = s2<<8 | uint64(self.ID[8+i])
		}
		n.rng = rand.New(rand.NewPCG(s1, s2))
	}
	if n.log == nil {
		n.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	n.log = n.log.With("node", self.String())
	n.self = Member{ID: self.ID, Addr: self.Addr, Role: self.Role, Status: Alive}
	n.table = NewTable(n.self)
	n.seen = make(map[MsgID]seenRec)
	n.missing = make(map[MsgID]*missingRec)
	n.suspects = make(map[NodeID]*suspicion)
	return n, nil
}

// Self returns the node's own current record.
func (n *Node) Self() Member { return n.self }

// Members returns the member table (tombstones included), sorted by id.
func (n *Node) Members() []Member { return n.table.Members() }

// Since returns the local time at which id's record took its current
// status (backdated by the age a tombstone carried when it came from
// another member); zero when the table holds no record of id.
func (n *Node) Since(id NodeID) time.Time { return n.table.Since(id) }

// Member returns the table's record for id.
func (n *Node) Member(id NodeID) (Member, bool) { return n.table.Get(id) }

// Digest returns the table digest (equal tables, equal digests).
func (n *Node) Digest() uint64 { return n.table.Digest() }

// Active returns the active view (overlay neighbours).
func (n *Node) Active() []Peer {
	out := make([]Peer, len(n.active))
	for i, a := range n.active {
		out[i] = a.Peer
	}
	return out
}

// Passive returns the passive view.
func (n *Node) Passive() []Peer { return append([]Peer(nil), n.passive...) }

// Eager returns the active neighbours Plumtree currently pushes payloads to.
func (n *Node) Eager() []Peer {
	var out []Peer
	for _, a := range n.active {
		if a.eager {
			out = append(out, a.Peer)
		}
	}
	return out
}

// Start begins the node's life at now: it joins through Config.Seeds (or
// stands alone when there are none) and arms the periodic timers.
func (n *Node) Start(now time.Time) Output {
	n.begin(now)
	if !n.started {
		n.started = true
		n.nextShuffle = now.Add(time.Duration(n.rng.Int64N(int64(n.cfg.ShuffleInterval))) + 1)
		n.nextSync = now.Add(time.Duration(n.rng.Int64N(int64(n.cfg.AntiEntropyInterval))) + 1)
		n.nextReconnect = now.Add(n.cfg.ReconnectInterval)
		n.markSeen(n.self)
		n.unsent = append(n.unsent, n.self)
		if len(n.cfg.Seeds) > 0 {
			n.join()
		}
	}
	return n.finish()
}

// Leave departs gracefully: the node's LEFT record is pushed to every active
// neighbour and every passive peer (which broadcast it on), the neighbours
// are disconnected without suspicion, and the node ignores all later input
// but grafts. The runtime should deliver
// the returned sends, then stop.
func (n *Node) Leave(now time.Time) Output {
	n.begin(now)
	if n.leaving {
		return n.finish()
	}
	n.leaving = true
	n.self.Status = Left
	n.table.put(n.self, now)
	n.markSeen(n.self)
	for _, a := range n.active {
		n.send(a.Peer, &Message{Kind: KindGossip, Members: []Member{n.self}})
		n.send(a.Peer, &Message{Kind: KindDisconnect, Flag: true})
		n.out.Links = append(n.out.Links, LinkOp{Peer: a.Peer})
	}
	// the passive view too: many entry points into the broadcast tree, so
	// a part of it cut off from the leaver's neighbours does not wait for a
	// graft (the leaver is about to vanish and cannot answer many)
	for _, p := range n.passive {
		n.send(p, &Message{Kind: KindGossip, Members: []Member{n.self}})
	}
	n.active, n.passive, n.pending, n.missing = nil, nil, nil, map[MsgID]*missingRec{}
	n.lazyQ, n.unsent, n.watched = nil, nil, nil
	n.claims, n.srcs, n.turn, n.byNonce, n.probing, n.fresh, n.freshClients = nil, nil, nil, nil, 0, 0, 0
	n.joining = false
	return n.finish()
}

// Leaving reports whether Leave was called.
func (n *Node) Leaving() bool { return n.leaving }

// Step handles one message received at now. The sender is m.From.
func (n *Node) Step(now time.Time, m *Message) Output {
	n.begin(now)
	if m == nil {
		n.log.Warn("gossip: dropping a nil message")
		return n.finish()
	}
	if n.leaving && m.Kind != KindGraft && m.Kind != KindPing {
		return n.finish() // a leaving node only answers grafts for its LEFT, and probes
	}
	if err := m.check(); err != nil {
		n.drop(m, err.Error())
		return n.finish()
	}
	if m.From.ID == n.self.ID {
		n.drop(m, "from my own id")
		return n.finish()
	}
	n.heardFrom(m.From.ID)
	n.via = m.Via
	if n.via == "" {
		n.via = m.From.Addr
	}
	n.client = m.ClientOnly
	n.relayed = m.Kind == KindGossip && m.Flag
	switch m.Kind {
	case KindJoin:
		n.onJoin(m)
	case KindForwardJoin:
		n.onForwardJoin(m)
	case KindJoinAccept:
		n.onJoinAccept(m)
	case KindNeighbor:
		n.onNeighbor(m)
	case KindNeighborReply:
		n.onNeighborReply(m)
	case KindDisconnect:
		n.onDisconnect(m)
	case KindShuffle:
		n.onShuffle(m)
	case KindShuffleReply:
		n.onShuffleReply(m)
	case KindGossip:
		n.onGossip(m)
	case KindIHave:
		n.onIHave(m)
	case KindPrune:
		n.onPrune(m)
	case KindGraft:
		n.onGraft(m)
	case KindSyncDigest:
		n.onSyncDigest(m)
	case KindSync:
		n.onSync(m)
	case KindPing:
		// the nonce is echoed; Flag tells an admission probe we are leaving
		n.send(m.From, &Message{Kind: KindPong, Digest: m.Digest, Flag: n.leaving})
	case KindPong:
		n.onPong(m)
	default:
		n.drop(m, "unknown kind")
	}
	return n.finish()
}

// LinkDown reports at now that the link to addr failed (closed, dial failed
// or keepalive failed). If addr is an active neighbour this raises a
// suspicion of it; if it is a member this node recently dialled outside its
// active view (a NEIGHBOR request or a probe, probe.go) it may; otherwise it
// only prunes the address from the views.
func (n *Node) LinkDown(now time.Time, addr string, why LinkFailure) Output {
	n.begin(now)
	if !n.leaving {
		n.claimLinkDown(addr)
		n.onLinkDown(addr, why)
	}
	return n.finish()
}

// Tick runs every timer due at now: grafts, suspicion deadlines, shuffles,
// anti-entropy, promotions, join retries and expiries.
func (n *Node) Tick(now time.Time) Output {
	n.begin(now)
	if n.leaving {
		return n.finish()
	}
	n.tickSuspicions()
	n.tickClaims()
	n.tickPlumtree()
	n.tickViews()
	n.tickSync()
	for _, m := range n.table.Expire(now, n.cfg.TombstoneTTL) {
		n.log.Debug("tombstone expired", "member", m.String())
		n.expired(m)
	}
	n.tickReconnect()
	return n.finish()
}

// begin starts an entry point: time never runs backwards inside the core.
func (n *Node) begin(now time.Time) {
	if now.After(n.now) {
		n.now = now
	}
	n.out = Output{}
}

// finish flushes lazy pushes, computes the next deadline and hands the
// output over.
func (n *Node) finish() Output {
	n.keepEagerLink()
	if len(n.turn) > 0 && !n.leaving {
		n.pumpClaims()
	}
	n.flushLazy()
	out := n.out
	n.out = Output{}
	if !n.leaving && n.started {
		out.Next = n.nextDeadline()
	}
	return out
}

func (n *Node) nextDeadline() time.Time {
	next := n.nextShuffle
	min := func(t time.Time) {
		if !t.IsZero() && t.Before(next) {
			next = t
		}
	}
	min(n.nextSync)
	if len(n.reconnect) > 0 || len(n.cfg.Seeds) > 0 {
		min(n.nextReconnect)
	}
	if n.joining {
		min(n.joinDeadline)
	}
	for _, p := range n.pending {
		min(p.deadline)
	}
	if n.promotable() {
		min(n.nextPromote)
	}
	if len(n.missing) > 0 {
		min(n.missMin)
	}
	if len(n.suspects) > 0 {
		min(n.suspMin)
	}
	min(n.table.NextExpiry(n.cfg.TombstoneTTL))
	if len(n.claims) > 0 {
		min(n.claimMin)
	}
	if n.seenQ0 < len(n.seenQ) {
		min(n.seen[n.seenQ[n.seenQ0]].at.Add(n.cfg.seenTTL()))
	}
	if !next.After(n.now) {
		next = n.now.Add(time.Millisecond)
	}
	return next
}

func (n *Node) send(to Peer, m *Message) {
	m.From = n.self.Peer()
	n.out.Sends = append(n.out.Sends, Send{To: to, Msg: m})
}

func (n *Node) emit(k EventKind, m Member) {
	n.out.Events = append(n.out.Events, Event{Kind: k, Member: m})
}

func (n *Node) drop(m *Message, why string) {
	n.log.Info("gossip: dropped message", "kind", m.Kind.String(), "from", m.From.String(), "why", why)
}

// apply merges a record learned from the network (age: how long a tombstone
// has been one at the sender; from: who told us) and emits the events of the
// change. It returns whether the table changed. Records about this node go
// to refutation. A record the sender may not vouch for on its own is held
// for a probe or downgraded (verify.go): ALIVE or SUSPECT for a member not
// held live at that address, LEFT for a live member, DEAD for a live member;
// and ALIVE or SUSPECT at a higher incarnation for a member held live that
// neither the member itself nor a member relaying a proven record sent
// (proof.go).
func (n *Node) apply(rec Member, age time.Duration, from Peer) bool {
	if !n.plausible(rec, from) {
		return false
	}
	if rec.ID == n.self.ID {
		n.aboutSelf(rec, from)
		return false
	}
	cur, known := n.table.Get(rec.ID)
	if known && !Supersedes(rec, cur) {
		return false
	}
	if !known && !n.mayIntroduce(rec, from) {
		return false
	}
	live := known && !cur.Status.Gone()
	switch rec.Status {
	case Alive, Suspect:
		if !live || cur.Addr != rec.Addr || cur.Role != rec.Role {
			n.hold(rec, 0)
			return false
		}
		if rec.Incarnation > cur.Incarnation && !n.vouches(rec, from) {
			// liveness is proven by members, not heard (proof.go)
			n.hold(rec, 0)
			return false
		}
	case Left, Dead:
		if live {
			// probed where the table reaches the member, never at an
			// address the claim names
			rec.Addr, rec.Role = cur.Addr, cur.Role
			if rec.Status == Dead {
				return n.deadHeard(cur, rec, age)
			}
			n.hold(rec, age)
			return false
		}
	}
	if addsClient(rec, cur, known) && n.clientsFull() {
		n.refuse(rec, true)
		return false
	}
	if !known && n.full() {
		n.refuse(rec, false)
		return false
	}
	prev, existed, changed := n.table.ApplyAged(rec, n.now, age)
	if !changed {
		return false
	}
	n.transition(prev, existed, rec, false)
	if rec.Status == Suspect {
		n.broadcast(rec) // a table exchange does not relay it: the suspect must hear it
	}
	return true
}

// transition emits the event of a record change and updates the views and
// suspicion timers that depend on the status.
func (n *Node) transition(prev Member, existed bool, cur Member, origin bool) {
	was := prev.Status
	if !existed {
		was = Dead // unknown behaves like a tombstone for events
	}
	switch cur.Status {
	case Alive:
		if was.Gone() {
			n.emit(EventJoined, cur)
		} else if was == Suspect {
			n.emit(EventAlive, cur)
		}
	case Suspect:
		if was.Gone() {
			n.emit(EventJoined, cur)
		}
		if was != Suspect {
			n.emit(EventSuspect, cur)
		}
	case Left:
		if existed && !was.Gone() {
			n.emit(EventLeft, cur)
		}
	case Dead:
		if existed && !was.Gone() {
			n.emit(EventDead, cur)
			n.noteLost(cur)
		}
	}
	n.trackSuspicion(cur, origin)
	if cur.Status.Gone() {
		n.forget(cur)
	}
}

// aboutSelf handles a record about this node: anything that is not exactly
// our own record at an incarnation at least ours is refuted by bumping the
// incarnation and broadcasting ALIVE. A node that learns it was declared
// DEAD also rejoins through the node that told it: after a partition heals
// the two sides may hold no link to each other, and the join's walk
// rebuilds cross links so the overlay becomes one again.
func (n *Node) aboutSelf(rec Member, from Peer) {
	if rec.Incarnation < n.self.Incarnation || rec == n.self {
		return
	}
	n.log.Info("gossip: refuting", "record", rec.String())
	n.bumpIncarnation(rec.Incarnation)
	n.broadcast(n.self)
	if rec.Status == Dead {
		if from.Addr != "" && !n.isActive(from.ID) {
			n.send(from, &Message{Kind: KindJoin})
		} else if len(n.active) == 0 && len(n.pending) == 0 && !n.joining {
			n.join()
		}
	}
}

// maxIncarnationJump bounds how far one record may move a known node's
// incarnation. Only a node raises its own incarnation, by one above the
// highest it has heard, so honest records never jump far; a forged one
// that did could push a node to the top of the range, where it could no
// longer outbid a suspicion (and would wrap to 0 if it tried).
const maxIncarnationJump = 1 << 16

// plausible reports whether rec may be an honest record, logging why not:
// its incarnation must be below the top of the range and not far above
// what this node knows of that member (itself included).
func (n *Node) plausible(rec Member, from Peer) bool {
	why := ""
	known, ok := n.self, rec.ID == n.self.ID
	if !ok {
		known, ok = n.table.Get(rec.ID)
	}
	switch {
	case rec.Incarnation == math.MaxUint64:
		why = "incarnation at the top of the range"
	case ok && rec.Incarnation > known.Incarnation && rec.Incarnation-known.Incarnation > maxIncarnationJump:
		why = fmt.Sprintf("incarnation jumps from %d", known.Incarnation)
	default:
		return true
	}
	n.log.Warn("gossip: dropping an implausible record", "record", rec.String(), "from", from.Addr, "why", why)
	return false
}

// bumpIncarnation sets the node's incarnation above over and records it in
// its own table.
func (n *Node) bumpIncarnation(over uint64) {
	if over == math.MaxUint64 {
		return // unreachable: implausible drops such records
	}
	n.self.Incarnation = over + 1
	n.table.put(n.self, n.now)
}

// Reannounce bumps the node's incarnation and broadcasts its ALIVE record:
// a way to push a fresh record (for example after an address change) and
// the probe the simulator uses to measure broadcast cost.
func (n *Node) Reannounce(now time.Time) Output {
	n.begin(now)
	if !n.leaving {
		n.bumpIncarnation(n.self.Incarnation)
		n.broadcast(n.self)
	}
	return n.finish()
}
