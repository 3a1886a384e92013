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
	codeLeaving      = "leaving" // the node is closing; its keys go to the next member
	codeWrongOwner   = "wrong-owner"
	codeChainLong    = "chain-too-long"
	codeOverloaded   = "overloaded"
	codeForbidden    = "forbidden"
	codeTooManySpies = "too-many-spies"
	// codeNotApplied: ErrQuorumUnavailable from a commit that took effect
	// nowhere, or a read's confirm, refused by a newer owner or placement;
	// the caller runs the call again (againUntilApplied).
	codeNotApplied = "quorum-not-applied"
	// codeUnactivated: ErrNoReadQuorum, an activation that reached no
	// read quorum, before the call ran; the caller tries the key's next
	// replica (route).
	codeUnactivated = "quorum-unactivated"
	// codeTooLarge: *CommitTooLargeError; ErrData holds its fields.
	codeTooLarge = "commit-too-large"
	// codeAnswer: a handler's error marked by Answer; Cause, ErrType and
	// ErrData as for codeFailed.
	codeAnswer = "answer"
	// codeInvalidKey: ErrInvalidKey.
	codeInvalidKey = "invalid-key"
	// codeNotRemoved: ErrNotRemoved (AcceptLoss asked of another member).
	codeNotRemoved = "not-removed"
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
	{codeUnactivated, ErrNoReadQuorum}, // before codeQuorum: it matches ErrQuorumUnavailable too
	{codeTimeout, ErrTimeout}, {codeReentrancy, ErrReentrancy}, {codeUnknown, ErrUnknownActorType},
	{codeFull, ErrReplicaFull}, {codeQuorum, ErrQuorumUnavailable}, {codeMoving, ErrRangeMoving}, {codeLeaving, ErrRangeMoving}, {codeUnavailable, ErrActorUnavailable},
	{codeNotApplied, ErrQuorumUnavailable}, {codeChainLong, ErrCallChainTooLong},
	{codeOverloaded, ErrOverloaded}, {codeForbidden, ErrForbidden}, {codeTooManySpies, ErrTooManySpies},
	{codeInvalidKey, ErrInvalidKey}, {codeNotRemoved, ErrNotRemoved},
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
	if a, ok := err.(*actor.AnswerError); ok {
		we := &wireError{Code: codeAnswer, Message: a.Err.Error(), Cause: sentinelCode(a.Err)}
		we.ErrType, we.ErrData = encodeOriginal(a.Err)
		return we
	}
	var fe *actor.FailedError
	if errors.As(err, &fe) {
		we := &wireError{Code: codeFailed, Message: fe.Message, Kind: fe.Kind, Key: fe.Key, Method: fe.Method,
			Directive: int(fe.Directive), Cause: sentinelCode(fe.Err)}
		we.ErrType, we.ErrData = encodeOriginal(fe.Err)
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

// encodeOriginal encodes the first error of err's chain whose type is
// registered (Message): its wire name and msgpack form; "" and nil when
// none is.
func encodeOriginal(err error) (string, []byte) {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if name, ok := wire.Default.NameOf(errType(e)); ok {
			if b, merr := wire.Marshal(e); merr == nil {
				return name, b
			}
			return "", nil
		}
	}
	return "", nil
}

// errType is the type an error's registration is looked up by: its
// struct type when it is a pointer.
func errType(e error) reflect.Type {
	t := reflect.TypeOf(e)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// decodeOriginal decodes the original error encodeOriginal encoded, nil
// when its type is not registered here or it does not decode.
func decodeOriginal(name string, data []byte) error {
	if name == "" {
		return nil
	}
	t, ok := wire.Default.TypeOf(name)
	if !ok {
		return nil
	}
	v := reflect.New(t)
	if wire.Unmarshal(data, v.Interface()) != nil {
		return nil
	}
	if e, ok := v.Interface().(error); ok {
		return e
	}
	if e, ok := v.Elem().Interface().(error); ok {
		return e
	}
	return nil
}

// lostType returns the type of the error a handler's failure or answer
// (err, as the host returned it) loses when it crosses to another node:
// the root of its chain, when no error of the chain has a registered
// type. It returns nil when there is no type of the user's to register: a
// registered type, one of this package's sentinels (their codes carry
// them), casty's and context's own errors, and the errors of the errors
// and fmt packages, which are text only and cross as text.
func lostType(err error) reflect.Type {
	var orig error
	if a, ok := err.(*actor.AnswerError); ok {
		orig = a.Err
	} else if fe := (*actor.FailedError)(nil); errors.As(err, &fe) {
		orig = fe.Err
	}
	if orig == nil || sentinelCode(orig) != "" {
		return nil
	}
	var root error
	for e := orig; e != nil; e = errors.Unwrap(e) {
		if _, ok := wire.Default.NameOf(errType(e)); ok {
			return nil
		}
		root = e
	}
	t := reflect.TypeOf(root)
	switch errType(root).PkgPath() {
	case "errors", "fmt", "context", "github.com/casty-go/casty/actor", "github.com/casty-go/casty/casty":
		return nil
	}
	return t
}

// noteLost logs, once per type on this member, an error type a handler
// returned that reaches the caller on another node as text only: errors.As
// and errors.Is against it fail there. Registering it with Message keeps it.
func (cl *cluster) noteLost(k *actor.Kind, method string, err error) {
	t := lostType(err)
	if t == nil {
		return
	}
	if _, seen := cl.lost.LoadOrStore(t, struct{}{}); seen {
		return
	}
	cl.logger.Warn("casty: a handler's error type is not registered: the caller on another node gets its text only, "+
		"and errors.Is and errors.As against it fail there; make it a struct type and register it with casty.Message on every node (doc.go: Errors across nodes)",
		"kind", k.Name, "method", method, "type", t.String())
}

// decodeMarked is decode, but an answer (codeAnswer) stays marked as an
// *actor.AnswerError, for the caller's telemetry: Call, Call0, Do and Do0
// take the mark off (answered) before returning.
func (we *wireError) decodeMarked() error {
	err := we.decode()
	if we.Code == codeAnswer {
		return &actor.AnswerError{Err: err}
	}
	return err
}

// isAnswered reports whether err is an answer still marked (decodeMarked,
// askMarked).
func isAnswered(err error) bool {
	_, ok := err.(*actor.AnswerError)
	return ok
}

// answered takes the mark off an answer: the caller gets the error the
// handler gave Answer.
func answered(err error) error {
	if a, ok := err.(*actor.AnswerError); ok {
		return a.Err
	}
	return err
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
		fe.Err = decodeOriginal(we.ErrType, we.ErrData)
		if fe.Err == nil && we.Cause != "" {
			fe.Err = &remoteError{msg: we.Message, sentinel: sentinelFor(we.Cause)}
		}
		return fe
	case codeAnswer:
		if e := decodeOriginal(we.ErrType, we.ErrData); e != nil {
			if e.Error() == we.Message {
				return e
			}
			return &remoteError{msg: we.Message, sentinel: e}
		}
		return &remoteError{msg: we.Message, sentinel: sentinelFor(we.Cause)}
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
