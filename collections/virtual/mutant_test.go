package virtual_test

import (
	"github.com/casty-go/casty/internal/procstat"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/casty-go/casty/casty/castytest"
)

// The workloads' detection power: a member build that breaks one safety
// rule on purpose (castytest.Mutant) must be caught — an acknowledged
// write lost, or a register history porcupine finds not linearizable —
// within a few seeds, while the same schedule without the mutant passes.
// CASTY_COLLECTION_MUTANT=1 runs it; CASTY_COLLECTION_MUTANT_SEEDS sets
// how many seeds each mutant may take (default 10).

// mutantRun is the schedule the mutants run under, the shape of
// castytest/virtual's: the faults that move ownership (crashes, pauses,
// isolations, splits, graceful stops), 2 minutes of them, each held at
// most 30 s, and the clients going on for 30 s after.
func mutantRun(mutant string) runConfig {
	return runConfig{length: 2 * time.Minute, maxHold: 30 * time.Second, mutant: mutant, after: 30 * time.Second,
		kinds: []castytest.FaultKind{castytest.Crash, castytest.Pause, castytest.Isolate, castytest.Split, castytest.Stop}}
}

// caught runs one seed against mutant and returns the failures its
// workloads found, each prefixed with the workload's name, after logging
// each workload's verdict. With firstOnly, the workloads after the first
// that fails go unchecked: the register's check (the last) is the one
// that can take porcupine's whole CheckTimeout.
func caught(t *testing.T, mutant string, seed int64, firstOnly bool) []string {
	cpu0 := procstat.Self()
	run := runSeed(t, seed, mutantRun(mutant), workloads())
	var failures []string
	for _, l := range run.loads {
		if firstOnly && len(failures) > 0 {
			t.Logf("seed %d %s: not checked (caught already)", seed, l.name())
			continue
		}
		v := l.check(judge{vis: visPath(t, l), settled: run.settled})
		for _, u := range v.unverified {
			t.Logf("seed %d %s: unverified (the cluster did not settle): %s", seed, l.name(), u)
		}
		t.Logf("seed %d %s: %s", seed, l.name(), v.summary)
		for _, f := range v.failures {
			failures = append(failures, l.name()+": "+f)
		}
	}
	t.Logf("seed %d: %d faults; settled: %v; %v virtual in %v CPU", seed, len(run.schedule.Faults), run.settled,
		run.virtual.Round(time.Second), (procstat.Self() - cpu0).Round(time.Millisecond))
	return failures
}

// TestCollectionsCatchAMutant runs a control seed without a mutant, then
// each mutant seed after seed until a workload catches it.
func TestCollectionsCatchAMutant(t *testing.T) {
	if os.Getenv("CASTY_COLLECTION_MUTANT") == "" {
		t.Skip("CASTY_COLLECTION_MUTANT=1 runs it (.ci/run's collections step does, without -race)")
	}
	max := envInt("CASTY_COLLECTION_MUTANT_SEEDS", 10)
	// The control: the same schedule and workloads without a mutant.
	t.Run("control", func(t *testing.T) {
		if f := caught(t, "", 1, false); len(f) > 0 {
			t.Fatalf("without a mutant, seed 1 fails:\n  %s", strings.Join(f, "\n  "))
		}
	})
	for _, name := range []string{"write-one-fewer", "sync-one-fewer"} {
		t.Run(name, func(t *testing.T) {
			for seed := int64(1); seed <= int64(max); seed++ {
				if f := caught(t, name, seed, true); len(f) > 0 {
					t.Logf("%s caught at seed %d of at most %d:\n  %s", name, seed, max, strings.Join(f, "\n  "))
					return
				}
			}
			t.Errorf("%s was not caught in %d seeds: the collection workloads cannot see the rule it breaks", name, max)
		})
	}
}
