package sim

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/anishathalye/porcupine"
)

// registerModel is a register per key, initially 0: reads return the last
// value written; a compare-and-swap writes when the value is the expected
// one. An operation whose outcome is unknown returns at +infinity, so the
// checker may also place it after everything else: "it never happened".
var registerModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[int][]porcupine.Operation{}
		var keys []int
		for _, op := range history {
			k := op.Input.(Input).Key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return 0 },
	Step: func(state, input, output any) (bool, any) {
		v, in, out := state.(int), input.(Input), output.(Output)
		switch in.Kind {
		case Read:
			return out.Value == v, v
		case Write:
			return true, in.Value
		default: // CAS
			if out.Unknown {
				if v == in.Expected {
					return true, in.Value
				}
				return true, v
			}
			if out.OK {
				return v == in.Expected, in.Value
			}
			return v != in.Expected, v
		}
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(Input), output.(Output)
		unknown := ""
		if out.Unknown {
			unknown = " (unknown)"
		}
		switch in.Kind {
		case Read:
			return fmt.Sprintf("k%d read -> %d%s", in.Key, out.Value, unknown)
		case Write:
			return fmt.Sprintf("k%d write %d%s", in.Key, in.Value, unknown)
		default:
			return fmt.Sprintf("k%d cas %d->%d: %v%s", in.Key, in.Expected, in.Value, out.OK, unknown)
		}
	},
}

// Verdict is a check's outcome.
type Verdict string

// The verdicts: Inconclusive when porcupine ran out of time (a history with
// many indeterminate operations can take exponential time).
const (
	Linearizable    Verdict = "linearizable"
	NotLinearizable Verdict = "not linearizable"
	Inconclusive    Verdict = "inconclusive"
)

// Check reports whether history is linearizable (see Verify).
func Check(history []Op, dir string, name string) (ok bool, file string) {
	v, file := Verify(history, dir, name)
	return v != NotLinearizable, file
}

// Verify checks history for linearizability within 30 s. On a violation
// with a non-empty dir it writes porcupine's visualisation there and
// returns its path.
func Verify(history []Op, dir string, name string) (Verdict, string) {
	ops := make([]porcupine.Operation, 0, len(history))
	for _, h := range history {
		if h.Output.Unknown && h.Input.Kind == Read {
			continue // a read that may not have run changes nothing
		}
		ret := h.Return
		if ret < 0 {
			ret = math.MaxInt64
		}
		ops = append(ops, porcupine.Operation{ClientId: h.Client, Input: h.Input, Output: h.Output, Call: h.Call, Return: ret})
	}
	res, info := porcupine.CheckOperationsVerbose(registerModel, ops, 30*time.Second)
	switch res {
	case porcupine.Ok:
		return Linearizable, ""
	case porcupine.Unknown:
		return Inconclusive, ""
	}
	var file string
	if dir != "" {
		file = filepath.Join(dir, name+".html")
		if err := os.MkdirAll(dir, 0o755); err == nil {
			if f, err := os.Create(file); err == nil {
				_ = porcupine.Visualize(registerModel, info, f)
				f.Close()
			}
		}
	}
	return NotLinearizable, file
}
