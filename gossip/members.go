package gossip

import "github.com/casty-go/casty/gossip/internal/core"

// The member vocabulary is defined by the protocol core (gossip/internal/core)
// and named here; these are aliases, so values pass between the two freely.

// NodeID identifies a node for its whole life, across restarts that keep it:
// 16 bytes (a UUID in the casty layer); the zero NodeID is invalid. Methods:
// String (32 lowercase hex digits), IsZero, Compare (bytewise, -1/0/+1).
type NodeID = core.NodeID

// Role says whether a member hosts actors (RoleMember) or only routes calls
// (RoleClient, the lite member casty.Connect makes). String returns "member" or
// "client".
type Role = core.Role

// The roles a member can have.
const (
	// RoleMember is a full member: placed on the ring, hosts activations.
	RoleMember = core.RoleMember
	// RoleClient is a lite member: knows the membership, hosts nothing.
	RoleClient = core.RoleClient
)

// Status is a member's liveness as far as the table knows. The numeric order
// is the severity order used to break incarnation ties: Alive < Suspect <
// Left < Dead. String returns "alive", "suspect", "left" or "dead"; Gone
// reports whether the status is a tombstone (Left or Dead).
type Status = core.Status

// The member statuses, in increasing severity.
const (
	// Alive: the member is believed to be up.
	Alive = core.Alive
	// Suspect: an overlay neighbour lost its link to the member; unless the
	// member refutes within Config.SuspicionTimeout it becomes Dead.
	Suspect = core.Suspect
	// Left: the member departed gracefully. A tombstone, kept for
	// Config.TombstoneTTL.
	Left = core.Left
	// Dead: a suspicion went unrefuted. A tombstone, kept for
	// Config.TombstoneTTL.
	Dead = core.Dead
)

// Member is one record of the member table:
//
//	type Member struct {
//		ID          NodeID // who
//		Addr        string // where others dial it ("host:port")
//		Role        Role   // member or client
//		Incarnation uint64 // bumped only by the member itself, to refute
//		Status      Status // what the table believes
//	}
//
// Of two records about the same node, the higher Incarnation wins, and on a
// tie the more severe Status. Peer returns the addressing part; String
// formats the record for logs.
type Member = core.Member

// Peer is the addressing part of a member record, enough to dial and name a
// node:
//
//	type Peer struct {
//		ID   NodeID
//		Addr string
//		Role Role
//	}
type Peer = core.Peer
