package casty

import (
	"errors"
	"github.com/vmihailenco/msgpack/v5"
	"reflect"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/wire"
)

// The error codec: an error from the host becomes a wireError on the
// serving node and is decoded on the calling node into the error a local
// call would have returned — the same sentinels for errors.Is, the same
// *ActorFailedError for a handler's failure, with the handler's original
// error when its type is registered on both nodes (wire.Message).

const (
	codeFailed       = "failed"
	codeTimeout      = "timeout"
	codeUnavailable  = "unavailable"
	codeReentrancy   = "reentrancy"
	codeUnknown      = "unknown"
	codeQuorum       = "quorum"
	codeFull         = "replica-full"
	codeMoving       = "moving"
	codeWrongOwner   = "wrong-owner"
	codeChainLong    = "chain-too-long"
	codeOverloaded   = "overloaded"
	codeForbidden    = "forbidden"
	codeTooManySpies = "too-many-spies"
	// codeNotApplied: ErrQuorumUnavailable from a commit that took effect
	// nowhere (a newer owner exists); the caller retries it once.
	codeNotApplied = "quorum-not-applied"
	// codeTooLarge: *CommitTooLargeError; ErrData holds its fields.
	codeTooLarge = "commit-too-large"
	// codeInvalidKey: ErrInvalidKey.
	codeInvalidKey = "invalid-key"
)

// wireError is an error as it crosses the wire (its encoding: envelope.go).
type wireError struct {
	Code      string // what kind of error: one of the codes above
	Message   string // the error's text
	Kind      string // codeFailed, codeReentrancy: the actor's kind
	Key       string // codeFailed, codeReentrancy: the actor's key
	Method    string // codeFailed: the handler
	Directive int    // codeFailed: the supervisor's decision
	Cause     string // codeFailed: the code of the sentinel the failure wraps
	ErrType   string // codeFailed: the registered wire name of the original error's type
	ErrData   []byte // codeFailed: the original error, msgpack
}

var sentinels = []struct {
	code string
	err  error
}{
	{codeTimeout, ErrTimeout}, {codeReentrancy, ErrReentrancy}, {codeUnknown, ErrUnknownActorType},
	{codeFull, ErrReplicaFull}, {codeQuorum, ErrQuorumUnavailable}, {codeMoving, ErrRangeMoving}, {codeUnavailable, ErrActorUnavailable},
	{codeNotApplied, ErrQuorumUnavailable}, {codeChainLong, ErrCallChainTooLong},
	{codeOverloaded, ErrOverloaded}, {codeForbidden, ErrForbidden}, {codeTooManySpies, ErrTooManySpies},
	{codeInvalidKey, ErrInvalidKey},
}

func sentinelCode(err error) string {
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.code
		}
	}
	return ""
}

func sentinelFor(code string) error {
	for _, s := range sentinels {
		if s.code == code {
			return s.err
		}
	}
	return nil
}

// encodeError turns an error from the host into its wire form.
func encodeError(err error) *wireError {
	var big *CommitTooLargeError
	if errors.As(err, &big) {
		b, _ := msgpack.Marshal(big)
		return &wireError{Code: codeTooLarge, Message: err.Error(), Kind: big.Kind, Key: big.Key, ErrData: b}
	}
	var fe *actor.FailedError
	if errors.As(err, &fe) {
		we := &wireError{Code: codeFailed, Message: fe.Message, Kind: fe.Kind, Key: fe.Key, Method: fe.Method,
			Directive: int(fe.Directive), Cause: sentinelCode(fe.Err)}
		for e := fe.Err; e != nil; e = errors.Unwrap(e) {
			t := reflect.TypeOf(e)
			if t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			if name, ok := wire.Default.NameOf(t); ok {
				if b, merr := wire.Marshal(e); merr == nil {
					we.ErrType, we.ErrData = name, b
				}
				break
			}
		}
		return we
	}
	var re *actor.ReentrancyError
	if errors.As(err, &re) {
		return &wireError{Code: codeReentrancy, Message: err.Error(), Kind: re.Kind, Key: re.Key}
	}
	if code := sentinelCode(err); code != "" {
		return &wireError{Code: code, Message: err.Error()}
	}
	return &wireError{Code: codeUnavailable, Message: err.Error()}
}

// remoteError is a failure cause that came from another node: its message,
// and the sentinel it matched there.
type remoteError struct {
	msg      string
	sentinel error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.sentinel }

// decode turns a wire error back into the error the caller would have got
// locally: the same sentinels, *ActorFailedError with the registered
// original when its type is known here. codeWrongOwner decodes as
// ErrActorUnavailable: routing retries it before it reaches a caller.
func (we *wireError) decode() error {
	switch we.Code {
	case codeTooLarge:
		big := &CommitTooLargeError{}
		if msgpack.Unmarshal(we.ErrData, big) == nil {
			return big
		}
		return &remoteError{msg: we.Message, sentinel: ErrActorUnavailable}
	case codeFailed:
		fe := &actor.FailedError{Kind: we.Kind, Key: we.Key, Method: we.Method, Message: we.Message, Directive: actor.Directive(we.Directive)}
		if t, ok := wire.Default.TypeOf(we.ErrType); ok && we.ErrType != "" {
			v := reflect.New(t)
			if wire.Unmarshal(we.ErrData, v.Interface()) == nil {
				if e, ok := v.Interface().(error); ok {
					fe.Err = e
				} else if e, ok := v.Elem().Interface().(error); ok {
					fe.Err = e
				}
			}
		}
		if fe.Err == nil && we.Cause != "" {
			fe.Err = &remoteError{msg: we.Message, sentinel: sentinelFor(we.Cause)}
		}
		return fe
	case codeReentrancy:
		return &actor.ReentrancyError{Kind: we.Kind, Key: we.Key}
	case codeTimeout:
		return &remoteError{msg: we.Message, sentinel: ErrTimeout}
	}
	if s := sentinelFor(we.Code); s != nil {
		return &remoteError{msg: we.Message, sentinel: s}
	}
	return &remoteError{msg: we.Message, sentinel: ErrActorUnavailable}
}
