package inspect

// KeyPlacement says where one actor lives on this node's current view.
type KeyPlacement struct {
	Kind  string `json:"kind"`
	Key   string `json:"key"`
	Point uint64 `json:"point"` // the key's ring point (ring/SPEC.md §3: H("kind/key"))
	// Owner is the member that serves the actor now; zero when no member
	// can (no full member, or no replica alive).
	Owner Member `json:"owner"`
	// Replicas are the members holding its state, owner's ring order:
	// the owner alone for casty.Replicas(1); for a replicated kind, its replica
	// set on the placement, which may include members that are down
	// (Down lists those).
	Replicas []Member `json:"replicas"`
	Down     []string `json:"down,omitempty"` // ids of replicas not alive
}

// RangeShare is how much of the ring one member owns.
type RangeShare struct {
	Member Member `json:"member"`
	// Ranges is how many ring ranges (one per virtual node) the member
	// owns: where its casty.Replicas(1) actors live.
	Ranges int `json:"ranges"`
	// Share is the fraction of the key space those ranges cover, so the
	// expected fraction of keys the member owns.
	Share float64 `json:"share"`
	// Held is how many ranges the member holds a replica of, owner or not,
	// for the replica count asked (equal to Ranges for 1).
	Held int `json:"held"`
}

// MemberPlacement is one full member's report on the placement of
// replicated kinds it acts on (casty.System.PlacementStatus): its
// ReplicationStats fields about the placement.
type MemberPlacement struct {
	Member Member `json:"member"`
	// Version is the agreed placement version the member acts on.
	Version uint64 `json:"version"`
	// Placed is the number of members of that placement, Syncing whether
	// the member is still pulling ranges it entered.
	Placed  int  `json:"placed"`
	Syncing bool `json:"syncing"`
	// Waiting lists, by kind, the removed members whose copies the
	// member's syncs wait for (ReplicationStats.Waiting): until they come
	// back or an operator gives them up (casty.System.AcceptLoss), no
	// owner serves the keys of those ranges.
	Waiting []WaitingSync `json:"waiting,omitempty"`
	// LostMembers counts the members whose copies an operator gave up.
	LostMembers int `json:"lostMembers"`
	// Err says why the member did not report; the other fields are zero.
	Err string `json:"err,omitempty"`
}

// WaitingSync is one kind's ranges waiting for removed members' copies
// (ReplicationStats.Waiting).
type WaitingSync struct {
	Kind    string
	Members []string // the removed members' ids
	Ranges  int      // how many ranges of the ring the sync has left
}
