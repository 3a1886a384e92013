package replica

// Quorums of one key's replica set. A replica set holds n members (the
// configured replica count R, capped by the members placed); a write needs
// w acknowledgements with w counted against R, never against n, so a
// member that sees fewer replicas cannot lower its own bar. A sync needs
// ReadQuorum(n, w) = n - w + 1 answers, the smallest count that meets every
// write quorum of the same set in at least one member; an owner's prepare
// and a Read(Majority)'s confirm need OwnerQuorumOf, which meets the sync
// quorums too.

// ReadQuorum returns the smallest count of answers that intersects every
// write quorum of size w in a set of n members. It is at
// least 1 and at most n.
func ReadQuorum(n, w int) int {
	q := n - w + 1
	if q < 1 {
		q = 1
	}
	if q > n {
		q = n
	}
	return q
}

// OwnerQuorumOf is the answers an owner's prepare and a Read(Majority)'s
// confirm need in a set of n members of a kind with r replicas and w
// acknowledgements a write: the read quorum, and never fewer than w,
// capped at n. An owner's quorum must meet every sync quorum (SyncNeed,
// the read quorum) of its set, or an owner cut off with too few others
// could activate or confirm a state that the next placement's set, synced
// from the others, has overwritten since: with Write(All) the read quorum
// is one, the owner's own copy (SPEC.md, "Safety", case 4). Two quorums of
// a set meet when they sum past n; SyncNeed is n - w + 1, so w suffice.
// For a majority w it is the read quorum itself; Write(All) prepares and
// confirms on every replica, as it writes.
func OwnerQuorumOf(n, r, w int) int {
	return min(n, max(ReadQuorumOf(n, r, w), w))
}

// Reachable reports whether a quorum of need answers can still be met by a
// set of n members of which refused have already refused.
func reachable(n, refused, need int) bool { return n-refused >= need }

// ReadQuorumOf is the read quorum of a set of n members of a kind with r
// replicas configured (n < r when fewer members are placed, or after a
// removal left none to take the removed member's place): ReadQuorum(r, w),
// capped at n. Counting against n alone would let a set shrunk by a
// removal read fewer members than meet every write quorum of the set
// before it: writes acknowledged by two of {A, B, C} under w = 2, B
// removed, and the set {A, C} would read A alone (n - w + 1 = 1). Counted
// against r, both answer. r ≤ 0 means n.
func ReadQuorumOf(n, r, w int) int {
	if r < n {
		r = n
	}
	return min(n, ReadQuorum(r, w))
}
