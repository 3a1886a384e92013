package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/casty-go/casty/casty"
)

// The faults a nemesis can inject.
const (
	faultKill      = "kill"      // SIGKILL a member, restart it (new identity) after the hold
	faultPause     = "pause"     // SIGSTOP a member, SIGCONT after the hold
	faultPartition = "partition" // cut 1 to a minority of members off the rest (the lite member reaches both sides), heal after the hold
	faultSkew      = "skew"      // restart a member gracefully with a new clock skew within ±maxDrift/2
	faultIsolate   = "isolate"   // cut one member off from every other member and the lite member, both ways
	faultMinority  = "minority"  // cut a minority holding two copies of a register off the majority and the lite member
	faultOneWay    = "oneway"    // drop what 1 to a minority of members send to the rest, or what the rest send to them, not both
	faultBridged   = "bridged"   // cut a minority off the rest while the lite member reaches both sides
	faultClose     = "close"     // SIGTERM a member right after an acknowledged write to a key it owns, restart it after the hold
)

var allFaults = []string{faultKill, faultPause, faultPartition, faultSkew, faultIsolate, faultMinority, faultOneWay, faultBridged, faultClose}

// cutsLinks says whether fault f needs iptables.
func cutsLinks(f string) bool {
	switch f {
	case faultPartition, faultIsolate, faultMinority, faultOneWay, faultBridged:
		return true
	}
	return false
}

// stopGrace bounds a graceful stop (SIGTERM) before SIGKILL: casty's
// Close drains for DrainTimeout (2 s in clusterConfig) and then leaves.
const stopGrace = 10 * time.Second

// closeAckBound bounds how long the close fault waits for an
// acknowledged write to a key its victim owns before closing it anyway.
const closeAckBound = 5 * time.Second

// nemesis injects faults: every interval (jittered ±50 %) it picks one
// fault, or with combine two at once on different members, holds them
// for a duration drawn from hold (1–3 s by default) and heals them. It
// never touches more than a minority of the members at once, so a
// majority stays able to serve. Every choice comes from its seeded rng,
// except those made from where keys live (minority, close): the
// placement depends on the members' node ids, which are random.
//
// A skew is not healed: the member runs with its new clock until another
// skew fault picks it (a kill restarts it with the skew it had), so every
// member's clock stays within ±maxDrift/2 of the wall clock and any two
// members' within maxDrift of each other.
type nemesis struct {
	procs    *procs
	part     *partitioner // nil: partitions unavailable
	faults   []string
	combine  bool
	interval time.Duration
	hold     holdRange
	maxDrift time.Duration // bound on the skew between two members' clocks
	rng      *rand.Rand
	out      io.Writer
	start    time.Time

	// sys is the lite member, asked where keys live (minority, close);
	// keys are the workloads' keys, regKind the register kind's name;
	// acks reports the workloads' acknowledged writes (close). Without
	// sys, minority and close pick their members at random.
	sys     *casty.System
	keys    []kindKey
	regKind string
	regs    int
	acks    *ackFeed

	// lastKill is when the last kill's member was restarted (zero: no
	// kill yet); see wholeAgain.
	lastKill time.Time

	mu     sync.Mutex
	counts map[string]int
	log    []string
}

func (n *nemesis) logf(format string, args ...any) {
	line := fmt.Sprintf("t=%6.2fs ", time.Since(n.start).Seconds()) + fmt.Sprintf(format, args...)
	n.mu.Lock()
	n.log = append(n.log, line)
	n.mu.Unlock()
	fmt.Fprintln(n.out, "castychaos: "+line)
}

// run injects faults until ctx ends, then heals whatever is still broken.
func (n *nemesis) run(ctx context.Context) {
	if len(n.faults) == 0 {
		return
	}
	for {
		wait := n.interval/2 + time.Duration(n.rng.Int64N(int64(n.interval)))
		if !sleepCtx(ctx, wait) {
			return
		}
		if !n.round(ctx) {
			return
		}
	}
}

// round injects one fault, or two on different members, holds them and
// heals them; it reports whether the hold ran its course (false: ctx
// ended it, the faults are healed all the same). A fault that takes a
// whole minority (minority, bridged) leaves no member for a second one.
func (n *nemesis) round(ctx context.Context) bool {
	k := 1
	if n.combine && len(n.faults) > 1 && n.rng.IntN(2) == 0 {
		k = 2
	}
	minority := (len(n.procs.members) - 1) / 2
	if minority == 0 {
		minority = 1 // a one- or two-member cluster: one fault at a time
	}
	victims := n.rng.Perm(len(n.procs.members))
	kinds := slices.Clone(n.faults)
	n.rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	taken := map[*proc]bool{}
	free := func() int { return minority - len(taken) }
	next := func() *proc {
		for _, i := range victims {
			if m := n.procs.members[i]; !taken[m] {
				taken[m] = true
				return m
			}
		}
		return nil
	}
	var heals []func()
	for i := 0; i < k && i < len(kinds) && free() > 0; i++ {
		switch kinds[i] {
		case faultKill:
			if !n.wholeAgain(ctx) {
				n.logf("kill deferred: the copies the last killed member held are not all re-replicated yet")
				continue
			}
			m := next()
			n.procs.kill(m)
			n.count(faultKill)
			n.logf("kill -9 member %d (%s)", m.index, m.addr)
			heals = append(heals, func() {
				if err := n.procs.start(m, n.procs.seedsFor(m)); err != nil {
					n.logf("restart member %d failed: %v", m.index, err)
					return
				}
				n.logf("restart member %d (%s)", m.index, m.addr)
				n.lastKill = time.Now()
			})
		case faultPause:
			m := next()
			n.procs.signal(m, syscall.SIGSTOP, paused)
			n.count(faultPause)
			n.logf("SIGSTOP member %d (%s)", m.index, m.addr)
			heals = append(heals, func() {
				n.procs.signal(m, syscall.SIGCONT, running)
				n.logf("SIGCONT member %d", m.index)
			})
		case faultPartition:
			cut := []*proc{next()}
			for free() > 0 && n.rng.IntN(2) == 0 {
				cut = append(cut, next())
			}
			heals = append(heals, n.split(faultPartition, cut, false, "partition members %v from the rest"))
		case faultBridged:
			cut := []*proc{next()}
			for free() > 0 {
				cut = append(cut, next())
			}
			heals = append(heals, n.split(faultBridged, cut, false,
				"bridged partition: members %v cut off from the other members, the lite member reaching both sides"))
		case faultIsolate:
			heals = append(heals, n.split(faultIsolate, []*proc{next()}, true,
				"isolate member %v: cut off from every other member and the lite member, both ways"))
		case faultMinority:
			if len(taken) > 0 {
				continue // a minority side needs the whole budget
			}
			cut, why := n.minoritySide(minority, taken, next)
			heals = append(heals, n.split(faultMinority, cut, true,
				"minority partition: members %v ("+why+") cut off from the majority and the lite member"))
		case faultOneWay:
			cut := []*proc{next()}
			for free() > 0 && n.rng.IntN(2) == 0 {
				cut = append(cut, next())
			}
			heals = append(heals, n.oneWay(cut, n.rng.IntN(2) == 0))
		case faultSkew:
			m := next()
			d, was := drawSkew(n.rng, n.maxDrift), m.clockSkew()
			n.procs.stop(m, stopGrace)
			m.setSkew(d)
			n.count(faultSkew)
			if err := n.procs.start(m, n.procs.seedsFor(m)); err != nil {
				n.logf("restart member %d with clock skew %s failed: %v", m.index, signed(d), err)
				break
			}
			n.logf("restart member %d (%s) gracefully with clock skew %s (was %s)", m.index, m.addr, signed(d), signed(was))
		case faultClose:
			heals = append(heals, n.close(ctx, taken, next))
		}
	}
	hold := n.hold.draw(n.rng)
	passed := sleepCtx(ctx, hold)
	for _, h := range heals {
		h()
	}
	return passed
}

// wholeAgain reports whether the cluster holds every copy again since the
// last kill: a killed member restarts under a new identity, its copies
// gone, and until the others have removed it and re-replicated its ranges
// a second kill can take the last copies of a write two members
// acknowledged — a double failure, which Replicas(3) does not survive
// without an operator (AcceptLoss), not a fault this harness injects. It
// asks the members (PlacementStatus: one placement of all members,
// nothing syncing or waiting); without the lite member it waits out twice
// RemoveDeadAfter after the restart instead.
func (n *nemesis) wholeAgain(ctx context.Context) bool {
	if n.lastKill.IsZero() {
		return true
	}
	if n.sys == nil {
		return time.Since(n.lastKill) > 2*removeDeadAfter
	}
	_, missing := placementWhole(ctx, n.sys, len(n.procs.members))
	return missing == ""
}

// indices lists the members' indices.
func indices(ms []*proc) []int {
	out := make([]int, len(ms))
	for i, m := range ms {
		out[i] = m.index
	}
	return out
}

// split cuts the members of side off from every other member, both ways,
// and with client off from the lite member too, logs it with format
// (one %v: the side's indices) and returns its heal.
func (n *nemesis) split(fault string, side []*proc, client bool, format string) func() {
	for _, c := range side {
		for _, o := range n.procs.members {
			if !slices.Contains(side, o) {
				if err := n.part.cut(c, o); err != nil {
					n.logf("%s failed: %v", fault, err)
				}
			}
		}
		if client {
			if err := n.part.cutClient(c); err != nil {
				n.logf("%s failed: %v", fault, err)
			}
		}
	}
	idx := indices(side)
	n.count(fault)
	n.logf(format, idx)
	return func() {
		if err := n.part.heal(); err != nil {
			n.logf("heal failed: %v", err)
		}
		n.logf("heal %s of members %v", fault, idx)
	}
}

// oneWay drops what the members of side send to every other member
// (out) or what every other member sends to them (!out), and returns its
// heal. The lite member reaches every member.
func (n *nemesis) oneWay(side []*proc, out bool) func() {
	for _, c := range side {
		for _, o := range n.procs.members {
			if slices.Contains(side, o) {
				continue
			}
			from, to := c, o
			if !out {
				from, to = o, c
			}
			if err := n.part.oneWay(from, to); err != nil {
				n.logf("oneway failed: %v", err)
			}
		}
	}
	idx := indices(side)
	n.count(faultOneWay)
	if out {
		n.logf("one-way cut: nothing members %v send reaches the other members; what those send still reaches them", idx)
	} else {
		n.logf("one-way cut: nothing the other members send reaches members %v; what those send still reaches the others", idx)
	}
	return func() {
		if err := n.part.heal(); err != nil {
			n.logf("heal failed: %v", err)
		}
		n.logf("heal one-way cut of members %v", idx)
	}
}

// minoritySide picks size members to cut off: two replicas of a register
// (the first, in a seeded order, whose copies the lite member places on
// two members not taken), then members from next. why says which.
func (n *nemesis) minoritySide(size int, taken map[*proc]bool, next func() *proc) ([]*proc, string) {
	var side []*proc
	why := "no register found with two copies on them"
	if size >= 2 && n.sys != nil {
		for _, ki := range n.rng.Perm(max(n.regs, 1)) {
			key := fmt.Sprint("reg-", ki)
			pl, ok := n.sys.Placement(n.regKind, key, 0)
			if !ok {
				break
			}
			var reps []*proc
			for _, r := range pl.Replicas {
				if m := n.procs.byAddr(r.Addr); m != nil && !taken[m] {
					reps = append(reps, m)
				}
			}
			if len(reps) < 2 {
				continue
			}
			n.rng.Shuffle(len(reps), func(i, j int) { reps[i], reps[j] = reps[j], reps[i] })
			side = reps[:2]
			for _, m := range side {
				taken[m] = true
			}
			why = fmt.Sprintf("members %d and %d hold two of the %d copies of %s", side[0].index, side[1].index, len(pl.Replicas), key)
			break
		}
	}
	if size < 2 {
		why = "a one-member minority holds one copy"
	}
	for len(side) < size {
		side = append(side, next())
	}
	return side, why
}

// close stops a member gracefully (SIGTERM: it drains, hands its actors
// off and leaves) right after the workloads acknowledged a write to a key
// it owns, and returns the heal that restarts it (a new identity).
func (n *nemesis) close(ctx context.Context, taken map[*proc]bool, next func() *proc) func() {
	var m *proc
	var owned []kindKey
	if n.sys != nil {
		for _, i := range n.rng.Perm(len(n.procs.members)) {
			c := n.procs.members[i]
			if taken[c] {
				continue
			}
			owned = n.ownedBy(c)
			if len(owned) > 0 {
				m = c
				taken[c] = true
				break
			}
		}
	}
	if m == nil {
		m = next()
	}
	why := "owning no workload key"
	if len(owned) > 0 {
		why = fmt.Sprintf("owner of %d keys; no acknowledged write to one of them within %s", len(owned), closeAckBound)
		if kk, ok := n.acks.wait(ctx, owned, closeAckBound); ok {
			why = fmt.Sprintf("right after an acknowledged write to %s %s, which it owns", kk.kind, kk.key)
		}
	}
	n.procs.stop(m, stopGrace)
	n.count(faultClose)
	n.logf("close member %d (%s) gracefully (SIGTERM) %s", m.index, m.addr, why)
	return func() {
		if err := n.procs.start(m, n.procs.seedsFor(m)); err != nil {
			n.logf("restart member %d failed: %v", m.index, err)
			return
		}
		n.logf("restart member %d (%s) after close", m.index, m.addr)
	}
}

// ownedBy lists the workload keys whose owner, as the lite member sees
// it, is m.
func (n *nemesis) ownedBy(m *proc) []kindKey {
	var out []kindKey
	for _, kk := range n.keys {
		if pl, ok := n.sys.Placement(kk.kind, kk.key, 0); ok && pl.Owner.Addr == m.addr {
			out = append(out, kk)
		}
	}
	return out
}

// drawSkew is a clock skew drawn uniformly from [-maxDrift/2, +maxDrift/2]
// in whole milliseconds (the HLC's resolution).
func drawSkew(rng *rand.Rand, maxDrift time.Duration) time.Duration {
	half := int64(maxDrift / 2 / time.Millisecond)
	if half <= 0 {
		return 0
	}
	return time.Duration(rng.Int64N(2*half+1)-half) * time.Millisecond
}

func (n *nemesis) count(f string) {
	n.mu.Lock()
	n.counts[f]++
	n.mu.Unlock()
}

// sleepCtx waits d or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
