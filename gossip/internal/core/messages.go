package core

import "fmt"

// Kind is the type of a membership message.
type Kind uint8

// The message kinds. The numeric values are wire values (SPEC.md): never
// renumber, only append.
const (
	// KindJoin asks a contact node to adopt the sender into its active view
	// (HyParView JOIN). The contact replies by linking and forwarding the join.
	KindJoin Kind = iota + 1
	// KindForwardJoin carries Subject (the joiner) on a random walk of TTL hops.
	KindForwardJoin
	// KindJoinAccept tells the receiver that the sender put it in its active view
	// (end of a forward-join walk, or the contact's reply); the receiver adds
	// the sender to its own active view.
	KindJoinAccept
	// KindNeighbor asks the receiver to become an active neighbour; Flag set
	// means high priority (the sender's active view is empty).
	KindNeighbor
	// KindNeighborReply answers KindNeighbor; Flag set means accepted.
	KindNeighborReply
	// KindDisconnect tells the receiver the sender dropped it from its active
	// view; Flag set means the sender is leaving the cluster.
	KindDisconnect
	// KindShuffle carries Peers (a sample of the origin's views) on a random
	// walk of TTL hops; Subject is the origin.
	KindShuffle
	// KindShuffleReply answers a shuffle with a sample of the receiver's
	// passive view, sent straight to the origin.
	KindShuffleReply
	// KindGossip is a Plumtree eager push: Members[0] is the payload record,
	// Round the hop count; Flag set means the sender relays it unproven (its
	// own table does not hold that record), so it vouches for nothing
	// (proof.go).
	KindGossip
	// KindIHave is a Plumtree lazy push: IDs announces payloads.
	KindIHave
	// KindPrune asks the receiver to move the sender to its lazy peers.
	KindPrune
	// KindGraft asks for the payloads IDs (none: only the link) and moves the
	// sender to eager peers.
	KindGraft
	// KindSyncDigest opens an anti-entropy round: Digest is the sender's table
	// digest; Flag set means the link is new (skip the symmetry check).
	KindSyncDigest
	// KindSync carries a full table (Members, with tombstone Ages in ms);
	// Flag set means "reply with your table".
	KindSync
	// KindPing is a keepalive probe used by transports that have no keepalive
	// of their own; the receiver answers KindPong.
	KindPing
	// KindPong answers KindPing.
	KindPong

	kindMax = KindPong
)

var kindNames = [...]string{"?", "join", "forward-join", "join-accept", "neighbor", "neighbor-reply",
	"disconnect", "shuffle", "shuffle-reply", "gossip", "ihave", "prune", "graft", "sync-digest", "sync",
	"ping", "pong"}

// String names the kind.
func (k Kind) String() string {
	if k == 0 || k > kindMax {
		return fmt.Sprintf("kind(%d)", uint8(k))
	}
	return kindNames[k]
}

// MsgID names a Plumtree payload. A payload is one member record, and its id
// is derived from the record, so the same update raised by several nodes (five
// neighbours suspecting the same crashed node) is one broadcast.
type MsgID struct {
	Node        NodeID
	Incarnation uint64
	Status      Status
}

// String formats the id for logs.
func (id MsgID) String() string {
	return fmt.Sprintf("%s#%d:%s", id.Node.String()[:8], id.Incarnation, id.Status)
}

// idOf returns the broadcast id of a record.
func idOf(m Member) MsgID { return MsgID{Node: m.ID, Incarnation: m.Incarnation, Status: m.Status} }

// Message is one membership message. It is a flat struct (like a raft
// Message): each Kind uses the fields its doc names and leaves the rest zero.
type Message struct {
	Kind    Kind
	From    Peer     // the sender (claimed; the transport does not authenticate)
	Subject Peer     // ForwardJoin: joiner; Shuffle: origin
	TTL     uint8    // ForwardJoin, Shuffle: hops left
	Flag    bool     // per-kind boolean (see Kind docs)
	Round   uint32   // Gossip: hops from the origin
	Digest  uint64   // SyncDigest: table digest
	Peers   []Peer   // Shuffle, ShuffleReply: samples
	Members []Member // Gossip: the payload; Sync: the table
	Ages    []uint32 // Sync: per record, ms since a tombstone's status was adopted (0 otherwise)
	IDs     []MsgID  // IHave, Graft

	// ClientOnly is not on the wire: the runtime sets it when the
	// connection the message arrived over proved only the client
	// credential (gossip.TransportEvent.ClientOnly). Such a sender cannot
	// vouch for a member-role record (SPEC.md, Admission).
	ClientOnly bool
	// Via is not on the wire either: the runtime sets it to the address of
	// the connection's peer as the transport knows it
	// (gossip.TransportEvent.From). Claims are probed fairly between the
	// connections they arrived over (SPEC.md, Admission); empty means the
	// sender's address (From.Addr) stands for the connection.
	Via string
}
