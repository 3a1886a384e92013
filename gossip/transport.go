package gossip

import "github.com/casty-go/casty/gossip/internal/core"

// Transport carries membership frames between nodes. Addresses are the
// strings nodes advertise (Member.Addr). A Transport is used by one Agent
// goroutine; its methods must not block on the network (queue and return).
//
// Links: Monitor(addr) asks the transport to keep a connection to addr
// open and watched (keepalive); when it is lost, or a ping goes
// unanswered, the transport reports a TransportEvent with Failure set. That
// report is the main input from which membership raises suspicion (the
// other is a probe answered by another node at a member's address), so a
// transport must report failures of monitored links, and only of links
// that really failed. Links are kept by address: a Monitor of an address
// two records share (a member restarted there with a new identity) is one
// link. A Send to an unreachable address should be reported
// as LinkLost: when membership dialled that member outside its active view
// (a NEIGHBOR request or a probe) the failure raises a suspicion too
// (SPEC.md, Failure detection).
type Transport interface {
	// Addr returns the address other nodes use to reach this one.
	Addr() string
	// Send queues frame for addr, connecting on demand. It must not block
	// on the network; failures are reported as events (and may also be
	// returned, e.g. ErrClosed).
	Send(addr string, frame []byte) error
	// Monitor keeps a watched link to addr (idempotent).
	Monitor(addr string)
	// Unmonitor stops watching addr; the transport may close the link.
	Unmonitor(addr string)
	// Events delivers inbound frames and link failures, in arrival order.
	// It is closed after Close.
	Events() <-chan TransportEvent
	// Close flushes what was queued (bounded by the transport's own
	// timeout), releases every resource and closes Events.
	Close() error
}

// TransportEvent is an inbound frame (Frame non-nil) or the failure of the
// link to From (Failure non-zero).
type TransportEvent struct {
	From    string      // the peer's advertised address, when known; second-hand records are probed fairly between the Froms they arrived from (SPEC.md, Admission)
	Frame   []byte      // one encoded membership message (SPEC.md), opaque to the transport
	Failure LinkFailure // non-zero: the link to From failed
	// ClientOnly marks a frame that arrived over a connection whose peer
	// did not prove the member credential where one is required (for
	// muxtransport: mux.Session.Member is false, e.g. a lite client that
	// proved only the client secret). Membership then refuses the
	// member-role records that sender vouches for (SPEC.md, Admission).
	// Transports without authentication leave it false.
	ClientOnly bool
}

// LinkFailure says why a monitored link went down (TransportEvent.Failure).
// String names it.
type LinkFailure = core.LinkFailure

// The link failure reasons a transport reports.
const (
	// LinkLost: the connection closed or a dial failed.
	LinkLost = core.LinkLost
	// KeepaliveFailed: the connection stayed open but stopped answering pings.
	KeepaliveFailed = core.KeepaliveFailed
)
