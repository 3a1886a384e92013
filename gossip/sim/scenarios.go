package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/casty-go/casty/gossip"
	"github.com/casty-go/casty/gossip/internal/core"
)

// The scenarios below are the measurements of the gossip issue: each builds
// a cluster of n nodes (joined one by one through the protocol), lets it
// settle, applies one disturbance and measures. They are used by the tests
// (reduced sizes) and by cmd/gossipsim (full figures).

// GrowGap is the simulated time between two joins while a scenario builds
// its cluster.
const GrowGap = 20 * time.Millisecond

// Settle is how long a scenario lets a freshly grown cluster run before it
// measures.
const Settle = 10 * time.Second

// Build grows a cluster of n nodes with cfg (seeded) and lets it settle. It
// returns an error carrying the seed if the cluster did not converge.
func Build(cfg Config, n int) (*Sim, error) {
	s := New(cfg)
	if !s.Grow(n, GrowGap, 120*time.Second) {
		return s, fmt.Errorf("sim: seed %d: %d nodes did not converge within 120 s of the last join", cfg.Seed, n)
	}
	s.Run(Settle)
	return s, nil
}

// JoinLatency adds one node to a settled n-node cluster and returns the
// simulated time until every member sees it ALIVE (limit 10 s). With warm
// set, 20 broadcasts (one a second) run first, so Plumtree has repaired the
// cuts the concurrent joins of the cluster's formation left in its tree.
func JoinLatency(cfg Config, n int, warm bool) (time.Duration, error) {
	s, err := Build(cfg, n)
	if err != nil {
		return 0, err
	}
	if warm {
		for range 20 {
			s.Reannounce(s.rng.IntN(n))
			s.Run(time.Second)
		}
	}
	t0 := s.Now()
	j := s.AddNode()
	if !s.RunUntil(t0+10*time.Second, func() bool { return s.AllSee(j, IsAlive) }) {
		return 0, fmt.Errorf("sim: seed %d: joiner not ALIVE everywhere after 10 s", cfg.Seed)
	}
	return s.Now() - t0, nil
}

// CrashResult is what CrashLatency measures.
type CrashResult struct {
	Latency     time.Duration // crash -> every survivor sees DEAD
	FalseDeaths uint64
	DeadEvents  map[int]int // per observer: DEAD events about the crashed node
}

// CrashLatency crashes one random node of a settled cluster and measures
// the time until every survivor marks it DEAD (limit 30 s).
func CrashLatency(cfg Config, n int) (CrashResult, error) {
	var r CrashResult
	r.DeadEvents = map[int]int{}
	victim := -1
	var s *Sim
	prev := cfg.OnEvent
	cfg.OnEvent = func(at time.Duration, node int, ev gossip.Event) {
		if victim >= 0 && ev.Kind == gossip.EventDead && ev.Member.ID == s.ID(victim) {
			r.DeadEvents[node]++
		}
		if prev != nil {
			prev(at, node, ev)
		}
	}
	s, err := Build(cfg, n)
	if err != nil {
		return r, err
	}
	base := s.Stats().FalseDeaths
	victim = 1 + s.rng.IntN(n-1)
	t0 := s.Now()
	s.Crash(victim)
	if !s.RunUntil(t0+30*time.Second, func() bool { return s.AllSee(victim, IsDead) }) {
		return r, fmt.Errorf("sim: seed %d: crashed node not DEAD everywhere after 30 s", cfg.Seed)
	}
	r.Latency = s.Now() - t0
	s.Run(5 * time.Second)
	r.FalseDeaths = s.Stats().FalseDeaths - base
	return r, nil
}

// LeaveResult is what LeaveLatency measures.
type LeaveResult struct {
	Latency    time.Duration // leave -> every member sees LEFT
	Suspicions int           // SUSPECT or DEAD events about the leaver
}

// LeaveLatency makes a random node leave gracefully and measures the time
// until every member sees it LEFT, and the suspicions raised about it.
func LeaveLatency(cfg Config, n int) (LeaveResult, error) {
	var r LeaveResult
	leaver := -1
	var s *Sim
	prev := cfg.OnEvent
	cfg.OnEvent = func(at time.Duration, node int, ev gossip.Event) {
		if leaver >= 0 && ev.Member.ID == s.ID(leaver) && (ev.Kind == gossip.EventSuspect || ev.Kind == gossip.EventDead) {
			r.Suspicions++
		}
		if prev != nil {
			prev(at, node, ev)
		}
	}
	s, err := Build(cfg, n)
	if err != nil {
		return r, err
	}
	leaver = 1 + s.rng.IntN(n-1)
	t0 := s.Now()
	s.Leave(leaver)
	if !s.RunUntil(t0+10*time.Second, func() bool { return s.AllSee(leaver, IsLeft) }) {
		return r, fmt.Errorf("sim: seed %d: leaver not LEFT everywhere after 10 s", cfg.Seed)
	}
	r.Latency = s.Now() - t0
	s.Run(10 * time.Second)
	return r, nil
}

// SlowResult is what SlowLinks measures.
type SlowResult struct {
	FalseDeaths uint64 // DEAD events about running nodes
	Suspicions  uint64 // SUSPECT events (all refuted, if FalseDeaths is 0)
	LinkDowns   uint64
	Converged   bool // every table agrees at the end (after the delays stop)
}

// SlowLinks runs a settled cluster for d with cfg.SlowLinks of the pairs
// delayed by up to cfg.SlowDelay and counts false deaths.
func SlowLinks(cfg Config, n int, d time.Duration) (SlowResult, error) {
	frac := cfg.SlowLinks
	cfg.SlowLinks = 0
	s, err := Build(cfg, n)
	if err != nil {
		return SlowResult{}, err
	}
	s.ResetStats()
	s.cfg.SlowLinks = frac
	s.Run(d)
	s.cfg.SlowLinks = 0
	conv := s.RunUntil(s.Now()+2*time.Minute, s.Converged)
	st := s.Stats()
	return SlowResult{FalseDeaths: st.FalseDeaths, Suspicions: st.Suspicions, LinkDowns: st.LinkDowns, Converged: conv}, nil
}

// PauseResult is what Pause measures.
type PauseResult struct {
	AliveEverywhere bool   // every member sees the paused node ALIVE at the end
	Incarnation     uint64 // the paused node's incarnation at the end
	FalseDeaths     uint64
	Suspected       bool // some node suspected it during the pause
}

// Pause freezes a random node for d (half the suspicion timeout in the
// issue), then checks it ends ALIVE everywhere with a higher incarnation.
func Pause(cfg Config, n int, d time.Duration) (PauseResult, error) {
	var r PauseResult
	victim := -1
	var s *Sim
	prev := cfg.OnEvent
	cfg.OnEvent = func(at time.Duration, node int, ev gossip.Event) {
		if victim >= 0 && ev.Member.ID == s.ID(victim) && ev.Kind == gossip.EventSuspect {
			r.Suspected = true
		}
		if prev != nil {
			prev(at, node, ev)
		}
	}
	s, err := Build(cfg, n)
	if err != nil {
		return r, err
	}
	base := s.Stats().FalseDeaths
	victim = 1 + s.rng.IntN(n-1)
	s.Pause(victim, d)
	s.Run(d)
	r.AliveEverywhere = s.RunUntil(s.Now()+30*time.Second, func() bool {
		return s.AllSee(victim, func(m gossip.Member) bool { return m.Status == gossip.Alive && m.Incarnation > 0 })
	})
	r.Incarnation = s.Node(victim).Self().Incarnation
	r.FalseDeaths = s.Stats().FalseDeaths - base
	return r, nil
}

// MassCrashResult is what MassCrash measures.
type MassCrashResult struct {
	Crashed, Survivors int
	// ConnectedAtEnd: the survivors' overlay is connected once repaired.
	ConnectedAtEnd bool
	// Refill is the time from the crash until the survivors' mean live
	// active view is back to 95% of its mean before the crash, no survivor
	// has fewer than 2 live neighbours and the overlay is connected (0 if
	// not within 10 shuffle periods).
	Refill time.Duration
	// ViewBefore and ViewAfter are the mean active view sizes before the
	// crash and when refilled.
	ViewBefore, ViewAfter float64
	// Delivery is the fraction of (broadcast, survivor) pairs delivered
	// within 2 s, over the broadcasts made after repair.
	Delivery   float64
	Broadcasts int
}

// MassCrash crashes frac of a settled cluster at once, waits for the
// overlay to repair (views refilled, the dead declared), then measures the
// delivery of broadcasts from random survivors.
func MassCrash(cfg Config, n int, frac float64, broadcasts int) (MassCrashResult, error) {
	var r MassCrashResult
	s, err := Build(cfg, n)
	if err != nil {
		return r, err
	}
	sizes := s.ActiveSizes()
	for _, v := range sizes {
		r.ViewBefore += float64(v)
	}
	r.ViewBefore /= float64(len(sizes))
	order := s.rng.Perm(n)
	r.Crashed = int(float64(n) * frac)
	for _, i := range order[:r.Crashed] {
		s.Crash(i)
	}
	r.Survivors = n - r.Crashed
	t0 := s.Now()
	refilled := func() bool {
		total := 0
		for _, i := range s.Running() {
			live := 0
			for _, p := range s.Node(i).Active() {
				if j := s.byAddr[p.Addr]; s.nodes[j].state == Running {
					live++
				}
			}
			if live < 2 {
				return false
			}
			total += live
		}
		r.ViewAfter = float64(total) / float64(len(s.Running()))
		return r.ViewAfter >= 0.95*r.ViewBefore && s.Connected()
	}
	limit := 10 * s.cfg.Gossip.ShuffleInterval
	if s.RunUntil(t0+limit, refilled) {
		r.Refill = s.Now() - t0
	}
	// repair: every survivor has declared the crashed nodes dead
	s.RunUntil(s.Now()+time.Minute, s.Converged)
	s.Run(5 * time.Second)
	r.ConnectedAtEnd = s.Connected()
	run := s.Running()
	delivered, total := 0, 0
	for range broadcasts {
		o := run[s.rng.IntN(len(run))]
		s.Reannounce(o)
		want := s.Node(o).Self()
		s.Run(2 * time.Second)
		for _, i := range run {
			if i == o {
				continue
			}
			total++
			if m, ok := s.Node(i).Member(want.ID); ok && m.Incarnation >= want.Incarnation {
				delivered++
			}
		}
	}
	r.Broadcasts = broadcasts
	if total > 0 {
		r.Delivery = float64(delivered) / float64(total)
	}
	return r, nil
}

// SteadyResult is what Steady measures.
type SteadyResult struct {
	// RMR is Plumtree's relative message redundancy over the probe
	// broadcasts: payload messages received / (broadcasts × (n-1)) - 1.
	RMR float64
	// MsgsPerNodeSec and BytesPerNodeSec are the idle background cost
	// (shuffles, anti-entropy, promotions) per node per second.
	MsgsPerNodeSec, BytesPerNodeSec float64
	// BroadcastMsgsPerNodeSec is the cost with one broadcast per second.
	BroadcastMsgsPerNodeSec, BroadcastBytesPerNodeSec float64
	// Grafts counts GRAFT messages during the probe broadcasts.
	Grafts uint64
}

// Steady measures a settled cluster: idle cost over idle, then Plumtree
// redundancy over broadcasts probe broadcasts one per gap.
func Steady(cfg Config, n int, idle time.Duration, broadcasts int, gap time.Duration) (SteadyResult, error) {
	var r SteadyResult
	s, err := Build(cfg, n)
	if err != nil {
		return r, err
	}
	// warm the tree: Plumtree repairs itself with traffic
	for range 20 {
		s.Reannounce(s.rng.IntN(n))
		s.Run(gap)
	}
	s.ResetStats()
	s.Run(idle)
	st := s.Stats()
	secs := idle.Seconds() * float64(n)
	r.MsgsPerNodeSec = float64(st.Msgs) / secs
	r.BytesPerNodeSec = float64(st.Bytes) / secs
	s.ResetStats()
	for range broadcasts {
		s.Reannounce(s.rng.IntN(n))
		s.Run(gap)
	}
	st = s.Stats()
	r.RMR = float64(st.PayloadDeliveries)/float64(broadcasts*(n-1)) - 1
	secs = (time.Duration(broadcasts) * gap).Seconds() * float64(n)
	r.BroadcastMsgsPerNodeSec = float64(st.Msgs) / secs
	r.BroadcastBytesPerNodeSec = float64(st.Bytes) / secs
	r.Grafts = st.ByKind[core.KindGraft]
	return r, nil
}

// Percentile returns the p-th percentile (0..100) of ds (nearest rank).
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	c := slices.Clone(ds)
	slices.Sort(c)
	k := int(p/100*float64(len(c))+0.999999) - 1
	k = max(0, min(k, len(c)-1))
	return c[k]
}

// NeighbourhoodResult is what NeighbourhoodCrash measures.
type NeighbourhoodResult struct {
	Centre  int   // the node whose whole active view crashed with it
	Crashed []int // the centre and its active neighbours
	// Latency is the time from the crash until every survivor sees every
	// crashed node DEAD (0 if not within the limit).
	Latency time.Duration
	// Missing lists the crashed nodes some survivor still did not see DEAD
	// at the limit.
	Missing     []int
	FalseDeaths uint64
}

// NeighbourhoodCrash crashes a random node of a settled cluster together
// with its whole active view, at once. By the symmetry of the active view
// no survivor has the centre as a neighbour, so no survivor's monitored
// link to it fails: it must be found dead some other way. The result says
// how long until every survivor sees every crashed node DEAD (limit).
func NeighbourhoodCrash(cfg Config, n int, limit time.Duration) (NeighbourhoodResult, error) {
	var r NeighbourhoodResult
	s, err := Build(cfg, n)
	if err != nil {
		return r, err
	}
	base := s.Stats().FalseDeaths
	r.Centre = s.rng.IntN(n)
	r.Crashed = []int{r.Centre}
	for _, p := range s.Node(r.Centre).Active() {
		r.Crashed = append(r.Crashed, s.byAddr[p.Addr])
	}
	t0 := s.Now()
	for _, i := range r.Crashed {
		s.Crash(i)
	}
	// DEAD, or forgotten once its tombstone expired (every survivor knew it)
	gone := func(i int) bool {
		for _, o := range s.Running() {
			if m, ok := s.Node(o).Member(s.ID(i)); ok && !IsDead(m) {
				return false
			}
		}
		return true
	}
	allGone := func() bool {
		for _, i := range r.Crashed {
			if !gone(i) {
				return false
			}
		}
		return true
	}
	if s.RunUntil(t0+limit, allGone) {
		r.Latency = s.Now() - t0
	}
	for _, i := range r.Crashed {
		if !gone(i) {
			r.Missing = append(r.Missing, i)
		}
	}
	r.FalseDeaths = s.Stats().FalseDeaths - base
	return r, nil
}
