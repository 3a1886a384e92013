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
