package virtual_test

import (
	"context"
	"testing"

	"github.com/casty-go/casty/casty"
	"go.uber.org/goleak"
)

// Members must have stopped every goroutine of theirs by the end of each
// test's cleanup; porcupine's checker must have finished with its own.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Tally counts (a replicated counter).
type Tally struct{ N int }

func (t *Tally) Add(ctx context.Context, d int) (int, error) { t.N += d; return t.N, nil }

var Tallies = casty.Actor[Tally](casty.Name("castytest.virtual.Tally"), casty.Replicas(3), casty.Write(casty.Majority), casty.Read(casty.Majority))

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

var (
	_ = casty.Message[Swap](casty.Name("castytest.virtual.Swap"))
	// MajorityRegs: three replicas, majority writes and reads.
	MajorityRegs = casty.Actor[Reg](casty.Name("castytest.virtual.MajorityReg"), casty.Replicas(3), casty.Write(casty.Majority), casty.Read(casty.Majority))
)
