package castytest

import "fmt"

// RegisterKind says what a register operation does.
type RegisterKind uint8

// The register operations.
const (
	// RegisterRead returns the value.
	RegisterRead RegisterKind = iota
	// RegisterWrite sets the value; its output is empty.
	RegisterWrite
	// RegisterCAS sets the value to Value if it equals Old; its output's
	// OK says whether it did.
	RegisterCAS
)

// RegisterOp is an operation on the register named Key.
type RegisterOp[V comparable] struct {
	Key   string
	Kind  RegisterKind
	Value V // Write: the value written; CAS: the new value
	Old   V // CAS: the value expected
}

// String renders the operation as read(k), write(k, v) or cas(k, old→new).
func (op RegisterOp[V]) String() string {
	switch op.Kind {
	case RegisterRead:
		return fmt.Sprintf("read(%s)", op.Key)
	case RegisterWrite:
		return fmt.Sprintf("write(%s, %v)", op.Key, op.Value)
	default:
		return fmt.Sprintf("cas(%s, %v→%v)", op.Key, op.Old, op.Value)
	}
}

// RegisterResult is a register operation's output: Value for a read, OK
// for a CAS, the zero value for a write.
type RegisterResult[V comparable] struct {
	Value V
	OK    bool
}

// ReadOp, WriteOp and CASOp build register operations.
func ReadOp[V comparable](key string) RegisterOp[V] {
	return RegisterOp[V]{Key: key, Kind: RegisterRead}
}

// WriteOp builds a write of v to the register key.
func WriteOp[V comparable](key string, v V) RegisterOp[V] {
	return RegisterOp[V]{Key: key, Kind: RegisterWrite, Value: v}
}

// CASOp builds a compare-and-set of the register key from old to v.
func CASOp[V comparable](key string, old, v V) RegisterOp[V] {
	return RegisterOp[V]{Key: key, Kind: RegisterCAS, Old: old, Value: v}
}

// Read, Written and Swapped build register results.
func Read[V comparable](v V) RegisterResult[V] { return RegisterResult[V]{Value: v} }

// Written is a write's result.
func Written[V comparable]() RegisterResult[V] { return RegisterResult[V]{} }

// Swapped is a CAS's result.
func Swapped[V comparable](ok bool) RegisterResult[V] { return RegisterResult[V]{OK: ok} }

// RegisterModel is a set of independent registers, one per Key, each
// starting at initial, with read, write and compare-and-set.
func RegisterModel[V comparable](initial V) Model[V, RegisterOp[V], RegisterResult[V]] {
	return Model[V, RegisterOp[V], RegisterResult[V]]{
		Name:      "register",
		Init:      func() V { return initial },
		Partition: func(op RegisterOp[V]) string { return op.Key },
		Step: func(v V, op RegisterOp[V]) (V, RegisterResult[V]) {
			switch op.Kind {
			case RegisterRead:
				return v, RegisterResult[V]{Value: v}
			case RegisterWrite:
				return op.Value, RegisterResult[V]{}
			default:
				if v == op.Old {
					return op.Value, RegisterResult[V]{OK: true}
				}
				return v, RegisterResult[V]{}
			}
		},
		EqualState:  func(a, b V) bool { return a == b },
		EqualOutput: func(a, b RegisterResult[V]) bool { return a == b },
		ReadOnly:    func(op RegisterOp[V]) bool { return op.Kind == RegisterRead },
		Describe: func(op RegisterOp[V], out *RegisterResult[V]) string {
			switch {
			case out == nil:
				return op.String() + " → ?"
			case op.Kind == RegisterRead:
				return fmt.Sprintf("%v → %v", op, out.Value)
			case op.Kind == RegisterCAS:
				return fmt.Sprintf("%v → %v", op, out.OK)
			}
			return op.String()
		},
	}
}
