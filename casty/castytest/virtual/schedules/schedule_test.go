package schedules_test

import (
	"cmp"
	"context"
	"fmt"
	"github.com/casty-go/casty/internal/procstat"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
)

// Seeded fault schedules on virtual time: five members with casty's
// default configuration (RemoveDeadAfter 10 s, so that long faults outlast
// it) and a lite member run a register workload (majority writes and
// reads) while a schedule crashes, pauses, stops, isolates, splits,
// one-way-cuts, slows, skews and loses their links, each fault held from
// 100 ms to three times RemoveDeadAfter. Every history must be
// linearizable. CASTY_SCHEDULE_CONFIG picks the registers' replication
// (r3, r3-all, r5, or mixed: all three in one cluster; main_test.go);
// CASTY_SCHEDULE_SEEDS=N runs N seeds (from CASTY_SCHEDULE_FIRST_SEED,
// default 1: shards of one soak run in parallel), CASTY_SCHEDULE_SEED=S
// replays seed S alone, CASTY_SCHEDULE_LENGTH sets the schedule's length
// (default 3m of virtual time), CASTY_SCHEDULE_PACE each client's pause
// between operations (default 500ms). .ci/run runs 300 10-minute mixed
// schedules at one operation per client a second.

// scheduleRun is what one seed did.
type scheduleRun struct {
	h        *castytest.History[castytest.RegisterOp[int], castytest.RegisterResult[int]]
	faults   int
	settled  bool
	virtual  time.Duration
	schedule castytest.Schedule
}

const (
	scheduleRemoveAfter = 10 * time.Second
	// schedulePace is how long each client (four per register kind)
	// waits between two operations: 8 a second per kind, 4,800 in a
	// 10-minute schedule.
	schedulePace = 500 * time.Millisecond
	// scheduleCheck bounds porcupine's search of one history: a history
	// it cannot decide in this time (many indeterminate operations while
	// ranges wait) counts as undecided.
	scheduleCheck = 10 * time.Second
)

// scheduleStall bounds the wall time of one seed. A seed takes seconds;
// one whose bubble never lets the virtual clock advance (goroutines that
// never block for good) would otherwise run until the test binary's
// timeout. Past it the process prints every goroutine and fails, naming
// the seed.
const scheduleStall = 5 * time.Minute

func runSchedule(t *testing.T, seed int64, length time.Duration) scheduleRun {
	var run scheduleRun
	// The watchdog's timer is made outside the bubble: it runs on the
	// real clock.
	stall := time.AfterFunc(scheduleStall, func() {
		buf := make([]byte, 64<<20)
		os.Stderr.Write(buf[:runtime.Stack(buf, true)])
		panic(fmt.Sprintf("schedule seed %d: no verdict after %v of wall time; every goroutine is printed above. Replay: %sCASTY_SCHEDULE_CONFIG=%s CASTY_SCHEDULE_SEED=%d",
			seed, scheduleStall, replayEnv(), configName(), seed))
	})
	defer stall.Stop()
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		cfg := casty.DefaultConfig()
		cfg.Replication.RemoveDeadAfter = scheduleRemoveAfter
		c := castytest.NewCluster(t, 5, castytest.Seed(seed), castytest.MemberOptions(casty.WithConfig(cfg)))
		s := castytest.NewSchedule(seed, castytest.ScheduleConfig{Members: 5, Length: length, MaxHold: 3 * scheduleRemoveAfter})
		run.schedule, run.faults = s, len(s.Faults)
		// Eight registers per kind, four clients each; with several kinds
		// a key names its kind's configuration (r3/s0).
		keys := make([][]regKey, len(kinds))
		for j, k := range kinds {
			prefix := ""
			if len(kinds) > 1 {
				prefix = k.label + "/"
			}
			for i := range 8 {
				keys[j] = append(keys[j], regKey{k.kind, fmt.Sprintf("%ss%d", prefix, i)})
			}
		}
		h := castytest.NewHistory[castytest.RegisterOp[int], castytest.RegisterResult[int]]()
		lite := c.Lite()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		every := pace()
		for client := range 4 * len(kinds) {
			mine, sub := keys[client%len(kinds)], client/len(kinds)
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					case <-time.After(every):
					}
					via := lite
					if sub > 0 {
						via = c.Member((sub + i) % c.N())
					}
					_ = registerOp(h, mine, via, client, sub, i)
				}
			})
		}
		c.Run(s, nil)
		// The clients stop with the schedule: calls to keys whose ranges
		// wait for removed members' copies would only pile up
		// indeterminate operations for the checker.
		close(stop)
		wg.Wait()
		// Settled: every member places all five and is ready. A member
		// whose syncs wait for a crashed process's copies (an identity no
		// member has any more: castytest restarts a crash under a new one)
		// waits for good, short of AcceptLoss: no use waiting longer.
		deadline := time.Now().Add(2 * time.Minute)
		for !run.settled && time.Now().Before(deadline) {
			run.settled = true
			live := map[string]bool{}
			for _, m := range c.Members() {
				live[m.ID()] = true
			}
			forGood := false
			for _, m := range c.Members() {
				st := m.Replication()
				if st.Placed != 5 || !m.Health().Ready {
					run.settled = false
				}
				for _, w := range st.Waiting {
					forGood = forGood || slices.ContainsFunc(w.Members, func(id string) bool { return !live[id] })
				}
			}
			if !run.settled && forGood {
				break
			}
			time.Sleep(time.Second)
		}
		if !run.settled {
			t.Logf("seed %d's schedule:\n%v", seed, s)
			for i, m := range c.Members() {
				st := m.Replication()
				t.Logf("member %d unsettled: sees %d members, places %d (version %d), sync rounds %d, copy syncs %d, waiting %v, health %+v", i, len(m.Members()), st.Placed, st.PlacementVersion, st.SyncRounds, st.CopySyncs, st.Waiting, m.Health())
			}
		}
		// Final reads through the lite member: what every key holds now.
		for _, key := range slices.Concat(keys...) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, _ = h.Record(99, castytest.ReadOp[int](key.key), func() (castytest.RegisterResult[int], error) {
				v, err := casty.Call0(ctx, key.kind.Ref(lite, key.key), (*Reg).Get)
				return castytest.Read(v), err
			})
			cancel()
		}
		run.h, run.virtual = h, time.Since(start)
	})
	return run
}

func TestSchedulesOnVirtualTime(t *testing.T) {
	seeds := []int64{1, 2, 3}
	if s := os.Getenv("CASTY_SCHEDULE_SEEDS"); s != "" {
		n, _ := strconv.Atoi(s)
		first := int64(1)
		if f := os.Getenv("CASTY_SCHEDULE_FIRST_SEED"); f != "" {
			first, _ = strconv.ParseInt(f, 10, 64)
		}
		seeds = nil
		for i := range n {
			seeds = append(seeds, first+int64(i))
		}
	}
	if s := os.Getenv("CASTY_SCHEDULE_SEED"); s != "" {
		v, _ := strconv.ParseInt(s, 10, 64)
		seeds = []int64{v}
	}
	length := 3 * time.Minute
	if s := os.Getenv("CASTY_SCHEDULE_LENGTH"); s != "" {
		length, _ = time.ParseDuration(s)
	}
	unsettled, inconclusive, failed := 0, 0, 0
	var cpuAll, virtualAll time.Duration
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			cpu0 := procstat.Self()
			run := runSchedule(t, seed, length)
			cpu := procstat.Self() - cpu0
			// Only a history shown not linearizable fails the seed: one the
			// checker cannot decide within CheckTimeout (many indeterminate
			// writes while ranges wait) is counted as inconclusive, as the
			// replica simulator counts them.
			res := castytest.Verify(castytest.RegisterModel(0), run.h.Ops(), scheduleCheck)
			switch res.Verdict {
			case castytest.NotLinearizable:
				failed++
				path := castytest.VisualizationPath(t)
				_ = res.WriteHTML(path)
				t.Errorf("seed %d: the history of %d operations is not linearizable; visualisation: %s", seed, res.Ops, path)
				logFirstViolation(t, run.h.Ops())
			case castytest.Unknown:
				inconclusive++
			}
			if t.Failed() {
				t.Logf("%s", run.schedule)
			}
			if !run.settled {
				unsettled++
			}
			cpuAll += cpu
			virtualAll += run.virtual
			if !verbose && res.Verdict == castytest.Linearizable && run.settled {
				return
			}
			t.Logf("seed %d (%s): %d faults, %d operations (%d indeterminate): %s; settled after: %v; %v virtual in %v CPU (%.0f virtual s per CPU s). Replay: %sCASTY_SCHEDULE_CONFIG=%s CASTY_SCHEDULE_SEED=%d",
				seed, configName(), run.faults, res.Ops, res.Indeterminate, res.Verdict, run.settled, run.virtual.Round(time.Second), cpu.Round(time.Millisecond), run.virtual.Seconds()/cpu.Seconds(), replayEnv(), configName(), seed)
		})
	}
	t.Logf("%s: %d seeds of %v schedules: %d not linearizable, %d undecided (the checker's time ran out), %d did not settle (within 2 virtual minutes after their schedule, or ever: their syncs wait for the copies of crashed members, logged per member above; AcceptLoss would end it); %v virtual in %v CPU (%.0f virtual s per CPU s)",
		configName(), len(seeds), length, failed, inconclusive, unsettled, virtualAll.Round(time.Second), cpuAll.Round(time.Millisecond), virtualAll.Seconds()/max(cpuAll.Seconds(), 1e-9))
}

// verbose logs every seed's outcome, not only those of seeds that failed,
// were undecided or did not settle (-v and CASTY_SCHEDULE_VERBOSE=1, or a
// single seed replayed).
var verbose = os.Getenv("CASTY_SCHEDULE_VERBOSE") != "" || os.Getenv("CASTY_SCHEDULE_SEED") != ""

// logFirstViolation logs, for each register whose history is not
// linearizable, the operations up to the first that no linearization
// admits: the shortest prefix (by call time) the checker refuses, the
// last 20 of it.
func logFirstViolation(t *testing.T, ops []castytest.Op[castytest.RegisterOp[int], castytest.RegisterResult[int]]) {
	t.Helper()
	type op = castytest.Op[castytest.RegisterOp[int], castytest.RegisterResult[int]]
	byKey := map[string][]op{}
	for _, o := range ops {
		byKey[o.Input.Key] = append(byKey[o.Input.Key], o)
	}
	for key, kops := range byKey {
		if castytest.Verify(castytest.RegisterModel(0), kops, castytest.CheckTimeout).Verdict != castytest.NotLinearizable {
			continue
		}
		slices.SortFunc(kops, func(a, b op) int { return cmp.Compare(a.Call, b.Call) })
		lo, hi := 1, len(kops)
		for lo < hi {
			mid := (lo + hi) / 2
			if castytest.Verify(castytest.RegisterModel(0), kops[:mid], castytest.CheckTimeout).Verdict == castytest.NotLinearizable {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		t.Logf("register %s: the first %d of its %d operations are not linearizable; the last of them:", key, lo, len(kops))
		for _, o := range kops[max(0, lo-20):lo] {
			ret := "indeterminate"
			if !o.Indeterminate {
				ret = o.Return.String()
			}
			t.Logf("  client %d %v -> %+v, called %v, returned %s", o.Client, o.Input, o.Output, o.Call, ret)
		}
	}
}

// regKey is one register: its kind and key. Keys differ between kinds,
// so one history holds every kind's registers.
type regKey struct {
	kind *casty.Kind[Reg]
	key  string
}

// registerOp records client's i-th operation on one of keys through via:
// a read, a write or a swap, with a 1 s deadline. sub is the client's
// number among those of keys' kind: it picks the key and the operation.
func registerOp(h *castytest.History[castytest.RegisterOp[int], castytest.RegisterResult[int]], keys []regKey, via *casty.System, client, sub, i int) (err error) {
	rk := keys[(sub+i)%len(keys)]
	key, ref := rk.key, rk.kind.Ref(via, rk.key)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	switch (sub + i) % 3 {
	case 0:
		_, err = h.Record(client, castytest.ReadOp[int](key), func() (castytest.RegisterResult[int], error) {
			v, err := casty.Call0(ctx, ref, (*Reg).Get)
			return castytest.Read(v), err
		})
	case 1:
		v := client*100000 + i
		_, err = h.Record(client, castytest.WriteOp(key, v), func() (castytest.RegisterResult[int], error) {
			return castytest.Written[int](), casty.Do(ctx, ref, (*Reg).Set, v)
		})
	default:
		old, v := client*100000+i-1, client*100000+i
		_, err = h.Record(client, castytest.CASOp(key, old, v), func() (castytest.RegisterResult[int], error) {
			ok, err := casty.Call(ctx, ref, (*Reg).Swap, Swap{Old: old, New: v})
			return castytest.Swapped[int](ok), err
		})
	}
	return err
}

// pace is how long each client waits between two operations:
// CASTY_SCHEDULE_PACE, or schedulePace.
func pace() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("CASTY_SCHEDULE_PACE")); err == nil && d > 0 {
		return d
	}
	return schedulePace
}
