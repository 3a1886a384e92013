package castytest

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/internal/seam"
)

// StartTimeout bounds how long NewCluster, Lite, Restart and Join wait
// for the membership to converge before failing the test, unless
// StartWithin sets another bound.
const StartTimeout = 30 * time.Second

// maxMembers bounds a cluster's full members, those NewCluster starts and
// those Join adds: nodes 0 to maxMembers-1 of the test network.
const maxMembers = 1000

// liteNode is the lite member's node on the test network, whatever N()
// is: past every member's, so that a member Join starts never takes it.
const liteNode = maxMembers

// TestConfig is the casty.Config every member of a NewCluster runs with
// unless MemberOptions passes a casty.WithConfig of its own (which then
// replaces it whole; start from TestConfig to change a field). It makes
// failures show in test time: a dead connection is noticed within a
// second by keepalive (250 ms interval, 1 s timeout), a suspect is
// declared dead after 1 s (SuspicionTimeout), reconnection backs off to at
// most 1 s, a replication round or a connect gives up after 2 s or 1 s,
// and a member lost to a failure (or a seed, while none is live) is
// contacted again every second once its record expired
// (Membership.ReconnectInterval). RemoveDeadAfter keeps casty's default of
// 30 s, so a crashed or partitioned member keeps its replica slots for
// the length of a test.
func TestConfig() casty.Config {
	return casty.Config{
		Actors: casty.ActorConfig{
			DrainTimeout: 2 * time.Second,
			CallTimeout:  5 * time.Second,
		},
		Replication: casty.ReplicationConfig{
			HandoffTimeout: 2 * time.Second,
			Timeout:        2 * time.Second,
		},
		Transport: casty.TransportConfig{
			KeepAliveInterval: 250 * time.Millisecond,
			KeepAliveTimeout:  time.Second,
			ConnectTimeout:    time.Second,
			HandshakeTimeout:  2 * time.Second,
			ReconnectMax:      time.Second,
		},
		Membership: casty.MembershipConfig{
			SuspicionTimeout:    time.Second,
			ShuffleInterval:     time.Second,
			AntiEntropyInterval: time.Second,
			JoinTimeout:         10 * time.Second,
			ReconnectInterval:   time.Second,
		},
	}
}

// ClusterOption configures NewCluster.
type ClusterOption func(*clusterOptions)

type clusterOptions struct {
	seed    int64
	seedSet bool
	member  []casty.Option
	mutant  string // seam.Member.Mutant, set by castytest's own tests only
	within  time.Duration
}

// StartWithin sets how long NewCluster, Lite, Restart and Join wait for
// the membership to converge before failing the test (StartTimeout
// without it): tens of members on a loaded machine take longer than
// StartTimeout to all see each other and settle the placement.
func StartWithin(d time.Duration) ClusterOption {
	return func(o *clusterOptions) { o.within = d }
}

// Mutant breaks one safety rule of replication on purpose in every member
// of the cluster, so that a test can measure how soon it catches the break
// (the detection power of a fault schedule, say): "write-one-fewer"
// acknowledges a commit with one replica fewer than its write quorum (the
// read quorum unchanged), "sync-one-fewer" finishes a range's sync with
// one answer fewer than the read quorum, "quorum-of-set" counts read
// quorums against the replica set's size instead of the kind's Replicas
// (a set shrunk by a removal reads fewer copies), and "adopt-newest-only"
// adopts the newest agreed placement straight from the one it held,
// skipping the versions between. Any other name breaks nothing. A cluster
// of mutants loses acknowledged writes: use it only to test a test.
func Mutant(name string) ClusterOption { return func(o *clusterOptions) { o.mutant = name } }

// Seed sets the seed of every random choice the test network makes
// (which write a lossy link drops, the jitter of a delay) and of the
// members' node IDs (hence the placement) and their gossip's and mux's
// random choices. Without it NewCluster takes one from the clock; either
// way it logs the seed, and logs it again if the test fails, so Seed(n)
// replays those choices.
func Seed(seed int64) ClusterOption {
	return func(o *clusterOptions) { o.seed, o.seedSet = seed, true }
}

// MemberOptions adds casty options to every member and to the lite
// member, after the cluster's own (TestConfig, a logger that discards
// unless CASTY_TEST_LOGS is set). Seeds and addresses are the cluster's
// to choose, and so are the network and the clock: the cluster's own
// casty.WithNetwork and casty.WithClock (Skew) come after these.
func MemberOptions(opts ...casty.Option) ClusterOption {
	return func(o *clusterOptions) { o.member = append(o.member, opts...) }
}

// Cluster is an in-process Casty cluster whose network can fail on
// demand. Its methods are safe for concurrent use; index i names member i
// (0 to N()-1), and N() names the lite member in the link methods (Join
// moves it up by one).
type Cluster struct {
	t      testing.TB
	seed   int64
	nw     *network
	opts   []casty.Option
	mutant string
	within time.Duration // StartTimeout, or StartWithin's

	liteMu sync.Mutex // held while the lite member starts (not mu: it waits)

	mu      sync.Mutex
	n       int // len(members)
	members []*slot
	lite    *slot
	closed  bool
}

// slot is one node of the cluster, across restarts.
type slot struct {
	sys     *casty.System
	crashed bool
	skew    atomic.Int64  // time.Duration added to the HLC's physical clock
	starts  atomic.Uint64 // how many times a node started in the slot
}

// NewCluster starts n full members of a Casty cluster in this process,
// joined over a test network (no socket is opened), and waits until each
// sees all n and has settled the placement of replicated kinds. It runs
// the real casty, mux and gossip code; only the bytes travel through
// memory. t.Cleanup stops every member as Crash does.
func NewCluster(t testing.TB, n int, opts ...ClusterOption) *Cluster {
	t.Helper()
	if n < 1 || n > maxMembers {
		t.Fatalf("castytest: NewCluster of %d members: want 1 to %d", n, maxMembers)
	}
	o := clusterOptions{seed: time.Now().UnixNano(), within: StartTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	flushPools()
	c := &Cluster{t: t, n: n, seed: o.seed, nw: newNetwork(o.seed), mutant: o.mutant, within: o.within}
	c.opts = append([]casty.Option{casty.WithConfig(TestConfig()), quietLogs()}, o.member...)
	t.Logf("castytest: cluster of %d, seed %d (castytest.Seed(%d) replays the network's and the members' random choices)", n, c.seed, c.seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("castytest: the failed test ran its cluster with seed %d", c.seed)
		}
	})
	t.Cleanup(c.close)
	c.members = make([]*slot, n)
	for i := range c.members {
		c.members[i] = &slot{}
	}
	first, err := c.start(0, nil)
	if err != nil {
		t.Fatalf("castytest: start member 0: %v (seed %d)", err, c.seed)
	}
	c.members[0].sys = first
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Go(func() {
			c.members[i].sys, errs[i] = c.start(i, []string{addrOf(0)})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("castytest: start member %d: %v (seed %d)", i, err, c.seed)
		}
	}
	c.await(fmt.Sprintf("all %d members everywhere and the placement settled", n), func() bool {
		for _, m := range c.members {
			if len(m.sys.Members()) != n || !seam.Settled(m.sys, n) {
				return false
			}
		}
		return true
	})
	return c
}

// flushPools empties every sync.Pool in the process. casty, mux, actor
// and yamux pool channels and timers process-wide, and a channel or timer
// made inside a testing/synctest bubble belongs to it: a test outside the
// bubble that takes one from a pool aborts the process ("select on
// synctest channel from outside bubble"), and one made outside it that a
// bubbled member takes blocks it non-durably, so the bubble's clock
// stops. A garbage collection moves each pool's contents to its victim
// cache and a second drops them, so two before a cluster starts leave the
// cluster only objects made in its own test (on a virtual clock or not).
// Tests that run clusters in parallel (t.Parallel) must not mix bubbled
// and unbubbled ones in one process.
func flushPools() {
	runtime.GC()
	runtime.GC()
}

// quietLogs discards the members' logs unless CASTY_TEST_LOGS is set.
func quietLogs() casty.Option {
	if os.Getenv("CASTY_TEST_LOGS") != "" {
		return casty.WithLogger(slog.Default())
	}
	return casty.WithLogger(slog.New(slog.DiscardHandler))
}

// member returns the options that put node i on the test network
// (casty.WithNetwork) with its (possibly skewed) clock (casty.WithClock),
// its node ID and its gossip's and mux's random choices drawn from the
// cluster's seed, the node's index and how many times a node started in
// its slot.
func (c *Cluster) member(i int, sl *slot) []casty.Option {
	m := &seam.Member{
		Rand:   rand.New(rand.NewPCG(uint64(c.seed), uint64(i)<<32|sl.starts.Add(1))),
		Mutant: c.mutant,
	}
	return []casty.Option{
		casty.WithNetwork(endpoint{nw: c.nw, self: i}),
		casty.WithClock(func() time.Time { return time.Now().Add(time.Duration(sl.skew.Load())) }),
		seam.Option(m).(casty.Option),
	}
}

// start starts full member i at its address, joining through seeds.
func (c *Cluster) start(i int, seeds []string) (*casty.System, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.within)
	defer cancel()
	c.mu.Lock()
	sl := c.members[i]
	c.mu.Unlock()
	opts := append(slices.Clone(c.opts), casty.Seeds(seeds...))
	opts = append(opts, c.member(i, sl)...)
	return casty.Start(ctx, addrOf(i), opts...)
}

// await fails the test unless cond holds within c.within.
func (c *Cluster) await(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(c.within)
	for pause := time.Millisecond; !cond(); pause = min(2*pause, 10*time.Millisecond) {
		if time.Now().After(deadline) {
			c.t.Fatalf("castytest: timed out after %v waiting for %s (seed %d)", c.within, what, c.seed)
		}
		time.Sleep(pause)
	}
}

// close stops every node as Crash does, then releases it.
func (c *Cluster) close() {
	c.mu.Lock()
	c.closed = true
	all := slices.Clone(c.members)
	if c.lite != nil {
		all = append(all, c.lite)
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, sl := range all {
		if sl.sys == nil {
			continue
		}
		wg.Go(func() {
			seam.Crash(sl.sys)
			_ = sl.sys.Close(context.Background())
		})
	}
	wg.Wait()
	if inBubble() {
		// A closed member's call-timeout sweepers end at their next tick
		// (sweep.Every) once nothing is left to watch; a bubble's clock
		// stops when its test function returns, so let it run past that
		// tick here.
		time.Sleep(time.Second)
	}
}

// inBubble reports whether the calling goroutine runs in a
// testing/synctest bubble, whose clock gives time.Now no monotonic
// reading.
func inBubble() bool {
	now := time.Now()
	return now == now.Round(0)
}

// N is the number of full members: those NewCluster started and those
// Join added.
func (c *Cluster) N() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Seed is the seed of the network's random choices.
func (c *Cluster) Seed() int64 { return c.seed }

// Addr is member i's address (the same across restarts).
func (c *Cluster) Addr(i int) string { return addrOf(i) }

// Member returns member i's current System (after Crash, the crashed one;
// after Restart, the new one).
func (c *Cluster) Member(i int) *casty.System {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slot(i).sys
}

// Members returns every member's current System, by index.
func (c *Cluster) Members() []*casty.System {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*casty.System, c.n)
	for i, sl := range c.members {
		out[i] = sl.sys
	}
	return out
}

func (c *Cluster) slot(i int) *slot {
	if i < 0 || i >= c.n {
		c.t.Fatalf("castytest: no member %d in a cluster of %d", i, c.n)
	}
	return c.members[i]
}

// node returns the test network's node that index i names: member i, or
// the lite member when i is N().
func (c *Cluster) node(i int) int {
	n := c.N()
	if i < 0 || i > n {
		c.t.Fatalf("castytest: no node %d: members are 0 to %d, the lite member %d", i, n-1, n)
	}
	if i == n {
		return liteNode
	}
	return i
}

// Lite returns a lite member (casty.Connect) on the same network, started
// on first use: it routes calls to the members without owning keys, as
// your clients would. Its node index is N() (after a Join, the new N()).
func (c *Cluster) Lite() *casty.System {
	c.t.Helper()
	// The cluster's lock is not held while the lite member starts and
	// waits: inside a synctest bubble, another goroutine blocked on it
	// would stop the virtual clock.
	c.liteMu.Lock()
	defer c.liteMu.Unlock()
	c.mu.Lock()
	if c.lite != nil {
		c.mu.Unlock()
		return c.lite.sys
	}
	var seeds []string
	live := 0
	for i, sl := range c.members {
		if !sl.crashed {
			seeds = append(seeds, addrOf(i))
			live++
		}
	}
	c.mu.Unlock()
	if len(seeds) == 0 {
		c.t.Fatalf("castytest: Lite: every member has crashed (seed %d)", c.seed)
	}
	sl := &slot{}
	ctx, cancel := context.WithTimeout(context.Background(), c.within)
	defer cancel()
	opts := append(slices.Clone(c.opts), c.member(liteNode, sl)...)
	sys, err := casty.Connect(ctx, seeds, opts...)
	if err != nil {
		c.t.Fatalf("castytest: start the lite member: %v (seed %d)", err, c.seed)
	}
	sl.sys = sys
	c.mu.Lock()
	c.lite = sl
	c.mu.Unlock()
	c.await("the lite member to see every live member", func() bool { return len(sys.Members()) >= live })
	return sys
}

// Crash stops member i as a killed process stops: no drain, no goodbye to
// the membership, no Deactivate hooks; its connections drop at once, so
// its peers see them reset (and nothing listens at its address until
// Restart). Its System stays what Member(i) returns, failing every call.
func (c *Cluster) Crash(i int) {
	sys := c.takeDown(i)
	if sys == nil {
		return
	}
	c.nw.resetWhere(func(a, b int) bool { return a == i || b == i })
	seam.Crash(sys)
	_ = sys.Close(context.Background())
}

// liveBut returns the addresses and Systems of the members up, but i.
func (c *Cluster) liveBut(i int) (seeds []string, live []*casty.System) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for j, sl := range c.members {
		if j != i && !sl.crashed {
			seeds = append(seeds, addrOf(j))
			live = append(live, sl.sys)
		}
	}
	return seeds, live
}

// takeDown marks member i's slot down and returns the System it ran, nil
// when it was down already.
func (c *Cluster) takeDown(i int) *casty.System {
	c.mu.Lock()
	defer c.mu.Unlock()
	sl := c.slot(i)
	if sl.crashed {
		return nil
	}
	sl.crashed = true
	return sl.sys
}

// Restart starts a new member at member i's address (crashing the old one
// first if it runs): a new process with a new identity and no state,
// joining through the live members, at once: the members suspect the old
// identity when the new one answers at its address (gossip/SPEC.md,
// failure detection). It waits until every live member sees the new one
// and it sees them.
func (c *Cluster) Restart(i int) *casty.System {
	c.t.Helper()
	c.Crash(i)
	seeds, live := c.liveBut(i)
	sys, err := c.start(i, seeds)
	if err != nil {
		c.t.Fatalf("castytest: restart member %d: %v (seed %d)", i, err, c.seed)
	}
	c.mu.Lock()
	c.members[i].sys, c.members[i].crashed = sys, false
	c.mu.Unlock()
	live = append(live, sys)
	ids := make([]string, len(live))
	for k, s := range live {
		ids[k] = s.ID()
	}
	c.await(fmt.Sprintf("restarted member %d (%s) and the %d live members to see each other", i, sys.ID(), len(live)-1), func() bool {
		for _, s := range live {
			seen := map[string]bool{}
			for _, m := range s.Members() {
				seen[m.ID] = true
			}
			for _, id := range ids {
				if !seen[id] {
					return false
				}
			}
		}
		return true
	})
	return sys
}

// Join starts one more full member — a newcomer with a new identity, no
// state and an address of its own — joining through the members up (not
// crashed nor paused), and returns its index: the N() before the call,
// which grows by one (the lite member's index in the link methods with
// it). It waits until the newcomer is ready (System.Health's Ready): it
// has seen the others, the placement agreed with it in holds it, and it
// has synced the ranges it entered. A member paused or cut off meanwhile
// learns of it once back; Join does not wait for that.
func (c *Cluster) Join() int {
	c.t.Helper()
	c.mu.Lock()
	if c.n == maxMembers {
		c.mu.Unlock()
		c.t.Fatalf("castytest: Join: the cluster has %d members already, the most it can (seed %d)", maxMembers, c.seed)
	}
	i := c.n
	// Down until it has started: Member(i) is nil meanwhile, and the
	// cleanup has nothing to stop if the start fails.
	c.members = append(c.members, &slot{crashed: true})
	c.n++
	c.mu.Unlock()
	// A paused seed accepts the connection and never answers: a newcomer
	// whose gossip JOIN went there is admitted only once it tries another
	// seed, seconds later — at times not before Start gives up
	// (Config.Membership.JoinTimeout).
	var seeds []string
	c.mu.Lock()
	for j, sl := range c.members {
		if j != i && !sl.crashed && !c.nw.node(j).paused.Load() {
			seeds = append(seeds, addrOf(j))
		}
	}
	c.mu.Unlock()
	if len(seeds) == 0 {
		c.t.Fatalf("castytest: Join: every member is crashed or paused (seed %d)", c.seed)
	}
	sys, err := c.start(i, seeds)
	if err != nil {
		c.t.Fatalf("castytest: start member %d, joining: %v (seed %d)", i, err, c.seed)
	}
	c.mu.Lock()
	c.members[i].sys, c.members[i].crashed = sys, false
	c.mu.Unlock()
	c.await(fmt.Sprintf("member %d (%s), joining, to be ready", i, sys.ID()), func() bool { return sys.Health().Ready })
	return i
}

// Pause freezes node i's network as SIGSTOP freezes a process: nothing it
// sends is delivered and nothing sent to it is read, both ways, on every
// link, until Resume (writes buffer, then block, as a full TCP window
// would). Its peers' keepalives time out, so they suspect it and then
// declare it dead. Its own goroutines do run (Go cannot stop them): its
// timers fire and it suspects its peers in turn.
func (c *Cluster) Pause(i int) { c.nw.node(c.node(i)).paused.Store(true) }

// Resume lets node i's links deliver again what they hold.
func (c *Cluster) Resume(i int) {
	i = c.node(i)
	c.nw.node(i).paused.Store(false)
	c.nw.wakeWhere(func(a, b int) bool { return a == i || b == i })
}

// Cut severs the link between nodes i and j, both ways, as a firewall
// that rejects: their connections reset at once and new dials between
// them fail with ErrUnreachable until Heal. (For a link that goes silent
// instead, see Pause.)
func (c *Cluster) Cut(i, j int) {
	i, j = c.node(i), c.node(j)
	c.nw.link(i, j).cut.Store(true)
	c.nw.resetWhere(func(a, b int) bool { return a == i && b == j || a == j && b == i })
}

// CutOneWay holds everything node from sends to node to, on every
// connection between them, while what to sends to from flows: a one-way
// loss, as a misconfigured firewall or a failing transceiver makes. Bytes
// held are delivered late once healed, if the connection is still up
// (keepalives time out meanwhile, as they would over TCP). Heal ends it.
func (c *Cluster) CutOneWay(from, to int) {
	from, to = c.node(from), c.node(to)
	d := 0
	if from > to {
		d = 1
	}
	c.nw.link(from, to).stall[d].Store(true)
}

// Heal clears every fault of the link between i and j: cut, one-way cut,
// delay, loss and duplication.
func (c *Cluster) Heal(i, j int) {
	i, j = c.node(i), c.node(j)
	l := c.nw.link(i, j)
	l.cut.Store(false)
	l.stall[0].Store(false)
	l.stall[1].Store(false)
	l.delay.Store(0)
	l.loss.Store(0)
	l.dup.Store(0)
	c.nw.wakeWhere(func(a, b int) bool { return a == i && b == j || a == j && b == i })
}

// Partition cuts every link between nodes of different groups; a node in
// no group keeps its links. Partition([]int{0, 1}, []int{2, 3, 4}) splits
// five members two against three.
func (c *Cluster) Partition(groups ...[]int) {
	group := map[int]int{}
	for g, nodes := range groups {
		for _, i := range nodes {
			c.node(i) // fails the test unless i names a node
			group[i] = g
		}
	}
	for i, gi := range group {
		for j, gj := range group {
			if i < j && gi != gj {
				c.Cut(i, j)
			}
		}
	}
}

// HealAll heals every link (it does not resume a paused node).
func (c *Cluster) HealAll() {
	n := c.N()
	for i := 0; i <= n; i++ {
		for j := i + 1; j <= n; j++ {
			c.Heal(i, j)
		}
	}
}

// Delay makes every write on the link between i and j, both ways, arrive
// d later, plus a jitter drawn uniformly from [0, d/10] (from the seed);
// bytes stay in order, and throughput is not limited. Zero removes the
// delay. It applies to writes made from now on.
func (c *Cluster) Delay(i, j int, d time.Duration) {
	c.nw.link(c.node(i), c.node(j)).delay.Store(int64(max(d, 0)))
}

// Lossy makes the link between i and j lose packets with probability p,
// as the connection sees it: mux runs over a reliable byte stream, which
// hides a lost packet behind a retransmission, so what a caller can
// observe is the stream giving up. Each write on the link, either way, is
// with probability p (drawn from the seed) the one at which the
// connection resets instead of carrying it: the write and everything
// buffered is lost, both ends see ErrReset, and the nodes must redial
// (which succeeds: it is not a cut). Zero makes it reliable again.
func (c *Cluster) Lossy(i, j int, p float64) {
	c.nw.link(c.node(i), c.node(j)).loss.Store(math.Float64bits(min(max(p, 0), 1)))
}

// Duplicate makes the link between i and j deliver writes whose answer
// never returns, with probability p per write (drawn from the seed): the
// write reaches the peer, which acts on it, and the connection resets as
// it is read, before any reply can travel back. A byte stream never
// delivers a byte twice, so this is how a request arrives twice: the
// caller sees the call fail (indeterminate), and if it — or casty —
// retries, the actor runs it again. Zero turns it off.
func (c *Cluster) Duplicate(i, j int, p float64) {
	c.nw.link(c.node(i), c.node(j)).dup.Store(math.Float64bits(min(max(p, 0), 1)))
}

// Skew sets member i's clock offset: its replication HLC reads the wall
// clock plus d (d may be negative). Within Config.Replication.MaxClockDrift its
// timestamps lead or lag and the HLC orders them anyway; further ahead,
// the others refuse its replication requests. The skew
// survives Restart; it does not move timers or timeouts.
func (c *Cluster) Skew(i int, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slot(i).skew.Store(int64(d))
}
