package virtual_test

import (
	"context"
	"fmt"
	"github.com/casty-go/casty/internal/procstat"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
)

// Seeded fault schedules on virtual time, against the collections: five
// members with casty's default configuration (RemoveDeadAfter 10 s) and a
// lite member, and clients of a Set, a Counter, a Register,
// a Map, a Queue and a Lock on the lite member and on the members in
// turn, while a
// schedule crashes, pauses, stops, isolates, splits, one-way-cuts, slows,
// skews and loses their links, each fault held from 100 ms to three times
// RemoveDeadAfter. Once the schedule has ended and the cluster has
// settled (or two virtual minutes have passed), no acknowledged write may
// read back absent and the register's history must be linearizable
// (workloads_test.go); a read that never answers fails the seed only if
// the cluster settled (otherwise its ranges wait, by casty's rule, for
// the copies of members removed as dead, and the write is left
// unverified). A failure names the seed and how to replay it.
// CASTY_COLLECTION_SEEDS=N runs N seeds from CASTY_COLLECTION_FIRST_SEED
// (default 1), CASTY_COLLECTION_SEED=S replays seed S alone,
// CASTY_COLLECTION_LENGTH sets the schedule's length
// (default 3m of virtual time); CASTY_COLLECTION_VERBOSE=1 logs each step
// of the schedule as it is applied, and CASTY_COLLECTION_WORKLOADS runs
// only the workloads it names (workloads_test.go).

const (
	// removeAfter is the members' RemoveDeadAfter: short, so that a
	// schedule's long faults outlast it and members are removed and
	// replaced.
	removeAfter = 10 * time.Second
	// pace is how long a client waits between two operations.
	pace = 250 * time.Millisecond
	// opTimeout bounds each client operation.
	opTimeout = time.Second
	// clientsPerLoad is how many clients each workload runs: client 0
	// calls through the lite member, the others through the members in
	// turn.
	clientsPerLoad = 4
	// settleWithin bounds the wait for the cluster to settle after the
	// schedule, and readBackWithin each workload's final reads.
	settleWithin   = 2 * time.Minute
	readBackWithin = time.Minute
)

// runConfig is what a run varies: the schedule's shape and the members'
// build.
type runConfig struct {
	length  time.Duration
	maxHold time.Duration
	kinds   []castytest.FaultKind // nil: every kind
	mutant  string                // castytest.Mutant; "" for none
	// after is how long the clients go on once the schedule has ended.
	after time.Duration
}

// defaultRun is TestCollectionsOnVirtualTime's configuration, the same
// shape as castytest/virtual's runSchedule.
func defaultRun(length time.Duration) runConfig {
	return runConfig{length: length, maxHold: 3 * removeAfter}
}

// rig is what a workload runs against, inside the bubble.
type rig struct {
	t    *testing.T // the bubble's: report only setup errors on it
	c    *castytest.Cluster
	lite *casty.System
	stop chan struct{}
	wg   sync.WaitGroup
	t0   time.Time // when the schedule started
}

// since is the virtual time since the schedule started, as its faults'
// At count it.
func (r *rig) since() time.Duration { return time.Since(r.t0) }

// via is the node client's i-th operation goes through: the lite member
// for client 0, the members in turn for the others (a restarted member's
// new System once it is back).
func (r *rig) via(client, i int) *casty.System {
	if client == 0 {
		return r.lite
	}
	return r.c.Member((client + i) % r.c.N())
}

// clients starts clientsPerLoad goroutines, each calling op(client, i)
// for its i-th operation every pace, with a context of opTimeout, until
// the rig stops.
func (r *rig) clients(op func(ctx context.Context, client, i int)) {
	for client := range clientsPerLoad {
		r.wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-r.stop:
					return
				case <-time.After(pace):
				}
				ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
				op(ctx, client, i)
				cancel()
			}
		})
	}
}

// opener opens one facade of a collection per System and keeps it: a
// facade confirms the catalog entry on its first call only.
type opener[F any] struct {
	t    *testing.T
	open func(*casty.System) (F, error)
	mu   sync.Mutex
	m    map[*casty.System]F
}

func newOpener[F any](t *testing.T, open func(*casty.System) (F, error)) *opener[F] {
	return &opener[F]{t: t, open: open, m: map[*casty.System]F{}}
}

// on returns the facade on sys, opening it on first use. An open that
// fails is a bug in the test (a bad name or option): it is reported and
// the zero facade returned.
func (o *opener[F]) on(sys *casty.System) (F, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if f, ok := o.m[sys]; ok {
		return f, true
	}
	f, err := o.open(sys)
	if err != nil {
		o.t.Errorf("opening a collection: %v", err)
		return f, false
	}
	o.m[sys] = f
	return f, true
}

// retry calls read, each try with a 5 s deadline, until it succeeds or
// the virtual deadline has passed, and returns its last error.
func retry(deadline time.Time, read func(ctx context.Context) error) error {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := read(ctx)
		cancel()
		if err == nil || !time.Now().Before(deadline) {
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// inParallel calls f for each of items on 8 goroutines and waits.
func inParallel[T any](items []T, f func(T)) {
	work := make(chan T)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for it := range work {
				f(it)
			}
		})
	}
	for _, it := range items {
		work <- it
	}
	close(work)
	wg.Wait()
}

// seedRun is what one seed did.
type seedRun struct {
	loads    []workload
	schedule castytest.Schedule
	settled  bool
	virtual  time.Duration
}

// runSeed runs every workload of loads against one seed's schedule in a
// synctest bubble, and leaves them holding what their checks need.
func runSeed(t *testing.T, seed int64, cfg runConfig, loads []workload) seedRun {
	run := seedRun{loads: loads}
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		ccfg := casty.DefaultConfig()
		ccfg.Replication.RemoveDeadAfter = removeAfter
		opts := []castytest.ClusterOption{castytest.Seed(seed), castytest.MemberOptions(casty.WithConfig(ccfg))}
		if cfg.mutant != "" {
			opts = append(opts, castytest.Mutant(cfg.mutant))
		}
		c := castytest.NewCluster(t, 5, opts...)
		s := castytest.NewSchedule(seed, castytest.ScheduleConfig{Members: 5, Length: cfg.length, MaxHold: cfg.maxHold, Kinds: cfg.kinds})
		run.schedule = s
		r := &rig{t: t, c: c, lite: c.Lite(), stop: make(chan struct{}), t0: time.Now()}
		for _, l := range loads {
			l.start(r)
		}
		var logf func(string, ...any)
		if os.Getenv("CASTY_COLLECTION_VERBOSE") != "" {
			logf = t.Logf
		}
		c.Run(s, logf)
		if cfg.after > 0 {
			time.Sleep(cfg.after)
		}
		// The clients stop with the schedule (or cfg.after later): calls
		// to keys whose ranges wait for removed members' copies would
		// only pile up indeterminate operations.
		close(r.stop)
		r.wg.Wait()
		// Settled: every member places all five and is ready.
		deadline := time.Now().Add(settleWithin)
		for !run.settled && time.Now().Before(deadline) {
			run.settled = true
			for _, m := range c.Members() {
				if m.Replication().Placed != 5 || !m.Health().Ready {
					run.settled = false
				}
			}
			time.Sleep(time.Second)
		}
		if !run.settled {
			for i, m := range c.Members() {
				st := m.Replication()
				t.Logf("member %d unsettled: sees %d members, places %d (version %d), waiting %v, health %+v", i, len(m.Members()), st.Placed, st.PlacementVersion, st.Waiting, m.Health())
			}
		}
		// A shard's Read(One) is answered from its owner's activation, which
		// may still hold the state from before another owner served the key
		// while the views disagreed; it is fresh once that owner's
		// messages reach it or its next anti-entropy pass has run
		// (replica/SPEC.md, "Read(One) and a deposed owner"). So the final
		// reads wait one RepairInterval after the cluster settled: from
		// then on the promise is that they see every acknowledged write.
		time.Sleep(ccfg.Replication.RepairInterval + time.Second)
		// What every acknowledged write left: read back through the lite
		// member, each workload in turn.
		for _, l := range loads {
			l.final(r, time.Now().Add(readBackWithin))
		}
		run.virtual = time.Since(start)
	})
	return run
}

// visPath is where l's check may write its visualisation: castytest's
// place for t's, with the workload's name.
func visPath(t *testing.T, l workload) string {
	return strings.TrimSuffix(castytest.VisualizationPath(t), ".html") + "-" + l.name() + ".html"
}

// seeds lists the seeds TestCollectionsOnVirtualTime runs:
// CASTY_COLLECTION_SEEDS of them (default 3) from CASTY_COLLECTION_FIRST_SEED
// (default 1: shards of one soak run in parallel), or CASTY_COLLECTION_SEED
// alone.
// replayEnv is the environment a seed ran in, beyond its seed, for its
// replay line: a replay under other settings (a scheduler with more Ps,
// another length) may take another course.
func replayEnv() string {
	out := ""
	for _, v := range []string{"GOMAXPROCS", "CASTY_COLLECTION_LENGTH"} {
		if s := os.Getenv(v); s != "" {
			out += v + "=" + s + " "
		}
	}
	return out
}

func seeds() []int64 {
	var out []int64
	first := int64(envInt("CASTY_COLLECTION_FIRST_SEED", 1))
	for i := range envInt("CASTY_COLLECTION_SEEDS", 3) {
		out = append(out, first+int64(i))
	}
	if s := os.Getenv("CASTY_COLLECTION_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err == nil {
			out = []int64{v}
		}
	}
	return out
}

// TestCollectionsOnVirtualTime runs every workload against each seed's
// fault schedule and logs, per seed, a verdict per workload and what the
// seed cost.
func TestCollectionsOnVirtualTime(t *testing.T) {
	length := 3 * time.Minute
	if s := os.Getenv("CASTY_COLLECTION_LENGTH"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("CASTY_COLLECTION_LENGTH=%q: %v", s, err)
		}
		length = d
	}
	unsettled, inconclusive := 0, 0
	all := seeds()
	for _, seed := range all {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			cpu0 := procstat.Self()
			run := runSeed(t, seed, defaultRun(length), workloads())
			cpu := procstat.Self() - cpu0
			var failures []string
			for _, l := range run.loads {
				// Checked after the bubble: porcupine's CheckTimeout is
				// real time only outside it.
				v := l.check(judge{vis: visPath(t, l), settled: run.settled})
				for _, u := range v.unverified {
					t.Logf("seed %d %s: unverified (the cluster did not settle): %s", seed, l.name(), u)
				}
				t.Logf("seed %d %s: %s", seed, l.name(), v.summary)
				for _, f := range v.failures {
					failures = append(failures, l.name()+": "+f)
				}
				if v.inconclusive {
					inconclusive++
				}
			}
			if !run.settled {
				unsettled++
			}
			t.Logf("seed %d: %d faults; settled: %v; %v virtual in %v CPU (%.0f virtual s per CPU s). Replay: %sCASTY_COLLECTION_SEED=%d",
				seed, len(run.schedule.Faults), run.settled, run.virtual.Round(time.Second), cpu.Round(time.Millisecond), run.virtual.Seconds()/cpu.Seconds(), replayEnv(), seed)
			if len(failures) > 0 {
				t.Logf("%s", run.schedule)
				t.Errorf("seed %d:\n  %s\nreplay: %sCASTY_COLLECTION_SEED=%d go test -count=1 -run TestCollectionsOnVirtualTime -v ./collections/virtual",
					seed, strings.Join(failures, "\n  "), replayEnv(), seed)
			}
		})
	}
	t.Logf("%d of %d seeds did not settle within %v after their schedule (logged per member above); %d register checks inconclusive (the checker's time ran out)",
		unsettled, len(all), settleWithin, inconclusive)
}
