package mux

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
)

// NodeID identifies a node: 16 opaque bytes, usually random (a UUID).
type NodeID [16]byte

// NewNodeID draws a random NodeID from r (crypto/rand.Reader if nil).
func NewNodeID(r io.Reader) (NodeID, error) {
	if r == nil {
		r = rand.Reader
	}
	var id NodeID
	if _, err := io.ReadFull(r, id[:]); err != nil {
		return NodeID{}, fmt.Errorf("mux: node id: %w", err)
	}
	return id, nil
}

// String renders the id as 32 hex digits.
func (id NodeID) String() string { return hex.EncodeToString(id[:]) }

// Compare orders ids bytewise: -1, 0 or +1.
func (id NodeID) Compare(other NodeID) int { return bytes.Compare(id[:], other[:]) }

// Role is what a peer announces itself as in the handshake.
type Role uint8

const (
	// RoleMember is a full member: it owns ranges and hosts actors.
	RoleMember Role = 1
	// RoleClient is a lite member: it routes calls and hosts nothing.
	RoleClient Role = 2
)

// String returns "member", "client" or role(n).
func (r Role) String() string {
	switch r {
	case RoleMember:
		return "member"
	case RoleClient:
		return "client"
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}

// Lane names one of the long-lived message channels of a session. Each
// lane is its own yamux stream with its own credit window, so traffic on
// one lane never waits for another lane's window.
type Lane uint8

const (
	// LaneControl carries the handshake and then membership gossip.
	LaneControl Lane = 0
	// LaneMessage carries actor calls.
	LaneMessage Lane = 1
	// LaneReplication carries state fan-out (commits, deltas, handoff).
	LaneReplication Lane = 2

	numLanes = 3
)

// String returns the lane's name.
func (l Lane) String() string {
	switch l {
	case LaneControl:
		return "control"
	case LaneMessage:
		return "message"
	case LaneReplication:
		return "replication"
	}
	return fmt.Sprintf("lane(%d)", uint8(l))
}
