package castytest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// FaultKind is what a Fault does.
type FaultKind uint8

// The faults a Schedule draws from.
const (
	// Crash crashes a member; when the fault ends a new process (a new
	// identity, no state) starts at its address.
	Crash FaultKind = iota + 1
	// Pause freezes a member's network both ways (SIGSTOP), then resumes it.
	Pause
	// Stop closes a member gracefully (a leave with handoff), then starts
	// a new process at its address.
	Stop
	// Isolate cuts one member off from every other node.
	Isolate
	// Split partitions the members into a minority (Fault.Members) and
	// the rest, the lite member with the rest.
	Split
	// OneWay holds everything one member sends to the others, while what
	// they send it flows (CutOneWay).
	OneWay
	// Lossy resets one member's connections at random (Lossy, p = 0.05).
	Lossy
	// Slow delays one member's links by Fault.Delay (Delay).
	Slow
	// Skew offsets one member's clock by Fault.Delay, within half of
	// MaxClockDrift (Skew).
	Skew
)

var faultNames = [...]string{Crash: "crash", Pause: "pause", Stop: "stop", Isolate: "isolate", Split: "split",
	OneWay: "one-way", Lossy: "lossy", Slow: "slow", Skew: "skew"}

// String names the fault kind.
func (k FaultKind) String() string {
	if int(k) < len(faultNames) && faultNames[k] != "" {
		return faultNames[k]
	}
	return fmt.Sprintf("fault(%d)", uint8(k))
}

// Fault is one fault of a schedule: Kind strikes Members at At (from the
// schedule's start) and ends Hold later.
type Fault struct {
	Kind    FaultKind
	At      time.Duration
	Hold    time.Duration
	Members []int
	Delay   time.Duration // Slow: the link delay; Skew: the clock offset
}

// String renders the fault as "12.5s crash [2] for 40s".
func (f Fault) String() string {
	s := fmt.Sprintf("%v %s %v for %v", f.At, f.Kind, f.Members, f.Hold)
	if f.Delay != 0 {
		s += fmt.Sprintf(" (%v)", f.Delay)
	}
	return s
}

// ScheduleConfig shapes NewSchedule's draws. Zero fields take the
// defaults given.
type ScheduleConfig struct {
	// Members is the cluster's size (required).
	Members int
	// Length is how long faults keep starting. Default 10 minutes.
	Length time.Duration
	// Every is the mean time between two faults' starts. Default 10 s.
	Every time.Duration
	// MinHold and MaxHold bound how long a fault lasts, drawn
	// log-uniformly between them, so short blips and faults held several
	// times Config.Replication.RemoveDeadAfter both occur. Defaults 100 ms and 90 s.
	MinHold, MaxHold time.Duration
	// Kinds are the faults drawn from. Default all.
	Kinds []FaultKind
	// MaxDrift bounds Skew offsets to ±MaxDrift/2. Default 500 ms
	// (Config.Replication.MaxClockDrift's default).
	MaxDrift time.Duration
	// MaxStruck is how many members faults may strike at once. Default a
	// minority, (Members-1)/2, so that a majority is always up. More lets
	// faults overlap into double failures: a range that loses a read
	// quorum of its copies then waits (for them, or for
	// System.AcceptLoss), so histories must stay linearizable, but the
	// cluster may not settle.
	MaxStruck int
}

func (c ScheduleConfig) withDefaults() ScheduleConfig {
	if c.Length <= 0 {
		c.Length = 10 * time.Minute
	}
	if c.Every <= 0 {
		c.Every = 10 * time.Second
	}
	if c.MinHold <= 0 {
		c.MinHold = 100 * time.Millisecond
	}
	if c.MaxHold <= 0 {
		c.MaxHold = 90 * time.Second
	}
	if c.MaxHold < c.MinHold {
		c.MaxHold = c.MinHold
	}
	if len(c.Kinds) == 0 {
		for k := Crash; k <= Skew; k++ {
			c.Kinds = append(c.Kinds, k)
		}
	}
	if c.MaxStruck <= 0 {
		c.MaxStruck = (c.Members - 1) / 2
	}
	if c.MaxDrift <= 0 {
		c.MaxDrift = 500 * time.Millisecond
	}
	return c
}

// Schedule is a seeded list of faults, in order of their start.
type Schedule struct {
	Seed   int64
	Faults []Fault
	Length time.Duration // when the last fault may start
}

// String lists the faults, one a line, after the seed.
func (s Schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "schedule seed %d, %d faults over %v:\n", s.Seed, len(s.Faults), s.Length)
	for _, f := range s.Faults {
		fmt.Fprintf(&b, "  %s\n", f)
	}
	return b.String()
}

// NewSchedule draws a fault schedule from seed: the same seed and config
// give the same schedule. Faults overlap, but never strike more than
// ScheduleConfig.MaxStruck members at once (a Split's minority counts as
// struck), by default a minority, so a majority is always up: what a
// schedule tests is that nothing acknowledged is lost and every history
// stays linearizable while faults come and go.
func NewSchedule(seed int64, cfg ScheduleConfig) Schedule {
	cfg = cfg.withDefaults()
	if cfg.Members < 1 {
		panic("castytest: NewSchedule: ScheduleConfig.Members must be at least 1")
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5c4ed))
	minority := (cfg.Members - 1) / 2
	type busy struct {
		until   time.Duration
		members []int
	}
	var active []busy
	s := Schedule{Seed: seed, Length: cfg.Length}
	for at := time.Duration(rng.ExpFloat64() * float64(cfg.Every)); at < cfg.Length; at += time.Duration(rng.ExpFloat64() * float64(cfg.Every)) {
		active = slices.DeleteFunc(active, func(b busy) bool { return b.until <= at })
		struck := map[int]bool{}
		for _, b := range active {
			for _, m := range b.members {
				struck[m] = true
			}
		}
		var free []int
		for m := range cfg.Members {
			if !struck[m] {
				free = append(free, m)
			}
		}
		room := cfg.MaxStruck - len(struck)
		if room < 1 || len(free) == 0 {
			continue
		}
		k := cfg.Kinds[rng.IntN(len(cfg.Kinds))]
		lo, hi := float64(cfg.MinHold), float64(cfg.MaxHold)
		hold := time.Duration(lo * math.Pow(hi/lo, rng.Float64())).Round(time.Millisecond)
		f := Fault{Kind: k, At: at.Round(time.Millisecond), Hold: hold}
		rng.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
		n := 1
		if k == Split {
			n = 1 + rng.IntN(max(1, min(room, minority, len(free))))
		}
		f.Members = slices.Sorted(slices.Values(free[:n]))
		switch k {
		case Slow:
			f.Delay = time.Duration(1+rng.IntN(500)) * time.Millisecond
		case Skew:
			f.Delay = time.Duration(rng.Int64N(int64(cfg.MaxDrift)) - int64(cfg.MaxDrift)/2).Round(time.Millisecond)
		}
		s.Faults = append(s.Faults, f)
		active = append(active, busy{until: at + hold, members: f.Members})
	}
	return s
}

// Run applies s to the cluster: each fault at its time and its end Hold
// later, sleeping in between (on a testing/synctest bubble's clock, an
// hour of schedule takes seconds), then ends every fault still on, so
// that every member is up, reachable and at its own clock when it
// returns. A member crashed or stopped comes back as a new process at its
// address when its fault ends; a start that fails (its seeds out of reach)
// is tried again at the next step, and after the schedule every second
// for up to two minutes, then fails the test. logf, when not nil, is told
// each step. Run does not wait for the cluster to settle afterwards.
func (c *Cluster) Run(s Schedule, logf func(format string, args ...any)) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	type step struct {
		at  time.Duration
		end bool
		f   Fault
	}
	var steps []step
	for _, f := range s.Faults {
		steps = append(steps, step{f.At, false, f}, step{f.At + f.Hold, true, f})
	}
	slices.SortStableFunc(steps, func(a, b step) int { return int(a.at - b.at) })
	start := time.Now()
	var down []int // members to start again
	for _, st := range steps {
		if d := st.at - time.Since(start); d > 0 {
			time.Sleep(d)
		}
		down, _ = c.relaunch(down, logf)
		if st.end {
			logf("%v end %s", time.Since(start).Round(time.Millisecond), st.f)
			// A crashed or stopped member comes back now, not at the next
			// step: a late start would stretch its fault into the next
			// one's and turn two faults in turn into a double failure.
			down, _ = c.relaunch(append(down, c.end(st.f)...), logf)
		} else {
			logf("%v %s", time.Since(start).Round(time.Millisecond), st.f)
			c.begin(st.f)
		}
	}
	c.HealAll()
	for i := range c.N() {
		c.Resume(i)
		c.Skew(i, 0)
	}
	// Members still down start again; one that cannot within
	// restartWithin fails the test rather than keep the run going forever
	// (the clients would run on with it, for hours of virtual time).
	var last error
	for deadline := time.Now().Add(restartWithin); len(down) > 0; {
		if down, last = c.relaunch(down, logf); len(down) == 0 {
			break
		}
		if time.Now().After(deadline) {
			c.t.Errorf("castytest: members %v could not start again within %v after the schedule (seed %d): %v", down, restartWithin, c.seed, last)
			return
		}
		time.Sleep(time.Second)
	}
}

// restartWithin bounds how long Run keeps trying to start again, after
// the schedule, a member whose restart failed.
const restartWithin = 2 * time.Minute

// relaunch starts a new process in each slot of down that is down and
// returns those whose start failed, with the last start's error. A slot
// may be listed twice, or be up already: a Crash or Stop that struck a
// member already down (a step run late, past a failed restart) ends with
// that member listed again, and a second process on its address would
// fail to listen for as long as the first runs.
func (c *Cluster) relaunch(down []int, logf func(string, ...any)) (again []int, last error) {
	for _, i := range down {
		c.mu.Lock()
		up := !c.members[i].crashed
		c.mu.Unlock()
		if up || slices.Contains(again, i) {
			continue
		}
		seeds, _ := c.liveBut(i)
		sys, err := c.start(i, seeds)
		if err != nil {
			logf("restart of member %d failed, tried again later: %v", i, err)
			again, last = append(again, i), err
			continue
		}
		c.mu.Lock()
		c.members[i].sys, c.members[i].crashed = sys, false
		c.mu.Unlock()
	}
	return again, last
}

func (c *Cluster) begin(f Fault) {
	lite := c.N()
	switch f.Kind {
	case Crash:
		c.Crash(f.Members[0])
	case Stop:
		c.stop(f.Members[0])
	case Pause:
		c.Pause(f.Members[0])
	case Isolate:
		c.Partition(f.Members, c.others(f.Members, lite))
	case Split:
		c.Partition(f.Members, c.others(f.Members, lite))
	case OneWay:
		for _, j := range c.others(f.Members, lite) {
			c.CutOneWay(f.Members[0], j)
		}
	case Lossy:
		for _, j := range c.others(f.Members, lite) {
			c.Lossy(f.Members[0], j, 0.05)
		}
	case Slow:
		for _, j := range c.others(f.Members, lite) {
			c.Delay(f.Members[0], j, f.Delay)
		}
	case Skew:
		c.Skew(f.Members[0], f.Delay)
	}
}

// end ends f and returns the members to start again.
func (c *Cluster) end(f Fault) []int {
	switch f.Kind {
	case Crash, Stop:
		return f.Members
	case Pause:
		c.Resume(f.Members[0])
	case Skew:
		c.Skew(f.Members[0], 0)
	default:
		for _, i := range f.Members {
			for _, j := range c.others(f.Members, c.N()) {
				c.Heal(i, j)
			}
		}
	}
	return nil
}

// others lists the nodes not in ms: every other member and the lite
// member (node lite), started or not.
func (c *Cluster) others(ms []int, lite int) []int {
	var out []int
	for j := range c.N() {
		if !slices.Contains(ms, j) {
			out = append(out, j)
		}
	}
	return append(out, lite)
}

// stop closes member i gracefully (its leave and handoff run, bounded by
// its DrainTimeout and HandoffTimeout) and marks its slot down.
func (c *Cluster) stop(i int) {
	sys := c.takeDown(i)
	if sys == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = sys.Close(ctx)
}
