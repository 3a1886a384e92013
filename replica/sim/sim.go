// Package sim is a deterministic discrete-event simulator for the replica
// protocol. It runs the real replica.Replica and replica.Session state
// machines on simulated nodes over a simulated network with per-message
// latency, loss, duplication, reordering, partitions, pauses (SIGSTOP:
// the node stops, messages to it wait), crashes (the node and its copies
// are gone for good), restarts under new ids (joins), removals, graceful
// leaves with their handoff and per-node clock skew, while clients run
// register operations (read, write, compare-and-swap) against divergent views of
// who owns each key. Every random choice comes from one seed, so a failing
// run prints its seed and replays.
//
// The history of every key is checked with porcupine for linearizability
// (reads are Read(Majority): confirmed by a read quorum before they
// answer); an acknowledged write that a later read does not see makes the
// history non-linearizable, so "no acknowledged write lost" is part of the
// check.
//
// The simulator is single-threaded and starts no goroutine; messages go
// through the real wire encoding (replica.Msg Encode/Decode).
package sim

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/casty-go/casty/hlc"
	"github.com/casty-go/casty/internal/simq"
	"github.com/casty-go/casty/pager"
	"github.com/casty-go/casty/replica"
)

// Config describes one simulated run.
type Config struct {
	// Seed makes the run reproducible.
	Seed uint64
	// Nodes is the number of placed members. Default 5.
	Nodes int
	// Replicas is R; W the write quorum (acks, counted against R).
	// Defaults 3 and 2.
	Replicas, W int
	// Keys is how many register actors the clients use. Default 3.
	Keys int
	// Clients run operations one after another. Default 4.
	Clients int
	// Ops is the total operations issued. Default 200.
	Ops int
	// Loss, Duplicate are per-message probabilities. Reorder lets messages
	// on one link overtake each other.
	Loss, Duplicate float64
	Reorder         bool
	// Partitions, Pauses and Crashes are how many of each fault to inject
	// at random times (a crash is permanent; at most Replicas-W of them, so
	// every key keeps a write quorum in the end).
	Partitions, Pauses, Crashes int
	// Skew is the largest clock offset of a node, either way.
	Skew time.Duration
	// Restarts is how many times a member is killed and comes back as a
	// new member (a new id, empty): a join. The dead one stays placed
	// until removed.
	Restarts int
	// RemoveAfter is how long (simulated ms) a member must have been dead
	// before the members that see a majority of the placement alive remove
	// it. Default 3000.
	RemoveAfter int64
	// ViewLag bounds how long (simulated ms) a node takes to learn a new
	// placement. Default 200.
	ViewLag int64
	// Amnesia is how many times a node restarts with its id but an empty
	// memory — what SPEC.md ("A member restarting") forbids (a restarted
	// process takes a new id): runs with it lose acknowledged writes, which proves the check
	// finds loss.
	Amnesia int
	// Trace, when set, receives a line per protocol step (debugging).
	Trace func(string)
	// Repair is the period (simulated ms) of every node's anti-entropy
	// pass (replica.Repair) over the keys it replicates; 0: none.
	Repair int64
	// WrongViews is the probability a client's request goes to a node
	// that is not the key's first live replica (divergent membership
	// views: duplicate owners).
	WrongViews float64
	// Leaves is how many times a live member leaves gracefully
	// (replica/SPEC.md, Safety, "Graceful leave"): it stops serving as an
	// owner, a placement without it is published, and it keeps answering
	// replica messages (a handoff) until every other live member of the
	// placement it left has adopted a placement without it and finished
	// its syncs, or HandoffTimeout passes; then it is gone for good.
	// Leaves happen while the workload runs (between a tenth and half of
	// Ops issued), and only while the placement keeps Replicas members.
	Leaves int
	// HandoffTimeout bounds a leaver's handoff (simulated ms; casty's
	// Config.Replication.HandoffTimeout). Default 10000; negative: no handoff, the
	// leaver is gone the moment its removal is published.
	HandoffTimeout int64
	// LeaveWhilePaused makes every pause also start a leave (besides the
	// Leaves ones): the leaver is a member that shares a key's replica
	// set with the member just paused, so its handoff waits for a member
	// that cannot answer.
	LeaveWhilePaused bool
	// SkipUnsynced makes syncs leave out the newcomers of a range's
	// previous set that answer they have not finished their first syncs
	// (StatusJoining), and ask the range's set on the previous placement
	// without them instead, as casty's runSync does (replica/SPEC.md,
	// "Membership changes"). Other unsynced members are waited for.
	SkipUnsynced bool
	// UnsyncedWait, when positive, bounds how long a sync waits for a
	// member of a previous set that keeps answering unsynced (no newcomer)
	// before leaving it out, as casty's runSync does (its behindWait;
	// simulated ms). CopiesWait, when positive, bounds how long, with
	// SkipUnsynced, a newcomer left out is asked for its copies (casty's
	// unsyncedWait). Zero waits for ever (replica/SPEC.md, "Known gaps").
	UnsyncedWait, CopiesWait int64
	// NoNewcomerCopies makes newcomers answer syncs without their copies,
	// and syncs not wait for those they leave out — the rule before
	// SPEC.md's "Membership changes" had them handed over; runs with it
	// show the loss that rule had.
	NoNewcomerCopies bool
	// ForgetUnfinishedSyncs makes a member that re-enters a range whose
	// sync it had not finished sync from the new base set alone — the rule
	// before SPEC.md's "Membership changes" kept the old sets too.
	ForgetUnfinishedSyncs bool
	// EarlyAnswers makes each write or CAS come from a member (its home,
	// any member, crashed or not) and the owner commit it with
	// Session.CommitAnswering: the home answers the client as soon as its
	// own copy publishes the commit as a voter (replica.Decides), as casty
	// answers a caller on a replica (replica/SPEC.md, "Early answers").
	EarlyAnswers bool
	// EarlyReads extends EarlyAnswers to reads (and to a CAS whose
	// expectation failed): their confirm to the home carries the answer
	// (Session.ConfirmAnswering), and the home answers when its copy's
	// confirmation decides the read (replica.Decides).
	EarlyReads bool
	// DropOnReentry makes a member that enters a range drop every copy it
	// still holds there — the rule before SPEC.md's "Pruning" kept the
	// copies younger than the tombstone TTL: such a copy can be the only
	// live one of an acknowledged write whose set moved on before syncing.
	DropOnReentry bool
	// UnguardedKills kills members (Restarts, Crashes) at the times drawn
	// even when a second death in a key's replica set, before the first
	// was replaced and re-synced, exceeds what a write quorum survives
	// (Sim.tolerable) — as runs were made before that guard; the seeds
	// TestOldSyncRulesLoseWrites replays were found so.
	UnguardedKills bool
	// Ballast makes each commit also write one of four 512-byte pages
	// (chosen by the value written), so that copies are large enough for
	// a need-full to list them and its owner to answer with a catch-up —
	// only the pages the copy lacks (replica/SPEC.md, "Owner rounds") —
	// rather than the full page set a one-register copy always gets.
	Ballast bool
	// Deletes makes one operation in ten a deletion: a write of 0
	// committed as a full page set with no page (as casty's DeleteState
	// commits), which reads as 0.
	Deletes bool
	// Spares lets an owner skip a key's spare replica for up to that many
	// commits in a row whose answer rides to the caller's member
	// (replica.Set.Spares; it needs EarlyAnswers), as casty does. What a
	// spare is owed is flushed SpareFlush simulated ms (default 20) after
	// each commit that skipped one, during the next rounds or between
	// them (replica/SPEC.md, "Spare copies").
	Spares     int
	SpareFlush int64
}

func (c *Config) defaults() {
	if c.Nodes == 0 {
		c.Nodes = 5
	}
	if c.Replicas == 0 {
		c.Replicas = 3
	}
	if c.W == 0 {
		c.W = 2
	}
	if c.Keys == 0 {
		c.Keys = 3
	}
	if c.Clients == 0 {
		c.Clients = 4
	}
	if c.Ops == 0 {
		c.Ops = 200
	}
	if c.RemoveAfter == 0 {
		c.RemoveAfter = defaultRemoveAfter
	}
	if c.ViewLag == 0 {
		c.ViewLag = 200
	}
	if c.HandoffTimeout == 0 {
		c.HandoffTimeout = 10_000
	}
	if c.SpareFlush == 0 {
		c.SpareFlush = 20
	}
}

// Timing of the simulated system, in simulated milliseconds.
const (
	latencyMin   = 1
	latencyMax   = 8
	roundTimeout = 300  // a session round's deadline (Replication.Timeout)
	handoffPoll  = 20   // how often a leaver asks who has taken over
	clientWait   = 1500 // a client gives up on an answer (ErrTimeout)
	thinkMax     = 20   // pause between a client's operations
	horizon      = 600_000
)

// defaultRemoveAfter is Config.RemoveAfter's default.
const defaultRemoveAfter = 3000

// Stats counts what a run did.
type Stats struct {
	Ops, OK, Failed, Indeterminate int
	Messages, Lost, Duplicated     int
	Faults                         []string
	Activations, Fenced            int
	Joins, Removals, Syncs         int
	Repaired                       int // copies adopted by anti-entropy
	Pruned                         int // copies dropped by members that left their range
	Leaves                         int // graceful leaves
	HandedOff                      int // leaves whose handoff finished (every peer took over)
	HandoffsCut                    int // leaves whose handoff timed out
	// LeaveSyncs counts the range syncs begun on a placement a leave
	// published (by the members entering the leaver's ranges), and
	// LeaveSynced those of them that finished.
	LeaveSyncs, LeaveSynced int
	// WaitsCut counts the members a sync stopped waiting for after
	// Config.UnsyncedWait (left out, or their copies no longer asked for).
	WaitsCut int
	// EarlyAnswers counts the operations answered by their home's copy
	// (Config.EarlyAnswers) before the owner's answer.
	EarlyAnswers int
	// EarlyReads counts those of EarlyAnswers that were reads
	// (Config.EarlyReads).
	EarlyReads int
	// ListedRefusals counts the need-full refusals delivered to an owner
	// with the refusing copy's listing, each answered with a catch-up
	// when the owner's copy can build one (Config.Ballast).
	ListedRefusals int
	// SpareSkips counts the commits that skipped a spare (Config.Spares),
	// SpareFlushes the flushes that then sent a spare what it was owed.
	SpareSkips, SpareFlushes int
	// Diverged lists the copies found, at the end of the run, holding the
	// same stamp as another copy of the key but other pages: a stamp
	// names one commit, so that never happens (catch-ups and activation's
	// fetch rely on it).
	Diverged []string
}

// OpKind is a register operation.
type OpKind uint8

// The register operations.
const (
	Read OpKind = iota
	Write
	CAS
)

// Input is an operation's request.
type Input struct {
	Key      int
	Kind     OpKind
	Value    int // Write: the value; CAS: the new value
	Expected int // CAS: the value expected
}

// Output is an operation's answer. Unknown: the client does not know
// whether it took effect (timeout, quorum unavailable after a commit was
// sent).
type Output struct {
	Value   int  // Read: the value
	OK      bool // CAS: swapped
	Unknown bool
}

// Op is one completed (or abandoned) operation of the history.
type Op struct {
	Client       int
	Input        Input
	Output       Output
	Call, Return int64 // simulated ms; Return = -1 for unknown outcomes
}

type event struct {
	at   int64
	kind uint8
	to   int
	from int
	msg  []byte
	f    func()
}

const (
	evDeliver uint8 = iota
	evFunc
)

// Sim is one run.
type Sim struct {
	cfg        Config
	placements [][]int // every placement so far; version v is placements[v-1]
	rng        *rand.Rand
	now        int64
	q          simq.Queue[int64, *event]
	nodes      []*node
	parts      []int // partition group per node; nil: none
	stats      Stats
	hist       []Op
	issued     int
	leaveAt    []int        // the issued-operation counts at which members leave
	leaves     map[int]bool // the placement versions leaves published
	finished   int
	values     int
	early      map[uint64]*request // writes whose commits carry their answer, by id
	reqs       uint64
}

type node struct {
	i       int
	id      replica.NodeID
	rep     *replica.Replica
	clock   *hlc.Clock
	skew    int64
	crashed bool
	paused  bool
	held    []*event // deliveries waiting for a paused node
	acts    map[int]*activation
	view    int // the placement version this node acts on (0: not yet placed)
	syncs   map[int]*replica.Sync
	syncOf  map[int]syncArgs // what each sync of syncs was made from
	repairs map[int]*replica.Repair
	prunes  map[int]*replica.Prune
	diedAt  int64
	leaving bool // announced its leave: serves no activation, answers replica messages
	joining bool // a newcomer whose first syncs are not done (Replica.JoinSettled)
}

// activation is an owner's activation of one key.
type activation struct {
	key     int
	sess    *replica.Session
	ready   bool
	value   int
	pending []*request
	cur     *request
	round   int // bumped per round, for timeouts
}

type request struct {
	in      Input
	client  int
	call    int64
	done    bool
	reply   func(Output, bool) // answer, definite failure
	newVal  int
	started bool // a commit was sent for it
	home    int  // the member the client called from (Config.EarlyAnswers); -1: none
	id      uint64
	read    Output // a read's answer, carried by its confirm (Config.EarlyReads)
}

// New builds a run.
func New(cfg Config) *Sim {
	cfg.defaults()
	s := &Sim{cfg: cfg, leaves: map[int]bool{}, early: map[uint64]*request{}, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}
	var first []int
	for range cfg.Nodes {
		n := s.addNode()
		n.view = 1
		n.rep.Observe(1)
		first = append(first, n.i)
	}
	s.placements = [][]int{first}
	return s
}

// addNode creates a member process (not placed yet).
func (s *Sim) addNode() *node {
	i := len(s.nodes)
	n := &node{i: i, rep: replica.NewReplica(point), acts: map[int]*activation{}, syncs: map[int]*replica.Sync{}, syncOf: map[int]syncArgs{},
		repairs: map[int]*replica.Repair{}, prunes: map[int]*replica.Prune{}}
	binary.BigEndian.PutUint64(n.id[8:], uint64(i+1))
	if s.cfg.Skew > 0 {
		n.skew = s.rng.Int64N(2*s.cfg.Skew.Milliseconds()+1) - s.cfg.Skew.Milliseconds()
	}
	n.clock, _ = hlc.New(hlc.Config{Node: n.id, Physical: func() int64 { return 1_000_000 + s.now + n.skew }})
	s.nodes = append(s.nodes, n)
	if s.cfg.Repair > 0 {
		s.repairTick(n)
	}
	return n
}

// prune drops what n holds of key k, a key it no longer replicates, once
// k's replica set holds it (replica.Prune).
func (s *Sim) prune(n *node, k int, set []int) {
	cands := n.rep.Candidates(kind, []replica.Range{keyRange(k)}, true, 0)
	if len(cands) == 0 || n.prunes[k] != nil {
		return
	}
	var ids []replica.NodeID
	for _, i := range set {
		ids = append(ids, s.nodes[i].id)
	}
	p := replica.NewPrune(kind, []replica.Range{keyRange(k)}, uint64(n.view), 0, ids, cands, n.rep)
	n.prunes[k] = p
	for _, o := range p.Start() {
		s.send(n.i, s.index(o.To), o.Msg)
	}
	s.after(3*roundTimeout, func() {
		if n.prunes[k] == p {
			delete(n.prunes, k)
		}
	})
}

// repairTick runs an anti-entropy pass of n every cfg.Repair (jittered),
// over each key it replicates on its placement and is not syncing, until
// n dies or the workload is over. A pass not done within three round
// timeouts is given up.
func (s *Sim) repairTick(n *node) {
	s.after(s.cfg.Repair/2+s.rng.Int64N(s.cfg.Repair+1), func() {
		if n.crashed || s.over() {
			return
		}
		if !n.paused && n.view > 0 {
			for k := range s.cfg.Keys {
				set := s.replicas(k, n.view)
				if !slices.Contains(set, n.i) {
					s.prune(n, k, set)
					continue
				}
				if n.syncs[k] != nil || n.repairs[k] != nil {
					continue
				}
				var peers []replica.NodeID
				for _, i := range set {
					if i != n.i {
						peers = append(peers, s.nodes[i].id)
					}
				}
				p := replica.NewRepair(kind, []replica.Range{keyRange(k)}, uint64(n.view), 0, peers, n.rep)
				n.repairs[k] = p
				for _, o := range p.Start() {
					s.send(n.i, s.index(o.To), o.Msg)
				}
				s.after(3*roundTimeout, func() {
					if n.repairs[k] == p {
						delete(n.repairs, k)
					}
				})
			}
		}
		s.repairTick(n)
	})
}

// point is an actor's ring point: each key its own range of the ring.
func point(_, key string) uint64 { return uint64(keyIndex(key)) + 1 }

func keyRange(k int) replica.Range { p := uint64(k) + 1; return replica.Range{Start: p - 1, End: p} }

const kind = "register"

// Seed returns the run's seed.
func (s *Sim) Seed() uint64 { return s.cfg.Seed }

// replicas returns key's replica set under placement version v:
// rendezvous hashing over the placed members (dead ones included:
// placement does not follow liveness, only joins and removals).
func (s *Sim) replicas(key, v int) []int { return s.rank(key, s.placements[v-1]) }

// rank returns key's replica set among members.
func (s *Sim) rank(key int, members []int) []int {
	type scored struct {
		i int
		h uint64
	}
	var all []scored
	for _, i := range members {
		h := uint64(key+1)*0x9e3779b97f4a7c15 ^ uint64(i+1)*0xbf58476d1ce4e5b9
		h ^= h >> 31
		h *= 0x94d049bb133111eb
		h ^= h >> 29
		all = append(all, scored{i, h})
	}
	slices.SortFunc(all, func(a, b scored) int {
		if a.h < b.h {
			return -1
		}
		return 1
	})
	n := min(s.cfg.Replicas, len(all))
	out := make([]int, n)
	for j := range n {
		out[j] = all[j].i
	}
	return out
}

func (s *Sim) set(key, self, v int) replica.Set {
	set := replica.Set{Self: s.nodes[self].id, W: s.cfg.W, Version: uint64(v), Spares: s.cfg.Spares}
	for _, i := range s.replicas(key, v) {
		set.Members = append(set.Members, s.nodes[i].id)
	}
	return set
}

func (s *Sim) index(id replica.NodeID) int { return int(binary.BigEndian.Uint64(id[8:])) - 1 }

func (s *Sim) after(d int64, f func()) {
	s.q.Push(s.now+d, &event{at: s.now + d, kind: evFunc, f: f})
}

func (s *Sim) reachable(a, b int) bool {
	return s.parts == nil || s.group(a) == s.group(b)
}

// group is a node's side of the current partition; a node that joined
// during it is on side 0.
func (s *Sim) group(i int) int {
	if i < len(s.parts) {
		return s.parts[i]
	}
	return 0
}

// send puts a message on the wire from a to b.
func (s *Sim) send(from, to int, m *replica.Msg) {
	if s.cfg.NoNewcomerCopies && m.Op == replica.OpSynced && m.Status == replica.StatusJoining && len(m.Records) > 0 {
		c := *m
		c.Records, c.More = nil, false // the old answer: no copies
		m = &c
	}
	b, err := m.Encode()
	if err != nil {
		panic(fmt.Sprintf("sim: encode: %v", err))
	}
	s.stats.Messages++
	if s.nodes[from].crashed || !s.reachable(from, to) || s.rng.Float64() < s.cfg.Loss {
		s.stats.Lost++
		return
	}
	copies := 1
	if s.rng.Float64() < s.cfg.Duplicate {
		copies = 2
		s.stats.Duplicated++
	}
	for range copies {
		lat := int64(latencyMin + s.rng.IntN(latencyMax-latencyMin+1))
		if !s.cfg.Reorder {
			lat = latencyMin + 2
		}
		s.q.Push(s.now+lat, &event{at: s.now + lat, kind: evDeliver, from: from, to: to, msg: b})
	}
}

func (s *Sim) deliver(e *event) {
	n := s.nodes[e.to]
	if n.crashed || !s.reachable(e.from, e.to) {
		s.stats.Lost++
		return
	}
	if n.paused {
		n.held = append(n.held, e)
		return
	}
	m, err := replica.Decode(e.msg)
	if err != nil {
		panic(fmt.Sprintf("sim: decode: %v", err))
	}
	// Every stamp received is observed (SPEC.md: a node's clock never
	// issues a stamp below one it has seen).
	observe(n, m.Ballot)
	observe(n, m.Promised)
	observe(n, m.Accepted)
	observe(n, replica.Ballot(m.Stamp))
	if m.Delta != nil {
		observe(n, replica.Ballot(m.Delta.Stamp))
	}
	if m.Op == replica.OpAck && m.Status == replica.StatusNeedFull && m.Have != nil {
		s.stats.ListedRefusals++
	}
	if s.cfg.Trace != nil && m.Key != "" {
		s.tracef("msg n%d->n%d %s %v op=%d status=%d ballot=%v promised=%v accepted=%v stamp=%v voter=%v", e.from, e.to, m.Kind, m.Key, m.Op, m.Status, m.Ballot, m.Promised, m.Accepted, m.Stamp, m.Voter)
	}
	switch m.Op {
	case replica.OpPrepare, replica.OpCommit, replica.OpFetch, replica.OpConfirm, replica.OpSync:
		r := n.rep.Handle(m, 0)
		if len(m.Answer) == 8 {
			s.answerEarly(m, r)
		}
		s.send(e.to, e.from, r)
	case replica.OpSynced:
		if !m.Brief {
			s.tracef("msg n%d->n%d synced %v status=%d version=%d records=%d more=%v", e.from, e.to, m.Ranges, m.Status, m.Version, len(m.Records), m.More)
		}
		if len(m.Ranges) != 1 {
			return
		}
		k := int(m.Ranges[0].End) - 1
		if p := n.prunes[k]; p != nil {
			p.Step(s.nodes[e.from].id, m)
			if p.Done() {
				delete(n.prunes, k)
				s.stats.Pruned += len(p.Pruned())
			}
		}
		if p := n.repairs[k]; p != nil {
			for _, o := range p.Step(s.nodes[e.from].id, m) {
				s.send(n.i, s.index(o.To), o.Msg)
			}
			if p.Done() {
				delete(n.repairs, k)
				s.stats.Repaired += p.Adopted()
			}
		}
		if y := n.syncs[k]; y != nil {
			for _, o := range y.Step(s.nodes[e.from].id, m) {
				s.send(n.i, s.index(o.To), o.Msg)
			}
			if y.Done() {
				s.synced(n, k)
			}
		}
	default:
		a := n.acts[keyIndex(m.Key)]
		if a == nil || a.sess.Ballot() != m.Ballot {
			return
		}
		s.carry(n, a, a.sess.Step(s.nodes[e.from].id, m))
	}
}

func observe(n *node, b replica.Ballot) {
	if !b.IsZero() {
		_, _ = n.clock.Observe(b)
	}
}

func keyName(k int) string { return fmt.Sprintf("k%d", k) }
func keyIndex(s string) int {
	var k int
	fmt.Sscanf(s, "k%d", &k)
	return k
}

// carry sends a session's requests and acts on the rounds that ended.
func (s *Sim) carry(n *node, a *activation, outs []replica.Out) {
	for _, o := range outs {
		s.send(n.i, s.index(o.To), o.Msg)
	}
	for _, r := range a.sess.Results() {
		s.result(n, a, r)
	}
}

func (s *Sim) startRound(n *node, a *activation, outs []replica.Out) {
	a.round++
	round := a.round
	s.after(roundTimeout, func() {
		if n.crashed || n.acts[a.key] != a || a.round != round {
			return
		}
		if n.paused {
			// A paused node's timers fire after it resumes.
			n.held = append(n.held, &event{kind: evFunc, f: func() {
				if n.acts[a.key] == a && a.round == round {
					a.sess.Expire()
					s.carry(n, a, nil)
				}
			}})
			return
		}
		a.sess.Expire()
		s.carry(n, a, nil)
	})
	s.carry(n, a, outs)
}

// flushLater sends a's skipped spares what they are owed after
// Config.SpareFlush, as casty's runtime does when a round is slow to
// decide or the actor goes quiet; their answers go to the session like
// any other.
func (s *Sim) flushLater(n *node, a *activation) {
	flush := func() {
		if n.crashed || n.acts[a.key] != a {
			return
		}
		out := a.sess.Flush()
		if len(out) > 0 {
			s.stats.SpareFlushes++
		}
		s.carry(n, a, out)
	}
	s.after(s.cfg.SpareFlush, func() {
		if n.paused {
			n.held = append(n.held, &event{kind: evFunc, f: flush})
			return
		}
		flush()
	})
}

func (s *Sim) tracef(format string, args ...any) {
	if s.cfg.Trace != nil {
		s.cfg.Trace(fmt.Sprintf("t=%d ", s.now) + fmt.Sprintf(format, args...))
	}
}

// result acts on an ended round.
func (s *Sim) result(n *node, a *activation, r replica.Result) {
	s.tracef("n%d k%d %v ballot %v: err=%v applied=%v fenced=%v state=%v/%v value=%d", n.i, a.key, r.Round, a.sess.Ballot(), r.Err, r.Applied, r.Fenced, r.State.Accepted, r.State.Stamp, decodeValue(n.rep.Pages(kind, keyName(a.key))))
	observe(n, r.Promised)
	if r.Fenced {
		s.stats.Fenced++
	}
	switch r.Round {
	case replica.RoundPrepare, replica.RoundInstall:
		if r.Err != nil {
			s.discard(n, a, r.Err, false)
			return
		}
		a.ready = true
		a.value = decodeValue(n.rep.Pages(kind, keyName(a.key)))
		s.next(n, a)
	case replica.RoundCommit:
		req := a.cur
		a.cur = nil
		if r.Err != nil {
			if r.Applied {
				req.answer(Output{Unknown: true}, false)
			} else {
				req.answer(Output{}, true)
			}
			s.discard(n, a, r.Err, true)
			return
		}
		a.value = req.newVal
		if req.in.Kind == CAS {
			req.answer(Output{OK: true}, false)
		} else {
			req.answer(Output{}, false)
		}
		if r.Fenced {
			s.discard(n, a, nil, true)
			return
		}
		s.next(n, a)
	case replica.RoundConfirm:
		req := a.cur
		a.cur = nil
		if r.Err != nil {
			req.answer(Output{}, true)
			s.discard(n, a, r.Err, true)
			return
		}
		s.finishRead(req, a.value)
		s.next(n, a)
	}
}

func (s *Sim) finishRead(req *request, v int) {
	if req.in.Kind == Read {
		req.answer(Output{Value: v}, false)
	} else {
		req.answer(Output{OK: false}, false) // CAS whose expectation failed
	}
}

func (r *request) answer(o Output, definiteFailure bool) {
	if r.done {
		return
	}
	r.done = true
	r.reply(o, definiteFailure)
}

// discard ends an activation; its queued requests fail definitely (they
// never ran).
func (s *Sim) discard(n *node, a *activation, err error, _ bool) {
	if n.acts[a.key] != a {
		return
	}
	delete(n.acts, a.key)
	if a.cur != nil {
		// A request whose commit was sent may have taken effect.
		a.cur.answer(Output{Unknown: a.cur.started}, !a.cur.started)
	}
	for _, r := range a.pending {
		r.answer(Output{}, true)
	}
}

// next runs the activation's next request.
func (s *Sim) next(n *node, a *activation) {
	for a.cur == nil && len(a.pending) > 0 && a.ready && !n.crashed {
		req := a.pending[0]
		a.pending = a.pending[1:]
		if req.done {
			continue
		}
		a.cur = req
		switch req.in.Kind {
		case Read:
			s.startRound(n, a, s.confirm(a, req))
			return
		case CAS:
			if a.value != req.in.Expected {
				s.startRound(n, a, s.confirm(a, req))
				return
			}
			fallthrough
		case Write:
			req.newVal = req.in.Value
			req.started = true
			s.tracef("n%d k%d commits %d (c%d)", n.i, a.key, req.newVal, req.client)
			st := a.sess.State()
			d := pager.Delta{Stamp: pager.Stamp(n.clock.Now()), Basis: st.Stamp,
				Pages: []pager.Page{{Key: "V", Data: encodeValue(req.newVal)}}}
			if s.cfg.Ballast {
				d.Pages = append(d.Pages, ballast(req.newVal))
			}
			if req.newVal == 0 && s.cfg.Deletes {
				// Writing 0 deletes the state, as casty's DeleteState does:
				// a full delta with no page, which reads as 0.
				d.Full, d.Pages = true, nil
			}
			if req.home < 0 {
				s.startRound(n, a, a.sess.Commit(d))
				return
			}
			if s.cfg.Spares > 0 {
				// casty says quiet when the actor's last commit is not
				// recent; here one commit in four, at random.
				a.sess.Quiet(s.rng.IntN(4) == 0)
			}
			s.startRound(n, a, s.answering(req, func(home replica.NodeID, answer []byte) []replica.Out {
				return a.sess.CommitAnswering(d, home, answer)
			}))
			if a.sess.Owed() > 0 {
				s.stats.SpareSkips++
				s.flushLater(n, a)
			}
			return
		}
	}
}

// confirm returns the confirm round of a read (or of a CAS whose
// expectation failed): with Config.EarlyReads and a home member, the
// confirm to the home carries the read's answer (ConfirmAnswering).
func (s *Sim) confirm(a *activation, req *request) []replica.Out {
	if !s.cfg.EarlyReads || req.home < 0 {
		return a.sess.Confirm()
	}
	req.read = Output{Value: a.value}
	if req.in.Kind == CAS {
		req.read = Output{OK: false}
	}
	return s.answering(req, a.sess.ConfirmAnswering)
}

// answering returns the messages of req's round, built by build with the
// answer tag for req's home to carry where the rule lets it
// (CommitAnswering, ConfirmAnswering).
func (s *Sim) answering(req *request, build func(home replica.NodeID, answer []byte) []replica.Out) []replica.Out {
	home, answer := s.nodes[req.home].id, binary.BigEndian.AppendUint64(nil, req.id)
	s.early[req.id] = req
	return build(home, answer)
}

// answerEarly answers the request whose commit or confirm m is, when the
// reply of this member's copy decides it (Config.EarlyAnswers,
// Config.EarlyReads).
func (s *Sim) answerEarly(m, reply *replica.Msg) {
	decides := replica.Decides(m, reply)
	req := s.early[binary.BigEndian.Uint64(m.Answer)]
	if !decides || req == nil || req.done {
		return
	}
	s.tracef("k%d: c%d answered early by its home n%d", req.in.Key, req.client, req.home)
	s.stats.EarlyAnswers++
	if m.Op == replica.OpConfirm {
		s.stats.EarlyReads++
		req.answer(req.read, false)
	} else if req.in.Kind == CAS {
		req.answer(Output{OK: true}, false)
	} else {
		req.answer(Output{}, false)
	}
}

// handle is a client request arriving at node i, which takes it as the
// key's owner.
func (s *Sim) handle(i int, req *request) {
	n := s.nodes[i]
	if n.crashed {
		return // the client times out
	}
	if n.paused {
		n.held = append(n.held, &event{kind: evFunc, f: func() { s.handle(i, req) }})
		return
	}
	if n.leaving {
		req.answer(Output{}, true) // refused: the caller retries on the new owner
		return
	}
	a := n.acts[req.in.Key]
	if a == nil {
		ballot := n.clock.Now()
		a = &activation{key: req.in.Key}
		if n.view == 0 || !slices.Contains(s.replicas(req.in.Key, n.view), i) {
			req.answer(Output{}, true) // not a replica of the key on its view: refused
			return
		}
		a.sess = replica.NewSession(kind, keyName(req.in.Key), s.set(req.in.Key, i, n.view), n.rep, ballot)
		n.acts[req.in.Key] = a
		s.stats.Activations++
		s.tracef("n%d k%d activates with ballot %v on v%d set %v", i, req.in.Key, ballot, n.view, s.replicas(req.in.Key, n.view))
		a.pending = append(a.pending, req)
		s.startRound(n, a, a.sess.Open())
		return
	}
	a.pending = append(a.pending, req)
	s.next(n, a)
}

// ballast is the 512-byte page Config.Ballast adds to a commit of v.
func ballast(v int) pager.Page {
	return pager.Page{Key: fmt.Sprintf("B%d", (v%4+4)%4), Data: bytes.Repeat(encodeValue(v), 64)}
}

func encodeValue(v int) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(v))
}

func decodeValue(pages []pager.Page) int {
	for _, p := range pages {
		if p.Key == "V" && len(p.Data) == 8 {
			return int(binary.BigEndian.Uint64(p.Data))
		}
	}
	return 0
}

// client runs operations until the budget is spent.
func (s *Sim) client(c int) {
	if s.issued >= s.cfg.Ops {
		return
	}
	s.issued++
	for len(s.leaveAt) > 0 && s.issued >= s.leaveAt[0] {
		s.leaveAt = s.leaveAt[1:]
		if c := s.leavers(nil); len(c) > 0 {
			s.leave(c[s.rng.IntN(len(c))])
		}
	}
	in := Input{Key: s.rng.IntN(s.cfg.Keys)}
	switch x := s.rng.IntN(10); {
	case x < 4:
		in.Kind = Read
	case x == 6 && s.cfg.Deletes:
		in.Kind = Write // a deletion: Value 0, committed as a full delta
	case x < 7:
		in.Kind = Write
		s.values++
		in.Value = s.values
	default:
		in.Kind = CAS
		in.Expected = s.rng.IntN(s.values + 1)
		s.values++
		in.Value = s.values
	}
	// The node the request reaches: the key's first live replica as a
	// correct view has it, or (divergent views) any replica.
	reps := s.replicas(in.Key, len(s.placements))
	target := -1
	for _, r := range reps {
		if !s.nodes[r].crashed {
			target = r
			break
		}
	}
	if target < 0 || s.rng.Float64() < s.cfg.WrongViews {
		target = reps[s.rng.IntN(len(reps))]
	}
	s.reqs++
	req := &request{in: in, client: c, call: s.now, home: -1, id: s.reqs}
	if s.cfg.EarlyAnswers {
		// Mostly one of the key's replicas, where an early answer can
		// happen; sometimes any member, gone or not.
		req.home = s.rng.IntN(len(s.nodes))
		if s.rng.IntN(4) > 0 {
			req.home = reps[s.rng.IntN(len(reps))]
		}
	}
	s.stats.Ops++
	finish := func(o Output, definiteFailure bool) {
		s.finished++
		switch {
		case definiteFailure:
			s.stats.Failed++
		case o.Unknown:
			s.stats.Indeterminate++
			s.hist = append(s.hist, Op{Client: c, Input: in, Output: o, Call: req.call, Return: -1})
		default:
			s.stats.OK++
			s.hist = append(s.hist, Op{Client: c, Input: in, Output: o, Call: req.call, Return: s.now})
		}
		s.after(int64(1+s.rng.IntN(thinkMax)), func() { s.client(c) })
	}
	req.reply = finish
	s.after(clientWait, func() { req.answer(Output{Unknown: true}, false) })
	s.after(int64(latencyMin), func() { s.handle(target, req) })
}

// faults schedules the configured faults over the run's first stretch.
func (s *Sim) faults(span int64) {
	for range s.cfg.Partitions {
		at, dur := s.rng.Int64N(span), 200+s.rng.Int64N(2000)
		s.after(at, func() {
			g := make([]int, len(s.nodes))
			for i := range g {
				g[i] = s.rng.IntN(2)
			}
			s.parts = g
			s.stats.Faults = append(s.stats.Faults, fmt.Sprintf("t=%d partition %v for %d ms", s.now, g, dur))
			s.after(dur, func() { s.parts = nil })
		})
	}
	for range s.cfg.Pauses {
		at, dur, i := s.rng.Int64N(span), 100+s.rng.Int64N(3000), s.rng.IntN(len(s.nodes))
		s.after(at, func() {
			n := s.nodes[i]
			if n.crashed || n.paused {
				return
			}
			n.paused = true
			s.stats.Faults = append(s.stats.Faults, fmt.Sprintf("t=%d pause n%d for %d ms", s.now, i, dur))
			if s.cfg.LeaveWhilePaused {
				s.leaveBeside(i)
			}
			s.after(dur, func() {
				n.paused = false
				held := n.held
				n.held = nil
				for _, e := range held {
					if e.kind == evDeliver {
						s.deliver(e)
					} else {
						e.f()
					}
				}
			})
		})
	}
	for range s.cfg.Amnesia {
		at, i := s.rng.Int64N(span), s.rng.IntN(len(s.nodes))
		s.after(at, func() {
			n := s.nodes[i]
			if n.crashed {
				return
			}
			n.rep, n.acts, n.paused, n.held = replica.NewReplica(point), map[int]*activation{}, false, nil
			n.repairs, n.prunes = map[int]*replica.Repair{}, map[int]*replica.Prune{}
			n.rep.Observe(uint64(n.view))
			s.stats.Faults = append(s.stats.Faults, fmt.Sprintf("t=%d n%d restarts empty with its old id", s.now, i))
		})
	}
	// Leaves happen while the first half of the workload is issued, so
	// that the handoff and the operations after it run under load.
	for range s.cfg.Leaves {
		s.leaveAt = append(s.leaveAt, s.cfg.Ops/10+s.rng.IntN(s.cfg.Ops/2-s.cfg.Ops/10+1))
	}
	slices.Sort(s.leaveAt)
	for range s.cfg.Restarts {
		at := s.rng.Int64N(span)
		var try func()
		try = func() {
			cur := s.placements[len(s.placements)-1]
			i := cur[s.rng.IntN(len(cur))]
			if !s.cfg.UnguardedKills && !s.tolerable(i) {
				s.after(killRetry, try)
				return
			}
			s.restart(i)
		}
		s.after(at, try)
	}
	crashes := min(s.cfg.Crashes, s.cfg.Replicas-s.cfg.W)
	for range crashes {
		at, i := s.rng.Int64N(span), s.rng.IntN(len(s.nodes))
		var try func()
		try = func() {
			n := s.nodes[i]
			if n.crashed {
				return
			}
			if !s.cfg.UnguardedKills && !s.tolerable(i) {
				s.after(killRetry, try)
				return
			}
			s.kill(n)
			s.stats.Faults = append(s.stats.Faults, fmt.Sprintf("t=%d crash n%d", s.now, i))
		}
		s.after(at, try)
	}
}

// killRetry is how long (simulated ms) a kill waits when it would exceed
// what the protocol promises to survive (tolerable).
const killRetry = 100

// tolerable reports whether member i may die now within the failures a
// write quorum survives: every key it replicates on the latest placement
// has every other member of its set alive, on that placement and synced
// there. A second death in a set before the first was replaced and
// re-synced can take both holders of a write acknowledged by W = 2 of 3
// (replica/sim found one: seed 15606 of the early-answer restarts, two
// holders restarted 1.2 s apart while the third, paused, had missed the
// write) — a double fault, which no quorum of two survives.
func (s *Sim) tolerable(i int) bool {
	v := len(s.placements)
	for k := range s.cfg.Keys {
		set := s.replicas(k, v)
		if !slices.Contains(set, i) {
			continue
		}
		for _, j := range set {
			if n := s.nodes[j]; j != i && (n.crashed || n.view < v || n.syncs[k] != nil) {
				return false
			}
		}
	}
	return true
}

// adopt moves n to placement version v, one after its current one (or,
// for a member that just joined, its first). Ranges it entered are
// unsynced and pulled from their previous replica set; activations whose
// replica set changed end.
func (s *Sim) adopt(n *node, v int) {
	old := n.view
	n.view = v
	n.rep.Observe(uint64(v))
	for k := range s.cfg.Keys {
		now := s.replicas(k, v)
		var before []int
		if old > 0 {
			before = s.replicas(k, old)
		}
		if a := n.acts[k]; a != nil && !slices.Equal(before, now) {
			s.discard(n, a, nil, false)
		}
		if !slices.Contains(now, n.i) || slices.Contains(before, n.i) || v == 1 {
			continue
		}
		if s.cfg.DropOnReentry {
			n.rep.DropRanges(kind, math.MaxInt64, keyRange(k))
		}
		n.rep.Unsync(kind, keyRange(k))
		args := syncArgs{version: v, base: v - 1, skip: []int{n.i}, leave: s.leaves[v]}
		if old, ok := n.syncOf[k]; ok && n.syncs[k] != nil && !s.cfg.ForgetUnfinishedSyncs {
			// Back in a range it left before its sync there was done: the
			// sets that sync had to hear from must still answer (they can
			// hold writes the new base set never saw).
			args.prior = append(slices.Clone(old.prior), old.base)
		}
		if args.leave {
			s.stats.LeaveSyncs++
		}
		y := s.newSync(k, n, args)
		n.syncs[k], n.syncOf[k] = y, args
		s.carrySync(n, k, y, y.Start())
	}
}

// syncArgs is what a sync of one key's range is made from: the placement
// version its requests carry, and the placement whose set for the key is
// the previous set, without the members of skip (the syncing node, and
// with SkipUnsynced the members that answered unsynced).
type syncArgs struct {
	version, base int
	skip          []int
	copies        []int // newcomers left out: asked for their copies only
	prior         []int // bases of unfinished syncs this one replaced: their sets answer too
	leave         bool  // begun on a placement a leave published
	// With Config.UnsyncedWait: since when each member has answered
	// unsynced, and each newcomer in copies was left out.
	unsynced, leftOut map[int]int64
}

// setSince returns m (made if nil) with i's time set to now unless set.
func setSince(m map[int]int64, i int, now int64) map[int]int64 {
	if m == nil {
		m = map[int]int64{}
	}
	if _, ok := m[i]; !ok {
		m[i] = now
	}
	return m
}

// newSync makes n's sync of key k: from k's replica set on placement
// args.base among the members not in args.skip, of which SyncNeed must
// answer.
func (s *Sim) newSync(k int, n *node, args syncArgs) *replica.Sync {
	prev := s.rank(k, slices.DeleteFunc(slices.Clone(s.placements[args.base-1]), func(i int) bool { return slices.Contains(args.skip, i) }))
	var ids []replica.NodeID
	for _, i := range prev {
		ids = append(ids, s.nodes[i].id)
	}
	n.syncOf[k] = args
	groups := []replica.Group{{Members: ids, Need: replica.SyncNeed(len(prev), s.cfg.W)}}
	for _, b := range args.prior {
		pm := s.rank(k, slices.DeleteFunc(slices.Clone(s.placements[b-1]), func(i int) bool { return slices.Contains(args.skip, i) }))
		var pids []replica.NodeID
		for _, i := range pm {
			pids = append(pids, s.nodes[i].id)
		}
		groups = append(groups, replica.Group{Members: pids, Need: replica.SyncNeed(len(pm), s.cfg.W)})
	}
	if len(args.copies) > 0 && !s.cfg.NoNewcomerCopies {
		var cs []replica.NodeID
		for _, i := range args.copies {
			// A newcomer removed since (it died) can no longer answer.
			if slices.Contains(s.placements[args.version-1], i) {
				cs = append(cs, s.nodes[i].id)
			}
		}
		if len(cs) > 0 {
			groups = append(groups, replica.Group{Members: cs, Need: len(cs), Copies: true})
		}
	}
	return replica.NewJointSync(kind, []replica.Range{keyRange(k)}, uint64(args.version), 0, groups, n.rep, 0)
}

// synced ends n's finished sync of key k.
func (s *Sim) synced(n *node, k int) {
	if n.syncOf[k].leave {
		s.stats.LeaveSynced++
	}
	delete(n.syncs, k)
	delete(n.syncOf, k)
	s.stats.Syncs++
	s.settleJoin(n)
}

// settleJoin tells a newcomer's replica its first syncs are done, as
// casty does (replicator.syncDone): from then on it answers unsynced, not
// joining, and is no longer left out of others' syncs.
func (s *Sim) settleJoin(n *node) {
	if n.joining && len(n.syncs) == 0 {
		n.joining = false
		n.rep.JoinSettled()
	}
}

// retrySync asks again the members that have not answered k's sync in
// full. A node that adopted a newer placement since the sync began starts
// it over on that placement, from the same previous set, as casty's
// runSync does: members that adopted it refuse the older version
// (behind), so the sync could otherwise never finish. With SkipUnsynced,
// members that answered unsynced are left out of the previous set from
// then on, and the sync starts over from the set without them.
func (s *Sim) retrySync(n *node, k int, y *replica.Sync) {
	args := n.syncOf[k]
	again := args.version < n.view
	args.version = max(args.version, n.view)
	if s.cfg.SkipUnsynced {
		for _, id := range y.Joining() {
			if i := s.index(id); !slices.Contains(args.skip, i) {
				args.skip = append(slices.Clone(args.skip), i)
				args.copies = append(slices.Clone(args.copies), i)
				args.leftOut = setSince(args.leftOut, i, s.now)
				again = true
				s.tracef("n%d k%d sync leaves out n%d (joining)", n.i, k, i)
			}
		}
	}
	if w := s.cfg.UnsyncedWait; w > 0 {
		for _, id := range y.Unsynced() {
			i := s.index(id)
			if slices.Contains(args.skip, i) {
				continue
			}
			if since, ok := args.unsynced[i]; !ok {
				args.unsynced = setSince(args.unsynced, i, s.now)
			} else if s.now-since > w {
				args.skip = append(slices.Clone(args.skip), i)
				again = true
				s.stats.WaitsCut++
				s.tracef("n%d k%d sync leaves out n%d (unsynced for %d ms)", n.i, k, i, s.now-since)
			}
		}
	}
	if w := s.cfg.CopiesWait; w > 0 {
		if kept := slices.DeleteFunc(slices.Clone(args.copies), func(i int) bool { return s.now-args.leftOut[i] > w }); len(kept) < len(args.copies) {
			s.tracef("n%d k%d sync stops waiting for the copies of %v", n.i, k, args.copies)
			s.stats.WaitsCut += len(args.copies) - len(kept)
			args.copies = kept
			again = true
		}
	}
	n.syncOf[k] = args
	if again {
		y = s.newSync(k, n, args)
		n.syncs[k] = y
		s.carrySync(n, k, y, y.Start())
		return
	}
	s.carrySync(n, k, y, y.Retry())
}

// carrySync sends a sync's requests and retries it until it is done, or
// until the workload is over.
func (s *Sim) carrySync(n *node, k int, y *replica.Sync, outs []replica.Out) {
	for _, o := range outs {
		s.send(n.i, s.index(o.To), o.Msg)
	}
	if y.Done() {
		s.synced(n, k)
		return
	}
	s.after(roundTimeout, func() {
		if n.crashed || n.syncs[k] != y || y.Done() || s.over() {
			return
		}
		if n.paused {
			n.held = append(n.held, &event{kind: evFunc, f: func() {
				if n.syncs[k] == y {
					s.retrySync(n, k, y)
				}
			}})
			return
		}
		s.retrySync(n, k, y)
	})
}

// publish makes a new placement version and lets every live node learn
// it within ViewLag, in version order.
func (s *Sim) publish(p []int) int {
	s.placements = append(s.placements, p)
	v := len(s.placements)
	for _, n := range s.nodes {
		if n.crashed || n.view == 0 {
			continue
		}
		nn := n
		s.after(s.rng.Int64N(s.cfg.ViewLag+1), func() { s.catchUp(nn, v) })
	}
	return v
}

func (s *Sim) catchUp(n *node, v int) {
	if n.crashed {
		return
	}
	if n.paused {
		n.held = append(n.held, &event{kind: evFunc, f: func() { s.catchUp(n, v) }})
		return
	}
	for n.view < v {
		s.adopt(n, n.view+1)
	}
}

// restart kills member i and starts a new member (new id, empty) that
// joins the placement.
func (s *Sim) restart(i int) {
	old := s.nodes[i]
	if old.crashed {
		return
	}
	s.kill(old)
	s.after(50+s.rng.Int64N(500), func() {
		n := s.addNode()
		n.rep.Joined()
		n.joining = true
		cur := s.placements[len(s.placements)-1]
		v := s.publish(append(slices.Clone(cur), n.i))
		s.stats.Joins++
		s.stats.Faults = append(s.stats.Faults, fmt.Sprintf("t=%d n%d restarts as n%d (placement v%d)", s.now, i, n.i, v))
		s.adopt(n, v)
		s.settleJoin(n)
	})
}

func (s *Sim) kill(n *node) {
	n.crashed, n.paused, n.held, n.diedAt = true, false, nil, s.now
	n.acts = map[int]*activation{}
	n.syncs, n.syncOf = map[int]*replica.Sync{}, map[int]syncArgs{}
	n.repairs, n.prunes = map[int]*replica.Repair{}, map[int]*replica.Prune{}
}

// leavers lists the members that may leave now: placed, alive, not
// paused, and (when ok is given) accepted by it; none when a leave would
// leave the placement fewer than Replicas members.
func (s *Sim) leavers(ok func(int) bool) []int {
	cur := s.placements[len(s.placements)-1]
	if len(cur)-1 < s.cfg.Replicas {
		return nil
	}
	var out []int
	for _, i := range cur {
		if n := s.nodes[i]; !n.crashed && !n.paused && (ok == nil || ok(i)) {
			out = append(out, i)
		}
	}
	return out
}

// leaveBeside makes a member that shares a key's replica set with member
// p (just paused) leave, so that its handoff waits for p.
func (s *Sim) leaveBeside(p int) {
	v := len(s.placements)
	c := s.leavers(func(i int) bool {
		for k := range s.cfg.Keys {
			if set := s.replicas(k, v); slices.Contains(set, i) && slices.Contains(set, p) {
				return true
			}
		}
		return false
	})
	if len(c) > 0 {
		s.leave(c[s.rng.IntN(len(c))])
	}
}

// leave makes member i leave gracefully, as casty's Close does
// (casty/handoff.go): from now on it serves no activation (its requests
// are refused, and clients go to the new owners), its removal is
// published (its LEFT record), and it hands off: it keeps answering
// replica messages, as a member that adopts its own removal does — owners
// still on the old placement are refused by the version fence, syncs of
// the members taking its ranges over are answered — until they have taken
// over or HandoffTimeout passes.
func (s *Sim) leave(i int) {
	n := s.nodes[i]
	n.leaving = true
	for k := range s.cfg.Keys {
		if a := n.acts[k]; a != nil {
			s.discard(n, a, nil, false)
		}
	}
	var peers []int
	cur := s.placements[len(s.placements)-1]
	for _, j := range cur {
		if j != i && !s.nodes[j].crashed {
			peers = append(peers, j)
		}
	}
	v := s.publish(slices.DeleteFunc(slices.Clone(cur), func(x int) bool { return x == i }))
	s.leaves[v] = true
	s.stats.Leaves++
	s.stats.Faults = append(s.stats.Faults, fmt.Sprintf("t=%d n%d leaves (placement v%d)", s.now, i, v))
	if s.cfg.HandoffTimeout < 0 {
		s.kill(n)
		return
	}
	s.handoff(n, v, peers, s.now+s.cfg.HandoffTimeout)
}

// handoff keeps leaver n in the network until every member of peers that
// is still there has adopted placement v (the first without n) and has no
// sync in flight (casty's takenOver), or until deadline. A crashed or
// unreachable peer is not waited for (casty's handoff gives up on a
// member it cannot connect to); a paused one is, as a stopped process
// does not answer. The leaver's own timer waits while it is paused.
func (s *Sim) handoff(n *node, v int, peers []int, deadline int64) {
	if n.crashed || s.over() {
		return
	}
	if n.paused {
		n.held = append(n.held, &event{kind: evFunc, f: func() { s.handoff(n, v, peers, deadline) }})
		return
	}
	peers = slices.DeleteFunc(peers, func(j int) bool {
		p := s.nodes[j]
		return p.crashed || !s.reachable(n.i, j) || !p.paused && p.view >= v && len(p.syncs) == 0
	})
	switch {
	case len(peers) == 0:
		s.stats.HandedOff++
		s.stats.Faults = append(s.stats.Faults, fmt.Sprintf("t=%d n%d handed off and is gone", s.now, n.i))
		s.kill(n)
	case s.now >= deadline:
		s.stats.HandoffsCut++
		s.stats.Faults = append(s.stats.Faults, fmt.Sprintf("t=%d n%d is gone, its handoff cut short (waiting for %v)", s.now, n.i, peers))
		s.kill(n)
	default:
		s.after(min(handoffPoll, deadline-s.now), func() { s.handoff(n, v, peers, deadline) })
	}
}

// removeDead removes one member dead for RemoveAfter, when a majority of
// the current placement is alive (the minority side of a partition never
// removes anyone).
func (s *Sim) removeDead() {
	cur := s.placements[len(s.placements)-1]
	alive := 0
	for _, i := range cur {
		if !s.nodes[i].crashed {
			alive++
		}
	}
	if alive*2 > len(cur) {
		for _, i := range cur {
			if n := s.nodes[i]; n.crashed && s.now-n.diedAt >= s.cfg.RemoveAfter {
				v := s.publish(slices.DeleteFunc(slices.Clone(cur), func(x int) bool { return x == i }))
				s.stats.Removals++
				s.stats.Faults = append(s.stats.Faults, fmt.Sprintf("t=%d n%d removed (placement v%d)", s.now, i, v))
				break
			}
		}
	}
	if s.issued < s.cfg.Ops {
		s.after(500, s.removeDead)
	}
}

// over reports whether every client has finished.
func (s *Sim) over() bool { return s.issued >= s.cfg.Ops && s.finished >= s.cfg.Ops }

// Run runs the simulation to its end and returns its history.
func (s *Sim) Run() ([]Op, Stats) {
	span := int64(s.cfg.Ops) * 15
	s.faults(span)
	s.after(500, s.removeDead)
	for c := range s.cfg.Clients {
		s.after(int64(c), func() { s.client(c) })
	}
	for s.q.Len() > 0 {
		_, e, _ := s.q.Pop()
		if e.at > horizon {
			break
		}
		s.now = e.at
		if e.kind == evDeliver {
			s.deliver(e)
		} else {
			e.f()
		}
	}
	s.stats.Diverged = s.diverged()
	return s.hist, s.stats
}

// diverged returns the copies of a key that hold the stamp of another copy
// of it, on any node, with other pages (Stats.Diverged).
func (s *Sim) diverged() []string {
	var out []string
	for k := range s.cfg.Keys {
		seen := map[pager.Stamp]int{} // stamp -> the first node holding it
		for _, n := range s.nodes {
			st, ok := n.rep.Get(kind, keyName(k))
			if !ok || st.Stamp.IsZero() {
				continue
			}
			first, held := seen[st.Stamp]
			if !held {
				seen[st.Stamp] = n.i
				continue
			}
			if !slices.EqualFunc(n.rep.Pages(kind, keyName(k)), s.nodes[first].rep.Pages(kind, keyName(k)), func(a, b pager.Page) bool {
				return a.Key == b.Key && a.Stamp == b.Stamp && bytes.Equal(a.Data, b.Data)
			}) {
				out = append(out, fmt.Sprintf("key %d at %v: node %d and node %d hold other pages", k, st.Stamp, first, n.i))
			}
		}
	}
	return out
}
