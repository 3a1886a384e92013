package schedules_test

import (
	"context"
	"testing"

	"github.com/casty-go/casty/casty"
	"go.uber.org/goleak"
)

// Members must have stopped every goroutine of theirs by the end of each
// test's cleanup; porcupine's checker must have finished with its own.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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

// The register is the binary's only replicated kind: every kind syncs its
// ranges on each membership change, and while a range waits for a removed
// member's copies its sync reruns every second, so each kind more
// multiplies the work of a schedule's unsettled stretches.
var (
	_ = casty.Message[Swap](casty.Name("castytest.virtual.Swap"))
	// MajorityRegs: three replicas, majority writes and reads.
	MajorityRegs = casty.Actor[Reg](casty.Name("castytest.virtual.MajorityReg"), casty.Replicas(3), casty.Write(casty.Majority), casty.Read(casty.Majority))
)
