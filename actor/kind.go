package actor

import (
	"context"
	"fmt"
	"go/token"
	"iter"
	"reflect"
	"runtime"
	"strings"
	"time"

	"github.com/casty-go/casty/wire"
)

// Forever is an idle timeout that never expires.
const Forever = time.Duration(1<<63 - 1)

// Directive is a supervisor's decision about an activation whose handler
// failed.
type Directive int

const (
	// Keep leaves the activation and its state as the handler left them.
	Keep Directive = iota
	// Reset discards the activation without its Deactivate hook; the next
	// call starts from the last committed state (Config.Durability), or
	// the zero state.
	Reset
	// Stop deactivates gracefully after the failed message (the hook runs);
	// the next call reactivates.
	Stop
)

func (d Directive) String() string {
	switch d {
	case Keep:
		return "keep"
	case Reset:
		return "reset"
	case Stop:
		return "stop"
	}
	return fmt.Sprintf("Directive(%d)", int(d))
}

// Failure describes the failure a supervisor decides on.
type Failure struct {
	// Failures counts this activation's consecutive failures, this one
	// included; a success resets it.
	Failures int
	// Method is the handler that failed.
	Method string
}

// Supervisor decides an activation's fate after its handler failed. It must
// not block. A panicking supervisor counts as Keep.
type Supervisor func(kind, key string, err error, f Failure) Directive

// activator is implemented by actors that want a hook on every activation,
// run after state is restored and before the first message.
type activator interface {
	Activate(ctx context.Context) error
}

// deactivator is implemented by actors that want a hook when an activation
// ends gracefully (idle, explicit deactivation, Stop, shutdown).
type deactivator interface {
	Deactivate(ctx context.Context) error
}

// Shape is the form of a handler.
type Shape uint8

// Handler shapes. Unary shapes take ctx and at most one argument; streaming
// shapes take or return an iter.Seq2[E, error].
const (
	Unary        Shape = iota // M(ctx[, Q]) (R, error) or error
	ServerStream              // M(ctx[, Q]) iter.Seq2[E, error]
	ClientStream              // M(ctx, iter.Seq2[E, error]) (R, error) or error
	DuplexStream              // M(ctx, iter.Seq2[E, error]) iter.Seq2[F, error]
)

// Method is one callable handler of a kind. NewKind derives it; it is
// read only afterwards.
type Method struct {
	Name   string
	Index  int          // index in the method set of *T
	Shape  Shape        // unary or streaming form
	Arg    reflect.Type // argument (element type for ClientStream/Duplex); nil when none
	Result reflect.Type // result (element type for ServerStream/Duplex); nil for error-only
	Func   reflect.Value
}

// KindOptions are a kind's options. NewKind fixes them; they are read only
// afterwards.
type KindOptions struct {
	// Name is the kind's wire name. Empty: wire.DefaultName of the type.
	Name string
	// IdleTimeout deactivates an idle activation of the kind. Zero: the
	// host's Config.IdleTimeout; Forever: never.
	IdleTimeout time.Duration
	// Supervisor decides the kind's failures. Nil: the host's.
	Supervisor Supervisor
	// Service marks a stateless kind whose calls run concurrently, at most
	// Concurrency (at least 1) at a time per activation.
	Service     bool
	Concurrency int
}

// Kind describes an actor or service type: everything NewKind derived from
// its Go type, and its options. A Kind is read only once NewKind returns it.
type Kind struct {
	KindOptions
	Type reflect.Type // the struct type T
	New  func() any   // returns a new zero *T

	// HasActivate and HasDeactivate say whether *T implements activator
	// and deactivator.
	HasActivate, HasDeactivate bool

	byPtr  map[uintptr]*Method
	byName map[string]*Method
}

var (
	ctxType   = reflect.TypeFor[context.Context]()
	errorType = reflect.TypeFor[error]()
)

// NewKind derives a kind from the struct type t with options o: validates
// the options, the state (the exported fields) and every handler's argument
// and result with reg, and indexes the handlers by function pointer and by
// name. Exported methods whose shape is not a handler shape are simply not
// callable.
func NewKind(t reflect.Type, o KindOptions, reg *wire.Registry, newState func() any) (*Kind, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("casty: actor type %v must be a struct", t)
	}
	if o.Name == "" {
		o.Name = wire.DefaultName(t)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	name := o.Name
	// The state is itself a message (its snapshot crosses the wire): it is
	// registered under the kind's name unless it already has one.
	if _, ok := reg.NameOf(t); !ok {
		if _, err := reg.Register(t, name); err != nil {
			return nil, fmt.Errorf("casty: actor %s: state %w", name, err)
		}
	}
	k := &Kind{
		KindOptions: o, Type: t, New: newState,
		byPtr: map[uintptr]*Method{}, byName: map[string]*Method{},
	}
	pt := reflect.PointerTo(t)
	k.HasActivate = pt.Implements(reflect.TypeFor[activator]())
	k.HasDeactivate = pt.Implements(reflect.TypeFor[deactivator]())
	for i := range pt.NumMethod() {
		m := pt.Method(i)
		if m.Name == "Activate" || m.Name == "Deactivate" {
			continue // lifecycle hooks are never callable from outside
		}
		meth, ok := classify(m)
		if !ok {
			continue
		}
		if meth.Arg != nil {
			if err := reg.ValidateValue(meth.Arg, name+"."+m.Name+" argument"); err != nil {
				return nil, fmt.Errorf("casty: actor %s: %w", name, err)
			}
		}
		if meth.Result != nil {
			if err := reg.ValidateValue(meth.Result, name+"."+m.Name+" result"); err != nil {
				return nil, fmt.Errorf("casty: actor %s: %w", name, err)
			}
		}
		k.byPtr[m.Func.Pointer()] = meth
		k.byName[m.Name] = meth
	}
	return k, nil
}

// seq2Elem reports whether t is iter.Seq2[E, error], and returns E.
func seq2Elem(t reflect.Type) (reflect.Type, bool) {
	if t.Kind() != reflect.Func || t.NumIn() != 1 || t.NumOut() != 0 {
		return nil, false
	}
	yield := t.In(0)
	if yield.Kind() != reflect.Func || yield.NumIn() != 2 || yield.NumOut() != 1 ||
		yield.In(1) != errorType || yield.Out(0).Kind() != reflect.Bool {
		return nil, false
	}
	e := yield.In(0)
	// Only iter.Seq2 itself or the identical unnamed func type qualifies.
	if t.Name() != "" && t.PkgPath() != reflect.TypeFor[iter.Seq2[int, error]]().PkgPath() {
		return nil, false
	}
	return e, true
}

// classify recognises the handler shapes of a method of *T (receiver is In(0)).
func classify(m reflect.Method) (*Method, bool) {
	ft := m.Type
	if ft.IsVariadic() || ft.NumIn() < 2 || ft.NumIn() > 3 || ft.In(1) != ctxType {
		return nil, false
	}
	meth := &Method{Name: m.Name, Index: m.Index, Func: m.Func}
	var argStream bool
	if ft.NumIn() == 3 {
		meth.Arg = ft.In(2)
		if e, ok := seq2Elem(meth.Arg); ok {
			meth.Arg, argStream = e, true
		}
	}
	switch {
	case ft.NumOut() == 1 && ft.Out(0) == errorType:
		meth.Shape = Unary
	case ft.NumOut() == 2 && ft.Out(1) == errorType:
		meth.Result = ft.Out(0)
		meth.Shape = Unary
	case ft.NumOut() == 1:
		e, ok := seq2Elem(ft.Out(0))
		if !ok {
			return nil, false
		}
		meth.Result = e
		meth.Shape = ServerStream
		if argStream {
			meth.Shape = DuplexStream
		}
		return meth, true
	default:
		return nil, false
	}
	if argStream {
		meth.Shape = ClientStream
	}
	return meth, true
}

// MethodFor returns the handler whose function (a method expression such as
// (*T).Greet, or its reflect Func) has code pointer ptr, or nil.
func (k *Kind) MethodFor(ptr uintptr) *Method { return k.byPtr[ptr] }

// MethodByName returns the handler called name, or nil.
func (k *Kind) MethodByName(name string) *Method { return k.byName[name] }

// MethodByNameBytes is MethodByName for a name still in a received
// envelope; it does not allocate.
func (k *Kind) MethodByNameBytes(name []byte) *Method { return k.byName[string(name)] }

// methods returns the handlers in method-set order.
func (k *Kind) methods() []*Method {
	out := make([]*Method, 0, len(k.byName))
	for _, m := range k.byName {
		out = append(out, m)
	}
	for i := 1; i < len(out); i++ { // tiny insertion sort by Index
		for j := i; j > 0 && out[j].Index < out[j-1].Index; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// validate checks the options.
func (o *KindOptions) validate() error {
	if o.IdleTimeout < 0 {
		return fmt.Errorf("casty: actor %s: negative idle timeout %v", o.Name, o.IdleTimeout)
	}
	if o.Service && o.Concurrency < 1 {
		return fmt.Errorf("casty: service %s: concurrency must be at least 1, got %d", o.Name, o.Concurrency)
	}
	return nil
}

// ErrNotHandler returns the error for passing fn where a handler of k is
// expected when fn is not one: it wraps ErrNotAHandler and says what fn is
// — a nil func, a function literal, a plain function, an unexported
// method, a method of another type, a lifecycle hook, a method without a
// handler shape — and what to pass instead.
func (k *Kind) ErrNotHandler(fn any) error {
	return fmt.Errorf("%w: %s", ErrNotAHandler, k.notHandlerReason(fn))
}

// handlerShapes lists the handler shapes, for the messages that need them.
const handlerShapes = "M(ctx) error, M(ctx, Q) error, M(ctx) (R, error), M(ctx, Q) (R, error), " +
	"M(ctx[, Q]) iter.Seq2[E, error], M(ctx, iter.Seq2[E, error]) (R, error) or error, " +
	"M(ctx, iter.Seq2[E, error]) iter.Seq2[F, error]"

// notHandlerReason says what fn is and why it is not a handler of k. A
// func value carries no more than its code pointer, so fn is told apart
// by the name the runtime gives that code.
func (k *Kind) notHandlerReason(fn any) string {
	recv := "*" + k.Type.String()
	want := fmt.Sprintf("pass a method expression of an exported method of %s, such as (%s).Name", recv, recv)
	v := reflect.ValueOf(fn)
	if !v.IsValid() || v.Kind() != reflect.Func {
		return fmt.Sprintf("%T is not a function (kind %s); %s", fn, k.Name, want)
	}
	if v.IsNil() {
		return fmt.Sprintf("the %T passed is nil (kind %s); %s", fn, k.Name, want)
	}
	f := runtime.FuncForPC(v.Pointer())
	if f == nil {
		return fmt.Sprintf("%T is not a method of %s (kind %s); %s", fn, recv, k.Name, want)
	}
	full := f.Name()
	pkg, local := splitFuncName(full)
	if isClosure(local) {
		return fmt.Sprintf("%s is a function literal (a closure), not a method of %s (kind %s): only methods can be called by name on any node; %s",
			full, recv, k.Name, want)
	}
	typ, method, ok := strings.Cut(local, ".")
	if !ok {
		return fmt.Sprintf("%s is a plain function, not a method of %s (kind %s); %s", full, recv, k.Name, want)
	}
	typ = strings.TrimSuffix(strings.TrimPrefix(typ, "("), ")")
	bare := strings.TrimPrefix(typ, "*")
	if i := strings.IndexByte(bare, '['); i >= 0 {
		bare = bare[:i] // a generic type's instance: T[...]
	}
	tname := k.Type.Name()
	if i := strings.IndexByte(tname, '['); i >= 0 {
		tname = tname[:i]
	}
	if pkg != k.Type.PkgPath() || bare != tname {
		return fmt.Sprintf("%s is a method of %s.%s, not of %s (kind %s); %s", full, pkg, bare, recv, k.Name, want)
	}
	switch {
	case method == "" || !token.IsExported(method):
		return fmt.Sprintf("(%s).%s is an unexported method: handlers must be exported methods (a call names its handler, and only exported methods can be found by name); export it", recv, method)
	case method == "Activate" || method == "Deactivate":
		return fmt.Sprintf("(%s).%s is a lifecycle hook: the runtime runs it on activation and deactivation, it cannot be called", recv, method)
	}
	return fmt.Sprintf("(%s).%s has type %T, which is not a handler shape; handlers are %s", recv, method, fn, handlerShapes)
}

// splitFuncName splits a runtime function name into its package path and
// the rest ("T.M", "(*T).M", "F", "F.func1").
func splitFuncName(full string) (pkg, local string) {
	slash := strings.LastIndexByte(full, '/')
	dot := strings.IndexByte(full[slash+1:], '.')
	if dot < 0 {
		return "", full
	}
	return full[:slash+1+dot], full[slash+1+dot+1:]
}

// isClosure reports whether a function's local name (splitFuncName) is a
// function literal's: the compiler names them F.func1, F.func1.2,
// glob..func1 and, for generic functions, F[...].func1.
func isClosure(local string) bool {
	for part := range strings.SplitSeq(local, ".") {
		if n, ok := strings.CutPrefix(part, "func"); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			return true
		}
	}
	return false
}
