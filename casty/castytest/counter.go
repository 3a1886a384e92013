package castytest

import "fmt"

// CounterOp is an operation on the counter named Key: an add of Delta,
// or (Read true) a read.
type CounterOp struct {
	Key   string
	Read  bool
	Delta int64
}

// String renders the operation as add(k, d) or read(k).
func (op CounterOp) String() string {
	if op.Read {
		return fmt.Sprintf("read(%s)", op.Key)
	}
	return fmt.Sprintf("add(%s, %d)", op.Key, op.Delta)
}

// IncOp and ReadCounterOp build counter operations.
func IncOp(key string, delta int64) CounterOp { return CounterOp{Key: key, Delta: delta} }

// ReadCounterOp builds a read of the counter key.
func ReadCounterOp(key string) CounterOp { return CounterOp{Key: key, Read: true} }

// CounterModel is a set of independent counters, one per Key, each
// starting at 0. A read returns the value; an add returns the value after
// it (record the actor's answer, or use a handler that returns it).
func CounterModel() Model[int64, CounterOp, int64] {
	return Model[int64, CounterOp, int64]{
		Name:      "counter",
		Init:      func() int64 { return 0 },
		Partition: func(op CounterOp) string { return op.Key },
		Step: func(v int64, op CounterOp) (int64, int64) {
			if op.Read {
				return v, v
			}
			return v + op.Delta, v + op.Delta
		},
		EqualState:  func(a, b int64) bool { return a == b },
		EqualOutput: func(a, b int64) bool { return a == b },
		ReadOnly:    func(op CounterOp) bool { return op.Read },
	}
}
