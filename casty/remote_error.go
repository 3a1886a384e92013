package casty

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/wire"
)

// The error codec: an error from the host becomes a wireError on the
// serving node and is decoded on the calling node into the error a local
// call would have returned — the same sentinels for errors.Is, the same
// *ActorFailedError for a handler's failure, with the handler's original
// error when its type is registered on both nodes (Message), and the
// sentinels it wraps that are registered on both (Errors).

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
	// codeMessageTooLarge: ErrMessageTooLarge; as the cause of a failure
	// when a handler's result was too large to send.
	codeMessageTooLarge = "message-too-large"
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
	ErrType   string // codeFailed: the registered wire name of the original error's type, or errChainName
	ErrData   []byte // codeFailed: the original error, msgpack (an errChain under errChainName)
}

// errChainName is the ErrType of a handler's error whose chain holds
// sentinels registered with Errors: ErrData is then an errChain. A name no
// Go type gets by default, and which a node that does not know it decodes
// as it would an unregistered type's: the error's text and Cause.
const errChainName = "casty.errors"

// errChain is what crosses of a handler's error that wraps registered
// sentinels: the registered typed error of its chain, if any, and the wire
// names of the sentinels.
type errChain struct {
	Type      string   `msgpack:"t,omitempty"`
	Data      []byte   `msgpack:"d,omitempty"`
	Sentinels []string `msgpack:"s"`
}

// sentinelRegistry holds the sentinels registered with Errors.
var sentinelRegistry userSentinels

// userSentinels maps registered sentinels to their wire names (their
// texts) and back.
type userSentinels struct {
	mu      sync.RWMutex
	n       atomic.Int32 // how many are registered: none is the fast path
	byName  map[string]error
	byValue map[error]string
}

func (u *userSentinels) add(err error) (string, error) {
	if err == nil {
		return "", errors.New("casty: Errors: a nil error is not a sentinel")
	}
	if t := reflect.TypeOf(err); !t.Comparable() {
		return "", fmt.Errorf("casty: Errors: %v is not comparable, so errors.Is cannot match it: register a sentinel value, such as errors.New's, or register the type with Message", t)
	}
	name := err.Error()
	u.mu.Lock()
	defer u.mu.Unlock()
	if old, ok := u.byName[name]; ok {
		if old == err {
			return name, nil
		}
		return "", fmt.Errorf("casty: Errors: the text %q is already registered for another error: a sentinel's text is its wire name, so give each one its own (prefix it with its package)", name)
	}
	if u.byName == nil {
		u.byName, u.byValue = map[string]error{}, map[error]string{}
	}
	u.byName[name], u.byValue[err] = err, name
	u.n.Add(1)
	return name, nil
}

// nameOf returns the wire name of e when e is a registered sentinel.
func (u *userSentinels) nameOf(e error) (name string, ok bool) {
	if u.n.Load() == 0 || !reflect.TypeOf(e).Comparable() {
		return "", false
	}
	// A comparable type can still hold an incomparable value in an
	// interface field: comparing it panics, and it is no sentinel.
	defer func() {
		if recover() != nil {
			name, ok = "", false
		}
	}()
	u.mu.RLock()
	defer u.mu.RUnlock()
	name, ok = u.byValue[e]
	return name, ok
}

// lookup returns the sentinel registered under name.
func (u *userSentinels) lookup(name string) (error, bool) {
	if u.n.Load() == 0 {
		return nil, false
	}
	u.mu.RLock()
	defer u.mu.RUnlock()
	e, ok := u.byName[name]
	return e, ok
}

// walkErrors calls f on err and on every error it wraps, through Unwrap()
// error and Unwrap() []error, depth first as errors.Is does.
func walkErrors(err error, f func(error)) {
	for err != nil {
		f(err)
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walkErrors(e, f)
			}
			return
		default:
			return
		}
	}
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
	{codeInvalidKey, ErrInvalidKey}, {codeNotRemoved, ErrNotRemoved}, {codeMessageTooLarge, ErrMessageTooLarge},
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

// encodeOriginal encodes what of err, a handler's error, can cross as
// itself: the first error of its chain whose type is registered (Message),
// as its wire name and msgpack form, and the sentinels registered with
// Errors that the chain holds, together as an errChain under errChainName
// when there are any. "" and nil when nothing is registered.
func encodeOriginal(err error) (string, []byte) {
	var typed error
	var name string
	var sents []string
	walkErrors(err, func(e error) {
		if typed == nil {
			if n, ok := wire.Default.NameOf(errType(e)); ok {
				typed, name = e, n
			}
		}
		if n, ok := sentinelRegistry.nameOf(e); ok && !slices.Contains(sents, n) {
			sents = append(sents, n)
		}
	})
	var data []byte
	if typed != nil {
		b, merr := wire.Marshal(typed)
		if merr != nil {
			name = ""
		} else {
			data = b
		}
	}
	if len(sents) == 0 {
		return name, data
	}
	b, merr := msgpack.Marshal(&errChain{Type: name, Data: data, Sentinels: sents})
	if merr != nil {
		return "", nil
	}
	return errChainName, b
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

// lostErr returns what a caller on another node cannot test of a
// handler's failure or answer (err, as the host returned it): the type of
// the root of its chain when nothing in the chain is registered (a type
// with Message, a sentinel with Errors), and the root's text when the root
// is an error of the errors or fmt packages (text only: errors.New,
// fmt.Errorf, errors.Join). It returns nil when nothing is lost: no error,
// a registered type or sentinel in the chain, one of this package's
// sentinels (their codes carry them), or a root of casty's or context's
// own.
func lostErr(err error) (t reflect.Type, text string) {
	var orig error
	if a, ok := err.(*actor.AnswerError); ok {
		orig = a.Err
	} else if fe := (*actor.FailedError)(nil); errors.As(err, &fe) {
		orig = fe.Err
	}
	if orig == nil || sentinelCode(orig) != "" {
		return nil, ""
	}
	registered := false
	walkErrors(orig, func(e error) {
		if _, ok := wire.Default.NameOf(errType(e)); ok {
			registered = true
		} else if _, ok := sentinelRegistry.nameOf(e); ok {
			registered = true
		}
	})
	if registered {
		return nil, ""
	}
	root := orig
	for e := orig; e != nil; e = errors.Unwrap(e) {
		root = e
	}
	switch errType(root).PkgPath() {
	case "context", "github.com/casty-go/casty/actor", "github.com/casty-go/casty/casty":
		return nil, ""
	case "errors", "fmt":
		return reflect.TypeOf(root), root.Error()
	}
	return reflect.TypeOf(root), ""
}

// lostTextsPerHandler bounds how many texts of text-only errors noteLost
// logs per handler: one whose texts vary (fmt.Errorf("no item %s", id))
// writes that many lines and one saying the rest go unlogged.
const lostTextsPerHandler = 4

// lostText and lostCount are noteLost's keys in cluster.lost for text-only
// errors: each text logged, and how many a handler logged.
type lostText struct{ kind, method, text string }
type lostCount struct{ kind, method string }

// noteLost logs, loudly and once, an error a handler returned that a
// caller on another node can test by its text only (errors.Is and
// errors.As against it fail there): once per type on this member, or, for
// errors of the errors and fmt packages, once per text and handler (at
// most lostTextsPerHandler texts per handler). Registering the sentinel
// with Errors, or the type with Message, keeps it.
func (cl *cluster) noteLost(k *actor.Kind, method string, err error) {
	t, text := lostErr(err)
	if t == nil {
		return
	}
	if text == "" {
		if _, seen := cl.lost.LoadOrStore(t, struct{}{}); seen {
			return
		}
		cl.logger.Warn("casty: a handler's error type is not registered: the caller on another node gets its text only, "+
			"and errors.Is and errors.As against it fail there; make it a struct type and register it with casty.Message on every node (docs/guide.md: Errors across nodes)",
			"kind", k.Name, "method", method, "type", t.String())
		return
	}
	c, _ := cl.lost.LoadOrStore(lostCount{k.Name, method}, new(atomic.Int32))
	count := c.(*atomic.Int32)
	if count.Load() > lostTextsPerHandler {
		return
	}
	if _, seen := cl.lost.LoadOrStore(lostText{k.Name, method, text}, struct{}{}); seen {
		return
	}
	switch n := count.Add(1); {
	case n <= lostTextsPerHandler:
		cl.logger.Warn("casty: a handler's error is not registered: the caller on another node gets its text only, "+
			"and errors.Is against it fails there; if callers test it, declare it as a sentinel (var ErrX = errors.New(...)) and register it with casty.Errors on every node (docs/guide.md: Errors across nodes)",
			"kind", k.Name, "method", method, "type", t.String(), "err", text)
	case n == lostTextsPerHandler+1:
		cl.logger.Warn("casty: more errors of this handler are not registered; they are not logged",
			"kind", k.Name, "method", method)
	}
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

// remoteError is a handler's error or a refusal that came from another
// node: its text, and what crossed with it for errors.Is and errors.As —
// the handler's registered typed error, its registered sentinels and the
// sentinel of this package it matched there.
type remoteError struct {
	msg     string
	wrapped []error
}

func (e *remoteError) Error() string   { return e.msg }
func (e *remoteError) Unwrap() []error { return e.wrapped }

// remote is a remoteError wrapping sentinel (none when nil).
func remote(msg string, sentinel error) *remoteError {
	if sentinel == nil {
		return &remoteError{msg: msg}
	}
	return &remoteError{msg: msg, wrapped: []error{sentinel}}
}

// handlerErr rebuilds a handler's error (codeFailed, codeAnswer, a
// stream's in-band error): the registered typed error itself when it
// crossed alone with the handler's text; else the text, wrapping the
// registered typed error, the registered sentinels known here and this
// package's sentinel of Cause. nil when nothing crossed but the text.
func (we *wireError) handlerErr() error {
	name, data := we.ErrType, we.ErrData
	var wrapped []error
	if name == errChainName {
		var c errChain
		if wire.Unmarshal(data, &c) != nil {
			c = errChain{}
		}
		for _, n := range c.Sentinels {
			if e, ok := sentinelRegistry.lookup(n); ok {
				wrapped = append(wrapped, e)
			}
		}
		name, data = c.Type, c.Data
	}
	if typed := decodeOriginal(name, data); typed != nil {
		if len(wrapped) == 0 && typed.Error() == we.Message {
			return typed
		}
		wrapped = append([]error{typed}, wrapped...)
	}
	if s := sentinelFor(we.Cause); s != nil {
		wrapped = append(wrapped, s)
	}
	if len(wrapped) == 0 {
		return nil
	}
	return &remoteError{msg: we.Message, wrapped: wrapped}
}

// inBand is a stream's in-band error as the handler or the caller gave it.
func (we *wireError) inBand() error {
	if e := we.handlerErr(); e != nil {
		return e
	}
	return &remoteError{msg: we.Message}
}

// decode turns a wire error back into the error the caller would have got
// locally: the same sentinels, *ActorFailedError with the handler's error
// as far as it crossed (handlerErr). codeWrongOwner decodes as
// ErrActorUnavailable: routing retries it before it reaches a caller.
func (we *wireError) decode() error {
	switch we.Code {
	case codeTooLarge:
		big := &CommitTooLargeError{}
		if msgpack.Unmarshal(we.ErrData, big) == nil {
			return big
		}
		return remote(we.Message, ErrActorUnavailable)
	case codeFailed:
		fe := &actor.FailedError{Kind: we.Kind, Key: we.Key, Method: we.Method, Message: we.Message, Directive: actor.Directive(we.Directive)}
		fe.Err = we.handlerErr()
		return fe
	case codeAnswer:
		return we.inBand()
	case codeReentrancy:
		return &actor.ReentrancyError{Kind: we.Kind, Key: we.Key}
	case codeTimeout:
		return remote(we.Message, ErrTimeout)
	}
	if s := sentinelFor(we.Code); s != nil {
		return remote(we.Message, s)
	}
	return remote(we.Message, ErrActorUnavailable)
}
