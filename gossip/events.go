package gossip

import "github.com/casty-go/casty/gossip/internal/core"

// Event is one member event, the record after the change:
//
//	type Event struct {
//		Kind   EventKind
//		Member Member
//	}
//
// Agent.Subscribe delivers them in the order the local table changed.
type Event = core.Event

// EventKind is the kind of a member event. String names it ("joined",
// "alive", "suspect", "dead", "left").
type EventKind = core.EventKind

// The member events (each on a change of the local table).
const (
	// EventJoined: a node became known Alive (new, or back after a tombstone).
	EventJoined = core.EventJoined
	// EventAlive: a suspected node refuted its suspicion.
	EventAlive = core.EventAlive
	// EventSuspect: a node is suspected.
	EventSuspect = core.EventSuspect
	// EventDead: a suspicion went unrefuted (or the death was learned).
	EventDead = core.EventDead
	// EventLeft: a node left gracefully.
	EventLeft = core.EventLeft
)
