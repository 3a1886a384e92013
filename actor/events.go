package actor

import (
	"time"
)

// Event is a lifecycle event: Activated, Received, Completed, Failed,
// Deactivated, or the in-band Lag and Gap of a spy.
type Event interface {
	// Info returns what every event carries.
	Info() EventInfo
}

// EventInfo is what every event carries: where it happened and its place in
// its activation's sequence (1, 2, 3, … with no gaps).
type EventInfo struct {
	Kind string    // the actor kind's wire name
	Key  string    // the actor's key
	Node string    // the node it happened on; empty in local mode
	Seq  uint64    // per-activation sequence number, from 1
	Time time.Time // when it happened
}

// Info returns the event's common part.
func (i EventInfo) Info() EventInfo { return i }

// Activated is emitted when an activation has run its Activate hook.
type Activated struct{ EventInfo }

// Received is emitted when a handler starts. Arg is the argument when
// payloads are requested (nil otherwise, or when the handler takes none).
type Received struct {
	EventInfo
	Method string
	Arg    any
}

// Completed is emitted when a handler returned without error. Changed
// reports whether the state's encoding differs from before the handler.
type Completed struct {
	EventInfo
	Method   string
	Duration time.Duration
	Changed  bool
	Result   any // when payloads are requested
}

// Failed is emitted when a handler failed, with the supervisor's decision.
type Failed struct {
	EventInfo
	Method    string
	Duration  time.Duration
	Err       error
	Directive Directive
}

// Deactivated is emitted when an activation ends.
type Deactivated struct {
	EventInfo
	Reason Reason
}

// Lag is delivered in-band by a spy that fell behind: Dropped events were
// discarded (the oldest first) just before this point.
type Lag struct {
	EventInfo
	Dropped int
}

// Gap is delivered in-band by a cluster-scope spy when a member it was
// watching was lost: events from that member may be missing.
type Gap struct {
	EventInfo
	Member string
}

// payloader is implemented by invocations that can show their argument
// and result to inspection.
type payloader interface {
	Arg() any
	Result() any
}
