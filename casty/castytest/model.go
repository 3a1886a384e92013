package castytest

import (
	"cmp"
	"fmt"
	"math"
	"reflect"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// Model is the sequential specification of an object: what each operation
// does to the state and what it returns, when operations run one at a
// time. The checker searches for an order of a concurrent history's
// operations, consistent with their real-time order, that the model
// accepts (linearizability).
//
// Step must be a pure function: it must not change the state it is given
// (return a new one; copy slices and maps before changing them).
type Model[S, I, O any] struct {
	// Name names the model in messages and in the visualisation.
	Name string
	// Init returns the initial state (of each partition, with Partition).
	Init func() S
	// Step applies in to state and returns the new state and the output
	// the operation must have returned. Required.
	Step func(state S, in I) (S, O)
	// Partition, when set, names the independent object an operation acts
	// on (an actor's key): operations on different partitions are checked
	// separately, each from Init, which is much faster.
	Partition func(in I) string
	// EqualState compares states; nil means reflect.DeepEqual.
	EqualState func(a, b S) bool
	// EqualOutput compares the output Step expects with the one recorded;
	// nil means reflect.DeepEqual.
	EqualOutput func(want, got O) bool
	// Describe renders an operation for the visualisation; nil prints the
	// input and output with %v. out is nil for an indeterminate op.
	Describe func(in I, out *O) string
	// DescribeState renders a state for the visualisation; nil prints %v.
	DescribeState func(state S) string
	// ReadOnly, when set, reports the operations that never change the
	// state (a read). Verify leaves such an operation out when its outcome
	// is unknown: it could be ordered anywhere after its call and explain
	// nothing, so it constrains no order — while each one left in
	// multiplies the orders the checker tries, and a few dozen make a
	// history of a thousand operations undecidable in minutes.
	ReadOnly func(in I) bool
}

// Verdict is the outcome of a check.
type Verdict string

// The verdicts.
const (
	// Linearizable: some order consistent with real time explains every
	// output.
	Linearizable Verdict = "linearizable"
	// NotLinearizable: no such order exists; the history shows a bug.
	NotLinearizable Verdict = "not linearizable"
	// Unknown: the search ran out of time before deciding.
	Unknown Verdict = "unknown (check timed out)"
)

// Result is a check's verdict with what the visualisation needs.
type Result struct {
	Verdict Verdict
	// Ops counts the operations of the history; Indeterminate those among
	// them with an unknown outcome, and LeftOut those of these the model
	// calls read-only (Model.ReadOnly), which the check left out.
	Ops, Indeterminate, LeftOut int

	model porcupine.Model
	info  porcupine.LinearizationInfo
}

// Ok reports whether the history was found linearizable.
func (r Result) Ok() bool { return r.Verdict == Linearizable }

// WriteHTML writes porcupine's visualisation of the history to path: one
// row per client, each operation a box, and for a failed check the longest
// partial linearizations and where they break.
func (r Result) WriteHTML(path string) error {
	return porcupine.VisualizePath(r.model, r.info, path)
}

// output is what the checker sees as an operation's output: the recorded
// value, or nothing when the outcome is unknown.
type output[O any] struct {
	value   O
	unknown bool
}

// Verify checks ops against m, giving up after timeout (0: no limit).
// It starts goroutines (porcupine checks partitions in parallel) and waits
// for all of them before returning.
func Verify[S, I, O any](m Model[S, I, O], ops []Op[I, O], timeout time.Duration) Result {
	pm := m.porcupine()
	hist := make([]porcupine.Operation, 0, len(ops))
	res := Result{Ops: len(ops), model: pm}
	for _, op := range ops {
		ret := int64(op.Return)
		if op.Indeterminate || op.Return == Never {
			ret = math.MaxInt64
			res.Indeterminate++
			if m.ReadOnly != nil && m.ReadOnly(op.Input) {
				res.LeftOut++
				continue
			}
		}
		hist = append(hist, porcupine.Operation{
			ClientId: op.Client,
			Input:    op.Input,
			Call:     int64(op.Call),
			Output:   output[O]{value: op.Output, unknown: op.Indeterminate || op.Return == Never},
			Return:   ret,
		})
	}
	verdict, info := porcupine.CheckOperationsVerbose(pm, hist, timeout)
	res.info = info
	switch verdict {
	case porcupine.Ok:
		res.Verdict = Linearizable
	case porcupine.Illegal:
		res.Verdict = NotLinearizable
	default:
		res.Verdict = Unknown
	}
	return res
}

// porcupine turns m into porcupine's untyped model. An unknown output
// matches whatever Step returns, and the operation's effect is applied:
// with its return at +infinity the checker may also order it after every
// other operation, which is the same as it never having happened.
func (m Model[S, I, O]) porcupine() porcupine.Model {
	eqS := m.EqualState
	if eqS == nil {
		eqS = func(a, b S) bool { return reflect.DeepEqual(a, b) }
	}
	eqO := m.EqualOutput
	if eqO == nil {
		eqO = func(a, b O) bool { return reflect.DeepEqual(a, b) }
	}
	pm := porcupine.Model{
		Init: func() any { return m.Init() },
		Step: func(state, in, out any) (bool, any) {
			next, want := m.Step(state.(S), in.(I))
			o := out.(output[O])
			return o.unknown || eqO(want, o.value), next
		},
		Equal: func(a, b any) bool { return eqS(a.(S), b.(S)) },
		DescribeOperation: func(in, out any) string {
			o := out.(output[O])
			var p *O
			if !o.unknown {
				p = &o.value
			}
			if m.Describe != nil {
				return m.Describe(in.(I), p)
			}
			if p == nil {
				return fmt.Sprintf("%v → ?", in)
			}
			return fmt.Sprintf("%v → %v", in, *p)
		},
		DescribeState: func(s any) string {
			if m.DescribeState != nil {
				return m.DescribeState(s.(S))
			}
			return fmt.Sprintf("%v", s)
		},
	}
	if m.Partition != nil {
		pm.Partition = func(h []porcupine.Operation) [][]porcupine.Operation {
			byKey := map[string][]porcupine.Operation{}
			for _, op := range h {
				k := m.Partition(op.Input.(I))
				byKey[k] = append(byKey[k], op)
			}
			keys := make([]string, 0, len(byKey))
			for k := range byKey {
				keys = append(keys, k)
			}
			slices.SortFunc(keys, cmp.Compare)
			parts := make([][]porcupine.Operation, len(keys))
			for i, k := range keys {
				parts[i] = byKey[k]
			}
			return parts
		}
	}
	return pm
}
