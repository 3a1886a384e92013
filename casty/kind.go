package casty

import (
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/pager"
	"github.com/casty-go/casty/wire"
)

// Quorum is how many replicas must take part in a write or a read:
// One, Majority, All, or an explicit count Quorum(n) with n ≥ 1.
type Quorum int

// The symbolic quorums. Explicit counts are positive.
const (
	One      Quorum = 1
	Majority Quorum = -1
	All      Quorum = -2
)

// Of resolves q against replicas r: the number of acknowledgements needed.
func (q Quorum) Of(r int) int {
	switch q {
	case Majority:
		return r/2 + 1
	case All:
		return r
	}
	return int(q)
}

func (q Quorum) String() string {
	switch q {
	case Majority:
		return "majority"
	case All:
		return "all"
	}
	return fmt.Sprint(int(q))
}

// Forever is an idle timeout that never expires.
const Forever = actor.Forever

// KindOption configures a kind or a message type at declaration.
type KindOption func(*kindOptions)

type kindOptions struct {
	name        string
	replicas    int
	write, read Quorum
	idle        time.Duration
	supervisor  Supervisor
	concurrency int
	service     bool
	set         map[string]bool
}

func (o *kindOptions) mark(what string) {
	if o.set == nil {
		o.set = map[string]bool{}
	}
	o.set[what] = true
}

// Name sets the wire name (default: import path + type name). Keep it when
// renaming the Go type so every node still agrees.
func Name(name string) KindOption {
	return func(o *kindOptions) { o.name = name; o.mark("Name") }
}

// Replicas sets how many nodes hold the actor's state (default 1). Local
// mode runs any value as a single copy. With n > 1 the state must have an
// exported field (Actor panics otherwise: unexported fields are
// transient, and there would be nothing to replicate).
func Replicas(n int) KindOption {
	return func(o *kindOptions) { o.replicas = n; o.mark("Replicas") }
}

// Write sets the write quorum (default One). A write quorum above a
// majority raises the owner's too: with Write(All) an activation and a
// Read(Majority) need every replica, as a write does, so that an owner left
// behind by a placement change always hears of it (replica.OwnerQuorumOf).
func Write(q Quorum) KindOption { return func(o *kindOptions) { o.write = q; o.mark("Write") } }

// Read sets the read quorum (default One: served from the owner's memory).
// Majority confirms each read with the owner's quorum of the replicas
// (replica.OwnerQuorumOf: a majority, or the write quorum when that is
// larger): linearizable (replica/SPEC.md, "Safety").
func Read(q Quorum) KindOption { return func(o *kindOptions) { o.read = q; o.mark("Read") } }

// IdleTimeout sets how long an activation lives without messages (default
// Config.Actors.IdleTimeout, 300 s); Forever never idles out. Tune sets it on one
// system, from a flag or a config file.
func IdleTimeout(d time.Duration) KindOption {
	return func(o *kindOptions) { o.idle = d; o.mark("IdleTimeout") }
}

// Supervise sets the kind's supervisor, overriding the system's.
func Supervise(f Supervisor) KindOption {
	return func(o *kindOptions) { o.supervisor = f; o.mark("Supervise") }
}

// Concurrency bounds a service's calls in flight per activation (default 32).
func Concurrency(n int) KindOption {
	return func(o *kindOptions) { o.concurrency = n; o.mark("Concurrency") }
}

// Kind is a declared actor type: declare it once at package level with
// Actor, and address its actors with Ref.
type Kind[T any] struct {
	k *actor.Kind
}

// Actor declares T as an actor kind. T must be a struct: its exported fields
// are its state, its exported methods with a handler shape its interface.
// Actor panics (at package initialisation, like regexp.MustCompile) with a
// message naming the type, method or field when T's state, a handler's
// argument or its result cannot cross the wire, or an option is invalid.
//
// The struct types its state, arguments and results use may be registered
// with Message in any file, before or after Actor: what is still missing
// is checked when a system starts (Local, Start, Connect), which refuses
// to start with ErrNotRegistered, naming each type and the line to add.
func Actor[T any](opts ...KindOption) *Kind[T] {
	k, err := declare[T](false, opts)
	if err != nil {
		panic(err.Error())
	}
	return &Kind[T]{k: k}
}

func declare[T any](service bool, opts []KindOption) (*actor.Kind, error) {
	o := kindOptions{replicas: 1, write: One, read: One, service: service, concurrency: 32}
	for _, opt := range opts {
		opt(&o)
	}
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("casty: %v is not a struct type", t)
	}
	if !service && o.set["Concurrency"] {
		return nil, fmt.Errorf("casty: actor %v: Concurrency is a service option", t)
	}
	k, err := actor.NewKind(t, actor.KindOptions{
		Name: o.name, IdleTimeout: o.idle, Supervisor: o.supervisor,
		Service: service, Concurrency: o.concurrency,
	}, wire.Default, func() any { return new(T) })
	if err != nil {
		return nil, err
	}
	if service {
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				return nil, fmt.Errorf("casty: service %s: exported field %s: services are stateless (keep state in actors)", k.Name, t.Field(i).Name)
			}
		}
		if k.HasActivate || k.HasDeactivate {
			return nil, fmt.Errorf("casty: service %s: lifecycle hooks are not allowed: services are stateless", k.Name)
		}
		for _, what := range []string{"Replicas", "Write", "Read"} {
			if o.set[what] {
				return nil, fmt.Errorf("casty: service %s: %s does not apply to stateless services", k.Name, what)
			}
		}
	}
	r := replication{replicas: o.replicas, write: o.write, read: o.read}
	if err := r.validate(k.Name); err != nil {
		return nil, err
	}
	var schema *pager.Schema
	if r.replicas > 1 {
		// A replicated state must page: say so at declaration, not at the
		// first commit.
		if schema, err = pager.NewSchema(t); err != nil {
			return nil, fmt.Errorf("casty: actor %s: its state cannot be replicated: %w", k.Name, err)
		}
		// Replicas of nothing: a mistake (state kept in unexported
		// fields, which are transient), never a choice worth its cost.
		if !slices.ContainsFunc(reflect.VisibleFields(t), func(f reflect.StructField) bool { return f.IsExported() && !f.Anonymous }) {
			return nil, fmt.Errorf("casty: actor %s: Replicas(%d), but its state has no exported field: nothing would be replicated (unexported fields are transient; export the state, or drop Replicas)", k.Name, r.replicas)
		}
	}
	if err := kinds.add(k, r, schema); err != nil {
		return nil, err
	}
	return k, nil
}

// replication is how a kind's state is kept: on Replicas nodes, a write
// acknowledged by Write of them, a read answered by Read of them.
type replication struct {
	replicas    int
	write, read Quorum
}

func (r replication) validate(name string) error {
	if r.replicas < 1 {
		return fmt.Errorf("casty: actor %s: replicas must be at least 1, got %d", name, r.replicas)
	}
	for _, q := range []struct {
		what string
		q    Quorum
	}{{"write", r.write}, {"read", r.read}} {
		if q.q == 0 || q.q < All {
			return fmt.Errorf("casty: actor %s: invalid %s quorum %d", name, q.what, int(q.q))
		}
		if n := q.q.Of(r.replicas); n > r.replicas {
			return fmt.Errorf("casty: actor %s: %s quorum %d exceeds replicas %d", name, q.what, n, r.replicas)
		}
	}
	return nil
}

// Name returns the kind's wire name.
func (k *Kind[T]) Name() string { return k.k.Name }

// Ref addresses the actor with the given key on sys. Refs are cheap values;
// the activation is created by the first call that reaches it.
func (k *Kind[T]) Ref(sys *System, key string) Ref[T] {
	r := Ref[T]{sys: sys, kind: k.k, key: key}
	if sys != nil && sys.cl != nil {
		// Hash the key onto the ring once per Ref, not once per call.
		r.at = placementOf(k.k, key, placement{})
	}
	return r
}

func (k *Kind[T]) desc() *actor.Kind { return k.k }
func (k *Kind[T]) typed(*T)          {}

// Declared is what Actor and Service return, for options that take either.
type Declared[T any] interface {
	desc() *actor.Kind
	typed(*T)
}

// Ref is a typed address of one actor: kind, key and the system to reach it
// through. Pass it to Call, Call0, Do and Do0.
type Ref[T any] struct {
	sys  *System
	kind *actor.Kind
	key  string
	at   placement // the key's ring point, in cluster mode (points.go)
}

// Key returns the actor's key.
func (r Ref[T]) Key() string { return r.key }

// Kind returns the actor kind's wire name.
func (r Ref[T]) Kind() string {
	if r.kind == nil {
		return ""
	}
	return r.kind.Name
}

func (r Ref[T]) String() string { return r.Kind() + "/" + r.key }

// MessageType is a registered message struct.
type MessageType[T any] struct{ name string }

// Name returns the message's wire name.
func (m MessageType[T]) Name() string { return m.name }

// Message registers the struct T under a stable wire name (default import
// path + type name; Name overrides) after validating it recursively. It
// panics on an invalid type or a duplicate name. Declarations may come in
// any order and any file: the named structs T uses need not be registered
// yet, and a system refuses to start (ErrNotRegistered) while one that
// crosses the wire never was. Register at package level:
//
//	var _ = casty.Message[Change]()
func Message[T any](opts ...KindOption) MessageType[T] {
	var o kindOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.name == errChainName {
		panic("casty: message " + reflect.TypeFor[T]().String() + ": the wire name " + errChainName + " is reserved (errors across nodes)")
	}
	name, err := wire.Default.Register(reflect.TypeFor[T](), o.name)
	if err != nil {
		panic("casty: message " + err.Error())
	}
	return MessageType[T]{name: name}
}
