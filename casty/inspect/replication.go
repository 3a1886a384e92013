package inspect

// ReplicationStats is what a member holds and has shipped of replicated
// state (casty.System.Replication).
type ReplicationStats struct {
	// Keys and Bytes are the actors this member holds a copy of and the
	// bytes of their pages (keys and data).
	Keys, Bytes int
	// Usage is what casty.Config.Replication.MaxBytes is compared with: Bytes
	// plus a fixed cost per actor held; Limit is that setting (0: none).
	Usage, Limit int
	// Commits counts the commits this member's activations made; CommitBytes
	// the encoded bytes of their commit messages, every replica counted
	// (the owner's own copy is not sent, so not counted).
	Commits, CommitBytes int64
	// SyncBytes counts the encoded bytes of copies this member pulled from
	// others, in the range syncs that follow a placement change (joins,
	// leaves and their handoff, removals) and in anti-entropy repairs;
	// ServedSyncBytes those it sent in answer to others' syncs — for a
	// member that closed gracefully, what its handoff shipped.
	SyncBytes, ServedSyncBytes int64
	// EarlyAnswers counts the calls made from this member that its own
	// copy answered: the owner's commit (or a read's confirm) carried the
	// answer, and this member's reply completed the quorum
	// (replica/SPEC.md, "Early answers"), a round trip before the owner's
	// reply.
	EarlyAnswers int64
	// RepliesWithheld counts the calls from other members that this member
	// served and did not answer itself, because the caller's member had
	// handed the call the answer the commit carried (the other side of
	// EarlyAnswers; replica/SPEC.md, "Early answers").
	RepliesWithheld int64
	// MissedBasis counts the commits this member's copy could not apply
	// because it lacked the commit they were built on (one it missed, or
	// one still on its way after a short wait), each answered need-full:
	// the owner then sends it the full page set. A copy that keeps up
	// leaves it at zero.
	MissedBasis int64
	// RoundsReadInline counts the rounds (commits, confirms) of this
	// member's activations whose replies the handler read itself from the
	// connection of the call it served, instead of handing that
	// connection's reading to another goroutine and waiting to be woken: a
	// hot key's usual round when its caller's member holds a copy
	// (ARCHITECTURE.md, "After each handler").
	RoundsReadInline int64
	// Deposed counts this member's activations of replicated actors that
	// ended because another member's higher ballot reached this member's
	// copy of their key (casty.ReasonDeposed): their views disagreed for a
	// moment, and the other member activated the key too
	// (replica/SPEC.md, "Read(One) and a deposed owner").
	Deposed int64
	// Repaired counts the copies this member adopted in anti-entropy
	// passes (casty.Config.Replication.RepairInterval): commits it had
	// missed. Pruned counts the copies it dropped: of ranges it left,
	// once their replica set held them, and deleted actors' tombstones
	// past casty.Config.Replication.StateTombstoneTTL.
	Repaired, Pruned int64
	// Placed is the number of members of the placement it acts on, and
	// Syncing whether it is still pulling ranges it entered.
	Placed  int
	Syncing bool
	// PlacementVersion is the agreed placement version it acts on
	// (replica/SPEC.md, "Placement by agreement").
	PlacementVersion uint64
	// Waiting lists, by kind, the members removed as dead, or departed
	// after a graceful leave, whose copies the syncs of ranges this
	// member entered cannot do without: too few
	// of those ranges' previous holders remain to make a read quorum, or,
	// for a sync stalled because those holders each still pull the ranges
	// from the others, the removed members out of reach that its copy
	// sync must hear (replica/SPEC.md, "Copy syncs"). The ranges stay
	// unsynced (no owner serves their keys) until those members come back
	// or an operator gives them up (casty.System.AcceptLoss).
	Waiting []WaitingSync
	// LostMembers counts the members whose copies an operator gave up
	// (casty.System.AcceptLoss), as the agreed placement records them.
	LostMembers int
	// CopySyncs counts the syncs that, making no progress because the
	// members they had to hear were themselves still pulling the ranges,
	// took the ranges from every member's copies instead
	// (replica/SPEC.md, "Copy syncs").
	CopySyncs int64
	// SyncRounds counts the rounds of this member's range syncs that asked
	// other members for their copies. A range waiting for removed
	// members' copies is not asked for while nothing it needs can answer:
	// the count stays put until the view changes.
	SyncRounds int64
}
