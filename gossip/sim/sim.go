// Package sim is a deterministic discrete-event simulator for the gossip
// membership cores. It runs N gossip/internal/core Node state machines over a simulated
// network with per-message latency, loss, duplication, reordering, slow
// links, partitions, crashes, restarts, pauses and per-node clock skew.
// Everything random comes from one seed: a run with the same Config and the
// same sequence of calls is identical, so a failing test prints its seed
// and replays.
//
// The simulator is single-threaded and starts no goroutine. Messages go
// through the real wire encoding (core.EncodeMessage / DecodeMessage), so
// byte counts are the bytes a real transport would carry (before framing).
//
// Link failures are modelled the way the runtime reports them: a monitored
// link (a core.LinkOp Open) to a crashed, partitioned or paused node is
// reported down DetectDelay later (keepalive failure or connection reset); a
// message to an unreachable node makes its sender see the link fail after
// DetectDelay (dial failure); a link whose added delay exceeds
// KeepaliveTimeout fails its keepalive.
package sim

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/casty-go/casty/gossip"
	"github.com/casty-go/casty/gossip/internal/core"
	"github.com/casty-go/casty/internal/simq"
)

// Config describes a simulated network.
type Config struct {
	// Seed makes the run reproducible. Printed by failing tests.
	Seed uint64
	// Gossip is the membership configuration every node uses (copied; its
	// Seeds and Rand are set per node). Nil means gossip.DefaultConfig().
	Gossip *gossip.Config
	// LatencyMin and LatencyMax bound the uniform one-way latency of a
	// message. Defaults 1 ms and 5 ms.
	LatencyMin, LatencyMax time.Duration
	// Loss is the probability a message is silently lost. Default 0.
	Loss float64
	// Duplicate is the probability a message is delivered twice. Default 0.
	Duplicate float64
	// Reorder lets messages on the same link overtake each other (each
	// message draws its own latency). False means per-link FIFO, like TCP.
	Reorder bool
	// SlowLinks is the fraction of node pairs whose messages get an extra
	// delay drawn uniformly from [0, SlowDelay] (re-drawn every SlowEpoch).
	SlowLinks float64
	// SlowDelay bounds the extra delay of a slow link. Default 2 s.
	SlowDelay time.Duration
	// SlowEpoch is how long a pair stays slow or fast. Default 60 s.
	SlowEpoch time.Duration
	// DetectDelay is how long after a link breaks (crash, partition, pause)
	// its ends are told (keepalive failure / reset). Default 1 s.
	DetectDelay time.Duration
	// KeepaliveTimeout: a monitored link whose current extra delay exceeds
	// it fails its keepalive (both ends are told after DetectDelay).
	// Default 1 s.
	KeepaliveTimeout time.Duration
	// ClockSkew bounds each node's clock offset, drawn uniformly in
	// [-ClockSkew, +ClockSkew] at every boot (the cores only compare their
	// own readings, so skew must not matter; this checks it). Default 0.
	ClockSkew time.Duration
	// Poll is how often (simulated) RunUntil evaluates its condition, which
	// bounds the resolution of measured latencies. Default 1 ms.
	Poll time.Duration
	// OnEvent, if set, sees every member event of every node.
	OnEvent func(at time.Duration, node int, ev gossip.Event)
	// Trace, if set, sees every message delivered to a running node.
	Trace func(at time.Duration, from, to int, m *core.Message)
	// Answer, if set, is a host outside the cluster (a forger) reached at
	// every address no node has: it sees each message sent there and may
	// return a reply, delivered to the sender one round trip later over a
	// connection whose peer is that address. Nil: such sends are lost.
	Answer func(to gossip.Peer, m *core.Message) *core.Message
	// AnswerClientOnly marks Answer's replies as arriving over connections
	// that proved only the client credential (core.Message.ClientOnly): the
	// forger holds a lite client's secret, not the member one.
	AnswerClientOnly bool
}

func (c *Config) defaults() {
	if c.Gossip == nil {
		c.Gossip = gossip.DefaultConfig()
	}
	if c.LatencyMin == 0 {
		c.LatencyMin = time.Millisecond
	}
	if c.LatencyMax == 0 {
		c.LatencyMax = 5 * time.Millisecond
	}
	if c.SlowDelay == 0 {
		c.SlowDelay = 2 * time.Second
	}
	if c.SlowEpoch == 0 {
		c.SlowEpoch = 60 * time.Second
	}
	if c.Poll == 0 {
		c.Poll = time.Millisecond
	}
	if c.DetectDelay == 0 {
		c.DetectDelay = time.Second
	}
	if c.KeepaliveTimeout == 0 {
		c.KeepaliveTimeout = time.Second
	}
}

// State is a simulated node's condition.
type State uint8

// Node states.
const (
	Running State = iota
	Paused
	Crashed
	Departed // left gracefully
)

type evKind uint8

const (
	evDeliver evKind = iota
	evTick
	evLinkDown
	evResume
	evPauseCheck
	evEpoch
)

type event struct {
	at   time.Duration
	kind evKind
	node int
	from int
	data []byte
	via  string // Inject: the connection the frame came over
	cli  bool   // Inject, Answer: that connection proved only the client credential
	addr string
	gen  uint64
	why  gossip.LinkFailure
}

type simNode struct {
	idx     int
	peer    gossip.Peer
	node    *core.Node
	state   State
	life    uint64 // bumped on crash/restart: stale events are ignored
	tickAt  time.Duration
	links   map[int]uint64 // monitored peers -> link generation
	buffer  []*event       // deliveries held while paused
	lastArr map[int]time.Duration
	failing map[int]bool  // a send-failure notice is pending
	skew    time.Duration // this node's clock offset
}

// Stats are message counters over the whole run (or since ResetStats).
type Stats struct {
	Msgs, Bytes        uint64               // messages sent and their encoded bytes
	ByKind             map[core.Kind]uint64 // messages sent per kind
	BytesByKind        map[core.Kind]uint64 // bytes sent per kind
	PayloadDeliveries  uint64               // Gossip messages received by running nodes
	LinkDowns          uint64               // link failures reported to running nodes
	Suspicions, Deaths uint64               // EventSuspect / EventDead events emitted
	FalseDeaths        uint64               // EventDead about a node that was Running or Paused
	Since              time.Duration        // simulated time of the last ResetStats
	DecodeErrors       uint64               // frames the decoder rejected (always 0 unless a bug)
}

// Sim is one simulated cluster.
type Sim struct {
	cfg     Config
	rng     *rand.Rand
	now     time.Duration
	epoch   time.Time
	q       simq.Queue[time.Duration, *event]
	nodes   []*simNode
	byAddr  map[string]int
	gen     uint64
	groups  map[int]int  // partition group per node (absent: group 0)
	bridges map[int]bool // nodes that reach every group (Bridge)
	stats   Stats
	salt    uint64
	epoch0  bool   // an evEpoch is queued
	renamed uint32 // ids drawn by Replace
}

// New returns an empty simulated network.
func New(cfg Config) *Sim {
	cfg.defaults()
	s := &Sim{
		cfg:    cfg,
		rng:    rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		epoch:  time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		byAddr: map[string]int{},
		groups: map[int]int{}, bridges: map[int]bool{},
	}
	s.salt = s.rng.Uint64()
	s.ResetStats()
	return s
}

// Seed returns the run's seed.
func (s *Sim) Seed() uint64 { return s.cfg.Seed }

// Now returns the simulated time since the start.
func (s *Sim) Now() time.Duration { return s.now }

// clock is node sn's wall clock: simulated time plus the node's skew.
func (s *Sim) clock(sn *simNode) time.Time { return s.epoch.Add(s.now + sn.skew) }

// Len returns the number of nodes ever added.
func (s *Sim) Len() int { return len(s.nodes) }

// Node returns node i's state machine (the current life's).
func (s *Sim) Node(i int) *core.Node { return s.nodes[i].node }

// ID returns node i's id (the current one, after a Replace).
func (s *Sim) ID(i int) gossip.NodeID { return s.nodes[i].peer.ID }

// Index returns the node index of id (-1 if unknown).
func (s *Sim) Index(id gossip.NodeID) int {
	for i, n := range s.nodes {
		if n.peer.ID == id {
			return i
		}
	}
	return -1
}

// State returns node i's state.
func (s *Sim) State(i int) State { return s.nodes[i].state }

// Stats returns the counters.
func (s *Sim) Stats() Stats { return s.stats }

// ResetStats zeroes the counters (to measure a steady-state window).
func (s *Sim) ResetStats() {
	s.stats = Stats{ByKind: map[core.Kind]uint64{}, BytesByKind: map[core.Kind]uint64{}, Since: s.now}
}

func (s *Sim) push(e *event) { s.q.Push(e.at, e) }

func (s *Sim) nodeConfig(i int, seeds []string) *gossip.Config {
	c := *s.cfg.Gossip
	c.Seeds = seeds
	c.Rand = rand.New(rand.NewPCG(s.cfg.Seed+uint64(i)*7919, s.rng.Uint64()))
	c.Logger = nil
	if s.cfg.Gossip.Logger != nil {
		c.Logger = s.cfg.Gossip.Logger
	}
	return &c
}

// AddNode creates node i = Len() and starts it; it joins through a random
// running node (none: it starts the cluster).
func (s *Sim) AddNode() int { return s.add(gossip.RoleMember) }

// AddClient is AddNode for a lite client (gossip.RoleClient): it takes
// part in the overlay and the broadcasts, and members hold its record as a
// client's.
func (s *Sim) AddClient() int { return s.add(gossip.RoleClient) }

func (s *Sim) add(role gossip.Role) int {
	i := len(s.nodes)
	var id gossip.NodeID
	binary.BigEndian.PutUint32(id[:4], uint32(i+1))
	binary.BigEndian.PutUint64(id[8:], s.salt)
	p := gossip.Peer{ID: id, Addr: fmt.Sprintf("n%d:7000", i), Role: role}
	sn := &simNode{idx: i, peer: p}
	s.nodes = append(s.nodes, sn)
	s.byAddr[p.Addr] = i
	s.boot(sn)
	return i
}

func (s *Sim) boot(sn *simNode) {
	var seeds []string
	if r := s.randomRunning(sn.idx); r >= 0 {
		seeds = []string{s.nodes[r].peer.Addr}
	}
	n, err := core.NewNode(sn.peer, (*core.Config)(s.nodeConfig(sn.idx, seeds)))
	if err != nil {
		panic(err)
	}
	sn.node = n
	sn.state = Running
	sn.life++
	sn.tickAt = 0
	sn.links = map[int]uint64{}
	sn.lastArr = map[int]time.Duration{}
	sn.failing = map[int]bool{}
	sn.buffer = nil
	if s.cfg.ClockSkew > 0 {
		sn.skew = time.Duration(s.rng.Int64N(int64(2*s.cfg.ClockSkew)+1)) - s.cfg.ClockSkew
	}
	s.apply(sn, n.Start(s.clock(sn)))
}

func (s *Sim) randomRunning(not int) int {
	var c []int
	for _, n := range s.nodes {
		if n.idx != not && n.state == Running {
			c = append(c, n.idx)
		}
	}
	if len(c) == 0 {
		return -1
	}
	return c[s.rng.IntN(len(c))]
}

// Running returns the indexes of running (not paused) nodes.
func (s *Sim) Running() []int {
	var out []int
	for _, n := range s.nodes {
		if n.state == Running {
			out = append(out, n.idx)
		}
	}
	return out
}

// Live returns the indexes of running or paused nodes.
func (s *Sim) Live() []int {
	var out []int
	for _, n := range s.nodes {
		if n.state == Running || n.state == Paused {
			out = append(out, n.idx)
		}
	}
	return out
}

// reachable reports whether a message from a to b gets through the
// topology (ignoring loss).
func (s *Sim) reachable(a, b int) bool {
	nb := s.nodes[b]
	if nb.state == Crashed || nb.state == Departed {
		return false
	}
	return !s.apart(a, b)
}

// apart reports whether a partition separates a and b: they are in
// different groups and neither is a bridge.
func (s *Sim) apart(a, b int) bool {
	return s.groups[a] != s.groups[b] && !s.bridges[a] && !s.bridges[b]
}

// slowDelay returns the pair's current extra delay (0 for fast pairs).
func (s *Sim) slowDelay(a, b int) time.Duration {
	if s.cfg.SlowLinks <= 0 {
		return 0
	}
	if a > b {
		a, b = b, a
	}
	ep := uint64(s.now / s.cfg.SlowEpoch)
	h := mix(s.salt ^ uint64(a)<<32 ^ uint64(b) ^ ep*0x9e3779b97f4a7c15)
	if float64(h>>11)/float64(1<<53) >= s.cfg.SlowLinks {
		return 0
	}
	return time.Duration(mix(h) % uint64(s.cfg.SlowDelay+1))
}

func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func (s *Sim) latency() time.Duration {
	d := s.cfg.LatencyMax - s.cfg.LatencyMin
	if d <= 0 {
		return s.cfg.LatencyMin
	}
	return s.cfg.LatencyMin + time.Duration(s.rng.Int64N(int64(d)+1))
}

// apply carries out a node's output.
func (s *Sim) apply(sn *simNode, out core.Output) {
	for _, ev := range out.Events {
		switch ev.Kind {
		case gossip.EventSuspect:
			s.stats.Suspicions++
		case gossip.EventDead:
			s.stats.Deaths++
			if j := s.Index(ev.Member.ID); j >= 0 && (s.nodes[j].state == Running || s.nodes[j].state == Paused) {
				s.stats.FalseDeaths++
			}
		}
		if s.cfg.OnEvent != nil {
			s.cfg.OnEvent(s.now, sn.idx, ev)
		}
	}
	for _, op := range out.Links {
		j, ok := s.byAddr[op.Peer.Addr]
		if !ok {
			continue
		}
		if !op.Open {
			delete(sn.links, j)
			continue
		}
		if _, ok := sn.links[j]; ok {
			continue
		}
		s.gen++
		sn.links[j] = s.gen
		if !s.reachable(sn.idx, j) || s.slowDelay(sn.idx, j) > s.cfg.KeepaliveTimeout {
			s.push(&event{at: s.now + s.cfg.DetectDelay, kind: evLinkDown, node: sn.idx, from: j, gen: s.gen, why: gossip.KeepaliveFailed, data: lifeTag(sn.life)})
		}
	}
	for _, snd := range out.Sends {
		s.send(sn, snd)
	}
	if !out.Next.IsZero() {
		at := out.Next.Sub(s.epoch) - sn.skew
		if at < s.now {
			at = s.now
		}
		if sn.tickAt == 0 || at < sn.tickAt {
			sn.tickAt = at
			s.push(&event{at: at, kind: evTick, node: sn.idx, data: lifeTag(sn.life)})
		}
	}
}

func lifeTag(life uint64) []byte { return binary.BigEndian.AppendUint64(nil, life) }

func (s *Sim) send(sn *simNode, snd core.Send) {
	b := core.EncodeMessage(snd.Msg)
	s.stats.Msgs++
	s.stats.Bytes += uint64(len(b))
	s.stats.ByKind[snd.Msg.Kind]++
	s.stats.BytesByKind[snd.Msg.Kind] += uint64(len(b))
	j, ok := s.byAddr[snd.To.Addr]
	if !ok && s.cfg.Answer != nil {
		if r := s.cfg.Answer(snd.To, snd.Msg); r != nil {
			s.push(&event{at: s.now + s.latency() + s.latency(), kind: evDeliver, node: sn.idx, from: -1, via: snd.To.Addr, cli: s.cfg.AnswerClientOnly, data: core.EncodeMessage(r)})
		}
		return
	}
	if !ok || !s.reachable(sn.idx, j) {
		if ok && !sn.failing[j] {
			sn.failing[j] = true
			// a departed node closed its listener: the dial is refused
			// within a round trip; otherwise it times out
			d := s.cfg.DetectDelay
			if s.nodes[j].state == Departed && !s.apart(sn.idx, j) {
				d = 2 * s.latency()
			}
			s.push(&event{at: s.now + d, kind: evLinkDown, node: sn.idx, from: j, why: gossip.LinkLost, data: lifeTag(sn.life)})
		}
		return
	}
	if s.cfg.Loss > 0 && s.rng.Float64() < s.cfg.Loss {
		return
	}
	copies := 1
	if s.cfg.Duplicate > 0 && s.rng.Float64() < s.cfg.Duplicate {
		copies = 2
	}
	for range copies {
		at := s.now + s.latency() + s.slowDelay(sn.idx, j)
		if !s.cfg.Reorder {
			if last := sn.lastArr[j]; at < last {
				at = last
			}
			sn.lastArr[j] = at
		}
		s.push(&event{at: at, kind: evDeliver, node: j, from: sn.idx, data: b})
	}
}

// Inject delivers m to node i one LatencyMin from now, as if some peer had
// sent it: m.From is whatever the caller wrote, like a forger on the network
// would. The frame goes through the wire codec; Config.Trace sees from = -1.
func (s *Sim) Inject(i int, m *core.Message) { s.InjectVia(i, Forger.Addr, m) }

// InjectVia is Inject over a connection whose peer the transport knows as
// via (core.Message.Via): a forger holding several connections.
func (s *Sim) InjectVia(i int, via string, m *core.Message) {
	s.push(&event{at: s.now + s.cfg.LatencyMin, kind: evDeliver, node: i, from: -1, via: via, data: core.EncodeMessage(m)})
}

// InjectClientVia is InjectVia over a connection that proved only the
// client credential (core.Message.ClientOnly): a forger holding a lite
// client's secret.
func (s *Sim) InjectClientVia(i int, via string, m *core.Message) {
	s.push(&event{at: s.now + s.cfg.LatencyMin, kind: evDeliver, node: i, from: -1, via: via, cli: true, data: core.EncodeMessage(m)})
}

// Run advances the simulation by d.
func (s *Sim) Run(d time.Duration) { s.RunUntil(s.now+d, nil) }

// RunUntil processes events until cond holds (checked after every event
// batch at one instant) or simulated time reaches deadline (absolute, since
// start). It reports whether cond held.
func (s *Sim) RunUntil(deadline time.Duration, cond func() bool) bool {
	var nextCheck time.Duration
	if s.cfg.SlowLinks > 0 && !s.epoch0 {
		s.epoch0 = true
		s.push(&event{at: (s.now/s.cfg.SlowEpoch + 1) * s.cfg.SlowEpoch, kind: evEpoch})
	}
	dirty := false // events ran since cond was last evaluated
	for {
		if cond != nil && s.now >= nextCheck {
			if cond() {
				return true
			}
			nextCheck = s.now + s.cfg.Poll
			dirty = false
		}
		next, ok := s.q.Next()
		if cond != nil && dirty && nextCheck <= deadline && (!ok || next > nextCheck) {
			// nothing happens before the poller's next look: it sees
			// the state the last events left, at nextCheck
			s.now = nextCheck
			continue
		}
		if !ok || next > deadline {
			s.now = max(s.now, deadline)
			return cond != nil && cond()
		}
		for at, ok := s.q.Next(); ok && at == next; at, ok = s.q.Next() {
			_, e, _ := s.q.Pop()
			s.now = e.at
			s.handle(e)
		}
		dirty = true
	}
}

func (s *Sim) handle(e *event) {
	sn := s.nodes[e.node]
	switch e.kind {
	case evDeliver:
		switch sn.state {
		case Paused:
			sn.buffer = append(sn.buffer, e)
			return
		case Running:
		default:
			return
		}
		m, err := core.DecodeMessage(e.data)
		if err != nil {
			s.stats.DecodeErrors++
			return
		}
		if m.Kind == core.KindGossip {
			s.stats.PayloadDeliveries++
		}
		if e.from >= 0 {
			m.Via = s.nodes[e.from].peer.Addr // the connection it came over
		} else {
			m.Via, m.ClientOnly = e.via, e.cli
		}
		if s.cfg.Trace != nil {
			s.cfg.Trace(s.now, e.from, e.node, m)
		}
		s.apply(sn, sn.node.Step(s.clock(sn), m))
	case evTick:
		if sn.state != Running || binary.BigEndian.Uint64(e.data) != sn.life || e.at != sn.tickAt {
			return
		}
		sn.tickAt = 0
		s.apply(sn, sn.node.Tick(s.clock(sn)))
	case evLinkDown:
		if binary.BigEndian.Uint64(e.data) != sn.life {
			return
		}
		switch sn.state {
		case Paused:
			sn.buffer = append(sn.buffer, e)
			return
		case Running:
		default:
			return
		}
		if e.gen != 0 {
			if g, ok := sn.links[e.from]; !ok || g != e.gen {
				return // the link was closed or re-opened since
			}
			delete(sn.links, e.from)
		} else {
			delete(sn.failing, e.from)
		}
		s.stats.LinkDowns++
		s.apply(sn, sn.node.LinkDown(s.clock(sn), s.nodes[e.from].peer.Addr, e.why))
	case evPauseCheck:
		if sn.state != Paused || binary.BigEndian.Uint64(e.data) != sn.life {
			return
		}
		// keepalives to and from the paused node have failed: every
		// monitored link touching it breaks, on both sides
		for _, o := range s.nodes {
			if g, ok := o.links[sn.idx]; ok && o.idx != sn.idx {
				s.push(&event{at: s.now, kind: evLinkDown, node: o.idx, from: sn.idx, gen: g, why: gossip.KeepaliveFailed, data: lifeTag(o.life)})
			}
		}
		for _, j := range sortedKeys(sn.links) {
			s.push(&event{at: s.now, kind: evLinkDown, node: sn.idx, from: j, gen: sn.links[j], why: gossip.KeepaliveFailed, data: lifeTag(sn.life)})
		}
	case evEpoch:
		// a new slowness draw: monitored links that became too slow for
		// their keepalive fail
		s.epoch0 = false
		if s.cfg.SlowLinks <= 0 {
			return
		}
		for _, o := range s.nodes {
			if o.state != Running && o.state != Paused {
				continue
			}
			for _, j := range sortedKeys(o.links) {
				if s.slowDelay(o.idx, j) > s.cfg.KeepaliveTimeout {
					s.push(&event{at: s.now + s.cfg.DetectDelay, kind: evLinkDown, node: o.idx, from: j, gen: o.links[j], why: gossip.KeepaliveFailed, data: lifeTag(o.life)})
				}
			}
		}
		s.epoch0 = true
		s.push(&event{at: s.now + s.cfg.SlowEpoch, kind: evEpoch})
	case evResume:
		if sn.state != Paused || binary.BigEndian.Uint64(e.data) != sn.life {
			return
		}
		sn.state = Running
		buf := sn.buffer
		sn.buffer = nil
		for _, b := range buf {
			s.handle(b)
		}
		sn.tickAt = 0
		s.apply(sn, sn.node.Tick(s.clock(sn)))
	}
}

func sortedKeys(m map[int]uint64) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// breakLinksTo schedules a link failure at every node monitoring i.
func (s *Sim) breakLinksTo(i int, why gossip.LinkFailure) {
	for _, o := range s.nodes {
		if g, ok := o.links[i]; ok && o.idx != i && (o.state == Running || o.state == Paused) {
			s.push(&event{at: s.now + s.cfg.DetectDelay, kind: evLinkDown, node: o.idx, from: i, gen: g, why: why, data: lifeTag(o.life)})
		}
	}
}

// Crash stops node i without a word: its neighbours notice after DetectDelay.
func (s *Sim) Crash(i int) {
	sn := s.nodes[i]
	if sn.state == Crashed || sn.state == Departed {
		return
	}
	sn.state = Crashed
	sn.life++
	sn.links = map[int]uint64{}
	sn.buffer = nil
	s.breakLinksTo(i, gossip.KeepaliveFailed)
}

// Restart boots a crashed or departed node again with the same id and
// address and a fresh state (incarnation 0); it joins through a random
// running node.
func (s *Sim) Restart(i int) {
	sn := s.nodes[i]
	if sn.state == Running || sn.state == Paused {
		return
	}
	s.boot(sn)
}

// Replace models a process restarted at node i's address with a new
// identity before anyone noticed the old one stop: the old process stops
// without a word and a new node, with a new id (which ID(i) returns from
// now on) and a fresh state, boots at the same address at once, joining
// through a random running node. The links the others monitor carry on
// to the new process: a transport that keeps links by address (as
// gossip/muxtransport does) finds a live session there, so no link
// failure ever names the old id. Frames in flight to the address reach
// the new process. It returns the old id.
func (s *Sim) Replace(i int) gossip.NodeID {
	sn := s.nodes[i]
	old := sn.peer.ID
	sn.state = Crashed
	sn.life++
	sn.links = map[int]uint64{}
	sn.buffer = nil
	s.renamed++
	binary.BigEndian.PutUint32(sn.peer.ID[4:8], s.renamed)
	s.boot(sn)
	return old
}

// Leave makes node i leave gracefully; it stops once its goodbyes are sent.
func (s *Sim) Leave(i int) {
	sn := s.nodes[i]
	if sn.state != Running {
		return
	}
	out := sn.node.Leave(s.clock(sn))
	out.Next = time.Time{}
	s.apply(sn, out)
	sn.state = Departed
	sn.life++
	sn.links = map[int]uint64{}
}

// Pause freezes node i for d: it processes nothing (messages queue) and
// its keepalives fail if d exceeds DetectDelay; then it resumes.
func (s *Sim) Pause(i int, d time.Duration) {
	sn := s.nodes[i]
	if sn.state != Running {
		return
	}
	sn.state = Paused
	if d > s.cfg.DetectDelay {
		s.push(&event{at: s.now + s.cfg.DetectDelay, kind: evPauseCheck, node: i, data: lifeTag(sn.life)})
	}
	s.push(&event{at: s.now + d, kind: evResume, node: i, data: lifeTag(sn.life)})
}

// Partition splits the nodes: groups[k] lists the nodes of group k+1;
// nodes in no group form group 0. Monitored links across groups fail
// after DetectDelay.
func (s *Sim) Partition(groups ...[]int) {
	s.groups = map[int]int{}
	for k, g := range groups {
		for _, i := range g {
			s.groups[i] = k + 1
		}
	}
	for _, o := range s.nodes {
		for _, j := range sortedKeys(o.links) {
			if s.apart(o.idx, j) {
				s.push(&event{at: s.now + s.cfg.DetectDelay, kind: evLinkDown, node: o.idx, from: j, gen: o.links[j], why: gossip.KeepaliveFailed, data: lifeTag(o.life)})
			}
		}
	}
}

// Bridge makes node i reach every node whatever the partition (a lite
// client outside the partitioned network, linked to both sides), until
// Heal. Call it before Partition: links it keeps do not fail.
func (s *Sim) Bridge(i int) { s.bridges[i] = true }

// Heal removes every partition (and every bridge).
func (s *Sim) Heal() { s.groups, s.bridges = map[int]int{}, map[int]bool{} }

// Reannounce makes node i bump its incarnation and broadcast it (a probe
// broadcast for measuring Plumtree).
func (s *Sim) Reannounce(i int) {
	sn := s.nodes[i]
	if sn.state == Running {
		s.apply(sn, sn.node.Reannounce(s.clock(sn)))
	}
}
