package hlc

import (
	"errors"
	"fmt"
	"time"
)

// Errors returned by this package. Compare with errors.Is.
var (
	// ErrNoPhysicalClock is returned by Config.Validate and New when
	// Config.Physical is nil.
	ErrNoPhysicalClock = errors.New("hlc: no physical clock")

	// ErrBadConfig is returned (wrapped, with the field) by Config.Validate
	// for an out-of-range field.
	ErrBadConfig = errors.New("hlc: invalid config")

	// ErrDrift is returned by Clock.Observe, wrapped in a *DriftError, when
	// a remote timestamp is further ahead of the local physical clock than
	// Config.MaxDrift allows. The clock is left unchanged.
	ErrDrift = errors.New("hlc: remote timestamp too far ahead of the physical clock")

	// ErrExhausted is returned by Clock.Observe when no timestamp greater
	// than the remote one exists (its Wall is math.MaxInt64 and its Counter
	// math.MaxUint32). The clock is left unchanged. Clock.Now panics with
	// this error in the same situation (see Clock.Now).
	ErrExhausted = errors.New("hlc: timestamp space exhausted")

	// ErrMalformed is returned (wrapped, with details) by DecodeMsgpack and
	// Timestamp.UnmarshalMsgpack when the bytes are not an encoded
	// Timestamp: truncated, of the wrong msgpack type, out of range, or
	// followed by trailing bytes (UnmarshalMsgpack only).
	ErrMalformed = errors.New("hlc: malformed timestamp encoding")
)

// DriftError is the error of Clock.Observe for a remote timestamp beyond the
// allowed drift. errors.Is(err, ErrDrift) holds.
type DriftError struct {
	Remote   Timestamp     // the rejected timestamp
	Physical int64         // the local physical clock when it was rejected, ms
	MaxDrift time.Duration // the configured limit
}

// Error implements error.
func (e *DriftError) Error() string {
	return fmt.Sprintf("%v: remote %v is %d ms ahead of local %d ms, max %v",
		ErrDrift, e.Remote, e.Remote.Wall-e.Physical, e.Physical, e.MaxDrift)
}

// Unwrap returns ErrDrift.
func (e *DriftError) Unwrap() error { return ErrDrift }
