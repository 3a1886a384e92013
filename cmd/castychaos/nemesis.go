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
)

// The faults a nemesis can inject.
const (
	faultKill      = "kill"      // SIGKILL a member, restart it (new identity) after the hold
	faultPause     = "pause"     // SIGSTOP a member, SIGCONT after the hold
	faultPartition = "partition" // cut a minority of members off the rest, heal after the hold
	faultSkew      = "skew"      // restart a member gracefully with a new clock skew within ±maxDrift/2
)

var allFaults = []string{faultKill, faultPause, faultPartition, faultSkew}

// stopGrace bounds a graceful stop (SIGTERM) before SIGKILL: casty's
// Close drains for DrainTimeout (2 s in clusterConfig) and then leaves.
const stopGrace = 10 * time.Second

// nemesis injects faults: every interval (jittered ±50 %) it picks one
// fault, or with combine two at once on different members, holds them
// for 1–3 s and heals them. It never touches more than a minority of the
// members at once, so a majority stays able to serve. Every choice comes
// from its seeded rng.
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
	maxDrift time.Duration // bound on the skew between two members' clocks
	rng      *rand.Rand
	out      io.Writer
	start    time.Time

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
// ended it, the faults are healed all the same).
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
	var heals []func()
	used := 0
	for i := 0; i < k && i < len(kinds) && used < minority; i++ {
		m := n.procs.members[victims[used]]
		used++
		switch kinds[i] {
		case faultKill:
			n.procs.kill(m)
			n.count(faultKill)
			n.logf("kill -9 member %d (%s)", m.index, m.addr)
			heals = append(heals, func() {
				if err := n.procs.start(m, n.procs.seedsFor(m)); err != nil {
					n.logf("restart member %d failed: %v", m.index, err)
					return
				}
				n.logf("restart member %d (%s)", m.index, m.addr)
			})
		case faultPause:
			n.procs.signal(m, syscall.SIGSTOP, paused)
			n.count(faultPause)
			n.logf("SIGSTOP member %d (%s)", m.index, m.addr)
			heals = append(heals, func() {
				n.procs.signal(m, syscall.SIGCONT, running)
				n.logf("SIGCONT member %d", m.index)
			})
		case faultPartition:
			cut := []*proc{m}
			for used < minority && n.rng.IntN(2) == 0 {
				cut = append(cut, n.procs.members[victims[used]])
				used++
			}
			var idx []int
			for _, c := range cut {
				idx = append(idx, c.index)
				for _, o := range n.procs.members {
					if !slices.Contains(cut, o) {
						if err := n.part.cut(c, o); err != nil {
							n.logf("partition failed: %v", err)
						}
					}
				}
			}
			n.count(faultPartition)
			n.logf("partition members %v from the rest", idx)
			heals = append(heals, func() {
				if err := n.part.heal(); err != nil {
					n.logf("heal failed: %v", err)
				}
				n.logf("heal partition of members %v", idx)
			})
		case faultSkew:
			d, was := drawSkew(n.rng, n.maxDrift), m.clockSkew()
			n.procs.stop(m, stopGrace)
			m.setSkew(d)
			n.count(faultSkew)
			if err := n.procs.start(m, n.procs.seedsFor(m)); err != nil {
				n.logf("restart member %d with clock skew %s failed: %v", m.index, signed(d), err)
				break
			}
			n.logf("restart member %d (%s) gracefully with clock skew %s (was %s)", m.index, m.addr, signed(d), signed(was))
		}
	}
	hold := time.Second + time.Duration(n.rng.Int64N(int64(2*time.Second)))
	passed := sleepCtx(ctx, hold)
	for _, h := range heals {
		h()
	}
	return passed
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
