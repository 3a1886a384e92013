package actor

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
)

// Infrastructure errors, for errors.Is. Whether a failed call may have taken
// effect is said with each one: a definite error means the handler did not
// run (or ran and its failure is reported as such); an indeterminate one means
// it may have run.
var (
	// ErrTimeout is returned when a call's deadline (its ctx deadline, or
	// Config.CallTimeout when ctx has none) passes before the reply arrives.
	// Indeterminate: the handler may have run. It also matches
	// context.DeadlineExceeded with errors.Is, and satisfies net.Error.
	ErrTimeout error = timeoutError{}

	// ErrActorUnavailable is returned when the actor cannot be reached: the
	// system is closed or closing, or the activation was shut down with the
	// call still queued. Definite for calls refused at the door; a call
	// already running when its activation was torn down may have run.
	ErrActorUnavailable = errors.New("casty: actor unavailable")

	// ErrReentrancy is returned, before anything is queued, when a call
	// would wait on an activation that is already waiting for this call's
	// chain to finish (A→A, A→B→A): it would deadlock. Definite.
	ErrReentrancy = errors.New("casty: reentrant call")

	// ErrUnknownActorType is returned when a call names a kind or method
	// the destination does not have. Definite.
	ErrUnknownActorType = errors.New("casty: unknown actor type")

	// ErrNotAHandler is returned, before anything is sent, when the
	// function passed to a call is not a handler of the actor's kind: a
	// nil func, a function literal, a plain function, an unexported
	// method, a method of another type, a lifecycle hook, or a handler of
	// another shape than the call takes. The message says which and what
	// to pass instead. It also matches ErrUnknownActorType, which it
	// refines. Definite.
	ErrNotAHandler error = notAHandler{}

	// ErrRangeMoving is returned when the key's range is being handed to
	// another node. Definite; the caller may retry.
	ErrRangeMoving = errors.New("casty: range moving")

	// ErrCallChainTooLong is returned, before anything is queued, when a
	// call would make its call chain longer than MaxCallChain activations
	// (a handler calling an actor whose handler calls another, and so on),
	// and by a node that receives a call naming a longer chain. Definite.
	ErrCallChainTooLong = errors.New("casty: call chain too long")

	// ErrOverloaded is returned when a call needs a new activation, the
	// host already holds Config.MaxActivations, and none of them is idle
	// to be deactivated to make room, nor soon to be (its handler returned,
	// its commit runs: the call waits for such a one). Definite: nothing ran; the caller
	// may retry later.
	ErrOverloaded = errors.New("casty: overloaded")
)

type notAHandler struct{}

func (notAHandler) Error() string { return "casty: not a handler" }

// Is makes ErrNotAHandler match ErrUnknownActorType.
func (notAHandler) Is(target error) bool { return target == ErrUnknownActorType }

type timeoutError struct{}

func (timeoutError) Error() string   { return "casty: timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// Is makes ErrTimeout match context.DeadlineExceeded.
func (timeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// TimeoutError is ErrTimeout with the call it happened to. It matches
// ErrTimeout and context.DeadlineExceeded, and satisfies net.Error.
type TimeoutError struct {
	Kind, Key, Method string
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("casty: call %s/%s.%s timed out", e.Kind, e.Key, e.Method)
}

// Unwrap returns ErrTimeout.
func (e *TimeoutError) Unwrap() error { return ErrTimeout }

// Timeout reports true (net.Error).
func (e *TimeoutError) Timeout() bool { return true }

// Temporary reports true (net.Error).
func (e *TimeoutError) Temporary() bool { return true }

// FailedError is a handler's failure as its caller sees it: the handler
// returned an error or panicked. The supervisor has already decided the
// activation's fate (Directive). Definite: with Keep the state the handler
// left stays; with Reset it is discarded.
type FailedError struct {
	Kind      string    // the actor kind's wire name
	Key       string    // the actor's key
	Method    string    // the handler's name
	Message   string    // the handler's error message
	Directive Directive // what the supervisor decided
	Err       error     // the original error; nil when it could not cross the wire
}

func (e *FailedError) Error() string {
	return fmt.Sprintf("casty: %s/%s.%s failed: %s", e.Kind, e.Key, e.Method, e.Message)
}

// Unwrap returns the handler's original error.
func (e *FailedError) Unwrap() error { return e.Err }

// PanicError is the failure recorded when a handler panics: the process
// keeps running and the call fails with a *FailedError wrapping this.
type PanicError struct {
	Value any    // what was passed to panic
	Stack []byte // the handler goroutine's stack at the panic
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

func newPanicError(v any) *PanicError { return &PanicError{Value: v, Stack: debug.Stack()} }

// AnswerError is a handler's error marked by Answer: an answer to its
// caller, not a failure. The engine hands it to the caller as it is,
// without asking the supervisor; Unwrap returns the handler's error.
type AnswerError struct {
	Err error // the handler's error
}

func (e *AnswerError) Error() string { return e.Err.Error() }

// Unwrap returns the handler's error.
func (e *AnswerError) Unwrap() error { return e.Err }

// Answer marks err, returned by a handler, as an answer rather than a
// failure: the supervisor is not asked, the failure count is not raised,
// the state the handler left stands (it is committed as after a nil
// error), and the caller gets err. Answer(nil) is nil. The mark is found
// with errors.As, so wrapping Answer's result keeps it.
func Answer(err error) error {
	if err == nil {
		return nil
	}
	return &AnswerError{Err: err}
}

// isAnswer reports whether a handler's error is marked by Answer.
func isAnswer(err error) bool {
	var a *AnswerError
	return errors.As(err, &a)
}

// asAnswer is the error an answered call finishes with: the handler's
// error as an *AnswerError, so the layers above can tell an answer from a
// failure; nil stays nil.
func asAnswer(err error) error {
	if err == nil {
		return nil
	}
	if a, ok := err.(*AnswerError); ok {
		return a
	}
	return &AnswerError{Err: err}
}
