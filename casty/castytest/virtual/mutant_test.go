package virtual_test

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
)

// The schedules' detection power: a member build that breaks one safety
// rule on purpose (seam.Member.Mutant) must be caught — a history porcupine
// finds not linearizable — within a few seeds, while the same schedule
// without the mutant stays linearizable. CASTY_SCHEDULE_MUTANT=1 runs it;
// CASTY_SCHEDULE_MUTANT_SEEDS sets how many seeds each mutant may take
// (default: its budget in mutants).

type mutReg struct{ V int }

func (r *mutReg) Get(context.Context) (int, error)          { return r.V, nil }
func (r *mutReg) Set(_ context.Context, v int) error        { r.V = v; return nil }
func (r *mutReg) Add(_ context.Context, d int) (int, error) { r.V += d; return r.V, nil }

var mutRegs = casty.Actor[mutReg](casty.Name("castytest.mutant.Reg"), casty.Replicas(3), casty.Write(casty.Majority), casty.Read(casty.Majority))

// mutantRun runs one seed's schedule against a cluster of the mutant and
// returns porcupine's verdict on the register history.
func mutantRun(t *testing.T, name string, members, struck int, seed int64) castytest.Result {
	var h *castytest.History[castytest.RegisterOp[int], castytest.RegisterResult[int]]
	synctest.Test(t, func(t *testing.T) {
		cfg := castytest.TestConfig()
		cfg.Replication.RemoveDeadAfter = 10 * time.Second
		c := castytest.NewCluster(t, members, castytest.Seed(seed), castytest.MemberOptions(casty.WithConfig(cfg)), castytest.Mutant(name))
		s := castytest.NewSchedule(seed, castytest.ScheduleConfig{Members: members, MaxStruck: struck, Length: 2 * time.Minute, MaxHold: 30 * time.Second,
			Kinds: []castytest.FaultKind{castytest.Crash, castytest.Pause, castytest.Isolate, castytest.Split, castytest.Stop}})
		h = castytest.NewHistory[castytest.RegisterOp[int], castytest.RegisterResult[int]]()
		keys := []string{"m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7"}
		lite := c.Lite()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for client := range 4 {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					case <-time.After(500 * time.Millisecond):
					}
					via := lite
					if client > 0 {
						via = c.Member((client + i) % c.N())
					}
					key := keys[(client+i)%len(keys)]
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					if i%2 == 0 {
						v := client*100000 + i
						_, _ = h.Record(client, castytest.WriteOp(key, v), func() (castytest.RegisterResult[int], error) {
							return castytest.Written[int](), casty.Do(ctx, mutRegs.Ref(via, key), (*mutReg).Set, v)
						})
					} else {
						_, _ = h.Record(client, castytest.ReadOp[int](key), func() (castytest.RegisterResult[int], error) {
							v, err := casty.Call0(ctx, mutRegs.Ref(via, key), (*mutReg).Get)
							return castytest.Read(v), err
						})
					}
					cancel()
				}
			})
		}
		c.Run(s, nil)
		// The clients go on 30 virtual seconds on the healed cluster:
		// the workload's length, not a wait for convergence.
		time.Sleep(30 * time.Second)
		close(stop)
		wg.Wait()
	})
	return castytest.Verify(castytest.RegisterModel(0), h.Ops(), castytest.CheckTimeout)
}

// mutants are the rules TestSchedulesCatchAMutant breaks, each on a
// cluster of the size where the break can show, within a budget of
// seeds. "quorum-of-set" needs a replica set shrunk below Replicas, which
// only faults on two of three members at once make. "adopt-newest-only"
// is not here: random schedules did not catch it in 20 seeds, the
// scenario made for it does (TestSkippedVersionsAreCaughtByTheirScenario).
var mutants = []struct {
	name    string
	members int
	struck  int // ScheduleConfig.MaxStruck; 0: a minority
	seeds   int
}{
	{"write-one-fewer", 5, 0, 20},
	{"sync-one-fewer", 5, 0, 30},
	{"quorum-of-set", 3, 2, 200},
}

func TestSchedulesCatchAMutant(t *testing.T) {
	if os.Getenv("CASTY_SCHEDULE_MUTANT") == "" {
		t.Skip("CASTY_SCHEDULE_MUTANT=1 runs it (.ci/run's simulator step does, without -race: porcupine's search of a broken history is slow under it)")
	}
	override := 0
	if s := os.Getenv("CASTY_SCHEDULE_MUTANT_SEEDS"); s != "" {
		override, _ = strconv.Atoi(s)
	}
	// The control: the same schedule and workload without a mutant.
	if res := mutantRun(t, "", 5, 0, 1); res.Verdict != castytest.Linearizable {
		t.Fatalf("without a mutant, seed 1: %d operations, %s", res.Ops, res.Verdict)
	}
	for _, m := range mutants {
		name, max := m.name, m.seeds
		if override > 0 {
			max = override
		}
		t.Run(name, func(t *testing.T) {
			for seed := int64(1); seed <= int64(max); seed++ {
				res := mutantRun(t, name, m.members, m.struck, seed)
				if res.Verdict == castytest.NotLinearizable {
					t.Logf("%s caught at seed %d of at most %d: %d operations, %s", name, seed, max, res.Ops, res.Verdict)
					return
				}
				t.Logf("seed %d: %d operations (%d indeterminate): %s", seed, res.Ops, res.Indeterminate, res.Verdict)
			}
			t.Errorf("%s was not caught in %d seeds: the schedules cannot see the rule it breaks", name, max)
		})
	}
}
