package schedules_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/casty-go/casty/casty"
	"go.uber.org/goleak"
)

// Reg is a replicated register.
type Reg struct{ V int }

func (r *Reg) Get(ctx context.Context) (int, error) { return r.V, nil }

func (r *Reg) Set(ctx context.Context, v int) error { r.V = v; return nil }

// Swap is a compare-and-set: it sets New when the value is Old.
func (r *Reg) Swap(ctx context.Context, s Swap) (bool, error) {
	if r.V != s.Old {
		return false, nil
	}
	r.V = s.New
	return true, nil
}

// Swap is Reg.Swap's argument.
type Swap struct{ Old, New int }

// Each configuration's register kind syncs its ranges on every membership
// change, so each kind more adds to the work of a schedule; one cluster
// holding several kinds still shares its members, network and faults.
// CASTY_SCHEDULE_CONFIG picks which kinds a run declares (configs); TestMain
// declares them before any member starts.
var _ = casty.Message[Swap](casty.Name("castytest.virtual.Swap"))

// regKind is one configuration's register kind and the label its keys and
// verdicts carry.
type regKind struct {
	label string
	kind  *casty.Kind[Reg]
}

// kinds are this run's register kinds, set by TestMain.
var kinds []regKind

// replications are the replication configurations a schedule runs
// against, by label.
var replications = map[string][]casty.KindOption{
	// Three replicas, majority writes and reads (the default).
	"r3": {casty.Replicas(3), casty.Write(casty.Majority), casty.Read(casty.Majority)},
	// Three replicas, every write on all three, majority reads.
	"r3-all": {casty.Replicas(3), casty.Write(casty.All), casty.Read(casty.Majority)},
	// Five replicas (every member of five holds every key), majority
	// writes and reads.
	"r5": {casty.Replicas(5), casty.Write(casty.Majority), casty.Read(casty.Majority)},
}

// configs are CASTY_SCHEDULE_CONFIG's values: the replications a run's
// cluster holds side by side, one register kind each.
var configs = map[string][]string{
	"r3":     {"r3"},
	"r3-all": {"r3-all"},
	"r5":     {"r5"},
	// All three in one cluster: each seed's faults hit every
	// configuration.
	"mixed": {"r3", "r3-all", "r5"},
}

// configName is this run's configuration: CASTY_SCHEDULE_CONFIG, "r3"
// unless set.
// replayEnv is the environment a seed ran in, beyond its config and seed,
// for its replay line: a replay under other settings (a scheduler with
// more Ps, another length or pace) may take another course.
func replayEnv() string {
	out := ""
	for _, v := range []string{"GOMAXPROCS", "CASTY_SCHEDULE_LENGTH", "CASTY_SCHEDULE_PACE"} {
		if s := os.Getenv(v); s != "" {
			out += v + "=" + s + " "
		}
	}
	return out
}

func configName() string {
	if c := os.Getenv("CASTY_SCHEDULE_CONFIG"); c != "" {
		return c
	}
	return "r3"
}

// Members must have stopped every goroutine of theirs by the end of each
// test's cleanup; porcupine's checker must have finished with its own.
func TestMain(m *testing.M) {
	labels, ok := configs[configName()]
	if !ok {
		fmt.Fprintf(os.Stderr, "CASTY_SCHEDULE_CONFIG=%q: want one of r3, r3-all, r5, mixed\n", configName())
		os.Exit(2)
	}
	for _, l := range labels {
		name := "castytest.virtual.Reg"
		if len(labels) > 1 {
			name += "." + l
		}
		k := casty.Actor[Reg](append([]casty.KindOption{casty.Name(name)}, replications[l]...)...)
		kinds = append(kinds, regKind{label: l, kind: k})
	}
	goleak.VerifyTestMain(m)
}
