package casty

import (
	"context"

	"github.com/casty-go/casty/actor"

	"github.com/casty-go/casty/gossip"
)

// Crash stops a cluster node the way a killed process stops: no drain, no
// LEFT, connections dropped.
func Crash(s *System) {
	s.cl.closeOnce.Do(func() {
		s.cl.closed.Store(true)
		s.cl.agent.Close()
		s.cl.unsub()
		<-s.cl.done
		s.cl.shutdownTransport()
		s.host.Close(context.Background())
	})
}

// MemberEvents subscribes to the node's membership events as strings
// "kind addr".
func MemberEvents(s *System) (<-chan string, func()) {
	events, unsub := s.cl.agent.Subscribe()
	out := make(chan string, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range events {
			select {
			case out <- ev.Kind.String() + " " + ev.Member.Addr:
			default:
			}
		}
	}()
	return out, func() { unsub(); <-done }
}

// HideKind makes a node behave as if it had never declared the kind.
func HideKind(s *System, name string) { s.cl.hidden.Store(name, true); s.cl.hiding.Store(true) }

var _ = gossip.EventJoined

// RefuseAsWrongOwner makes the node answer the next n calls or stream
// opens as if its ring gave their keys to another node.
func RefuseAsWrongOwner(s *System, n int32) { s.cl.refuse.Store(n) }

// Misplaced returns r with its ring point replaced: a Ref whose point does
// not match its key, as a buggy or hostile caller would send it.
func Misplaced[T any](r Ref[T], point uint64) Ref[T] {
	r.at = placement{point: point, known: true}
	return r
}

// PointOwnedBy returns a ring point that via's ring gives to owner.
func PointOwnedBy(via, owner *System) uint64 {
	v := via.cl.view.Load()
	for i := uint64(1); ; i++ {
		p := i * 0x9e3779b97f4a7c15
		if id, ok := v.ring.Owner(p); ok && id == owner.cl.self {
			return p
		}
	}
}

// Untyped makes the kind's remote calls to method go through reflection
// for the rest of the process, as on a node that never calls the method
// itself.
func Untyped(kind, method string) {
	typedInvokers.set(kinds.get(kind).MethodByName(method), nil, true)
}

// WithDurability sets the host's actor.Durability (replication's seam).
func WithDurability(d actor.Durability) Option { return withDurability(d) }
