package wire

import "errors"

var (
	// ErrNotSerializable is returned (wrapped in a *TypeError) when a type
	// contains something msgpack cannot carry faithfully.
	ErrNotSerializable = errors.New("wire: not serializable")

	// ErrDuplicateName is returned when a wire name is already taken by
	// another type.
	ErrDuplicateName = errors.New("wire: duplicate wire name")

	// ErrNotRegistered is wrapped by the *TypeError Unregistered reports
	// for a named struct type that is used but was never registered.
	ErrNotRegistered = errors.New("wire: not registered")

	// ErrUnknownName is returned when a wire name has no registered type.
	ErrUnknownName = errors.New("wire: unknown wire name")

	// ErrMalformed is returned when bytes are not a well-formed, bounded
	// msgpack value: truncated input, a length prefix larger than the input,
	// nesting deeper than MaxDepth, an unused type code or trailing bytes.
	ErrMalformed = errors.New("wire: malformed input")
)

// TypeError reports why a type cannot be registered or used on the wire.
// Path is the full field path from the root type, e.g.
// "shop.Order.Lines[].Sku".
type TypeError struct {
	Path string // where in the type the problem is
	Type string // the offending Go type, as written in Go
	Why  string // "is not serializable", "is not registered", ...
	Fix  string // how to fix it, when the path names a struct field ("" otherwise)
	Err  error  // the sentinel: ErrNotSerializable, ErrDuplicateName or ErrNotRegistered
}

func (e *TypeError) Error() string {
	msg := e.Type + " " + e.Why
	if e.Path != "" {
		msg = e.Path + ": " + msg
	}
	if e.Fix != "" {
		msg += " (" + e.Fix + ")"
	}
	return msg
}

// Unwrap returns the sentinel the error belongs to.
func (e *TypeError) Unwrap() error { return e.Err }
