package casty

import (
	"context"

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
func HideKind(s *System, name string) { s.cl.hidden.Store(name, true) }

var _ = gossip.EventJoined

// RefuseAsWrongOwner makes the node answer the next n calls or stream
// opens as if its ring gave their keys to another node.
func RefuseAsWrongOwner(s *System, n int32) { s.cl.refuse.Store(n) }
