package casty

import "github.com/casty-go/casty/actor"

// ServiceKind is a declared service: a stateless, unplaced actor whose calls
// run concurrently, up to its Concurrency, with real backpressure (the rest
// wait in its mailbox).
type ServiceKind[T any] struct {
	k *actor.Kind
}

// Service declares T as a service. T must have no exported fields and no
// lifecycle hooks — services are stateless — or Service panics at package
// initialisation. Options: Name, Concurrency (default 32), Supervise,
// IdleTimeout.
func Service[T any](opts ...KindOption) *ServiceKind[T] {
	k, err := declare[T](true, opts)
	if err != nil {
		panic(err.Error())
	}
	return &ServiceKind[T]{k: k}
}

// Name returns the service's wire name.
func (s *ServiceKind[T]) Name() string { return s.k.Name }

// Ref addresses the service on sys: a member dispatches to its local
// activation (zero hops).
func (s *ServiceKind[T]) Ref(sys *System) Ref[T] {
	return Ref[T]{sys: sys, kind: s.k}
}

func (s *ServiceKind[T]) desc() *actor.Kind { return s.k }
func (s *ServiceKind[T]) typed(*T)          {}

// Beside addresses the service on the member that serves the actor ref
// names: the owner of ref's key (for a replicated kind, the first live
// member of its replica set). Work that must wait next to an actor without
// holding it — a caller parked until a lock it asked for is granted — runs
// there, and reaches the actor with a local call. Which member that is
// follows the ring as it moves; the service runs wherever the call lands,
// so it must not assume it is beside the actor, only that it usually is.
// On a local system Beside is Ref.
func Beside[T, A any](s *ServiceKind[T], ref Ref[A]) Ref[T] {
	r := Ref[T]{sys: ref.sys, kind: s.k}
	if ref.kind != nil && ref.sys != nil && ref.sys.cl != nil {
		r.at = placementOf(ref.kind, ref.key, ref.at)
		r.at.near = ref.kind
	}
	return r
}
