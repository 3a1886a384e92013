package replica

import "slices"

// SyncNeed returns how many members of a range's previous replica set of
// n members a sync must hear from, for a kind whose commits need w
// acknowledgements: n-w+1, the read quorum. It is enough for both things a
// sync must ensure. Every acknowledged write sits on w members of the set,
// so n-w+1 answers meet it (no acknowledged write is missed); and the
// members not heard from number w-1 at most, too few to acknowledge a
// commit under the old placement, which the members heard from refuse
// from then on (StatusBehind). Members of the set that left or were
// removed count in n and never answer: after the removal of one of a
// Replicas(2), Write(Majority) set, the one member that stayed suffices,
// since it holds every acknowledged write.
func SyncNeed(n, w int) int {
	return ReadQuorum(n, w)
}

// Sync is a member pulling, for one kind and the ranges of the ring it just
// entered that had one previous replica set, the copies held by the range's previous replica set, so that its
// own "I hold nothing" becomes a vote there. Each copy received is adopted
// when newer than the one held (Replica.Adopt); once need members of the
// previous set have answered in full, the range is marked synced
// (Replica.Synced). Every request carries the new placement version, so
// the members that answered refuse owners still on the old placement.
//
// A pure state machine like Session: requests come out as Out values,
// replies go in through Step; Retry asks again the members that have not
// finished (after the runtime's timeout).
type Sync struct {
	kind    string
	rngs    []Range
	version uint64
	digest  uint64
	groups  []Group
	prev    []NodeID // every member of every group, once
	local   *Replica
	batch   int

	cursor   map[NodeID]string
	finished map[NodeID]bool
	copied   map[NodeID]bool // newcomers that handed over their copies in full (StatusJoining)
	unsynced map[NodeID]bool // members that answered they have not synced the ranges
	joining  map[NodeID]bool // of those, newcomers still taking their first ranges
	done     bool
	dropped  bool // abandoned: it marks nothing and takes no more replies
	copySync bool // NewCopySync: unsynced members' copies count
}

// Unsynced returns the members that answered that they have not synced
// the ranges themselves. They do not count toward the sync yet; it asks
// them again until they have.
func (y *Sync) Unsynced() []NodeID { return y.members(y.unsynced) }

// Joining returns the members of Unsynced that are newcomers still taking
// their first ranges: the runtime may sync from the set the ranges have
// without them instead, so that two newcomers never wait on each other
// (SPEC.md, "Membership changes", says why only newcomers).
func (y *Sync) Joining() []NodeID { return y.members(y.joining) }

func (y *Sync) members(set map[NodeID]bool) []NodeID {
	var out []NodeID
	for _, id := range y.prev {
		if set[id] {
			out = append(out, id)
		}
	}
	return out
}

// Group is a set of members a sync must hear Need of.
//
// In a Copies group a newcomer's answer counts as heard once it has handed
// over its copies in full, though it is still joining: the runtime puts
// there the newcomers it leaves out of the count (Joining), so that what
// they pulled so far is not lost with the members they pulled it from
// (SPEC.md, "Membership changes"). They answer at once whatever their own
// syncs' progress, so waiting for them never waits on a sync.
type Group struct {
	Members []NodeID
	Need    int
	Copies  bool
}

// NewSync prepares the sync of kind's range rng, entered at placement
// version, from prev (the range's replica set before; this member is not
// in it), of which need must answer: SyncNeed(n, w) with n the previous
// set's full size.
func NewSync(kind string, rngs []Range, version, digest uint64, prev []NodeID, need int, local *Replica, batch int) *Sync {
	return NewJointSync(kind, rngs, version, digest, []Group{{Members: prev, Need: need}}, local, batch)
}

// NewJointSync is NewSync with several sets, each of which must answer:
// a runtime whose view of the previous placement may be incomplete syncs
// from the range's set before the change and from the set it has without
// this member in the new placement.
func NewJointSync(kind string, rngs []Range, version, digest uint64, groups []Group, local *Replica, batch int) *Sync {
	y := &Sync{kind: kind, rngs: rngs, version: version, digest: digest, groups: groups, local: local, batch: batch,
		cursor: map[NodeID]string{}, finished: map[NodeID]bool{}, copied: map[NodeID]bool{}, unsynced: map[NodeID]bool{}, joining: map[NodeID]bool{}}
	seen := map[NodeID]bool{}
	for _, g := range groups {
		for _, id := range g.Members {
			if !seen[id] {
				seen[id] = true
				y.prev = append(y.prev, id)
			}
		}
	}
	return y
}

// satisfied reports whether every group has Need finished members.
func (y *Sync) satisfied() bool {
	for _, g := range y.groups {
		n := 0
		for _, id := range g.Members {
			if y.finished[id] || g.Copies && y.copied[id] {
				n++
			}
		}
		if n < g.Need {
			return false
		}
	}
	return true
}

// Done reports whether the range is synced.
func (y *Sync) Done() bool { return y.done }

// Abandon stops a sync that has not finished without marking its ranges
// synced: the runtime replaces it by one that must hear more (the member
// re-entered a range under a newer placement while this one ran). It
// adopts no reply from then on.
func (y *Sync) Abandon() {
	if !y.done {
		y.dropped = true
	}
}

// Ranges returns the ranges being synced.
func (y *Sync) Ranges() []Range { return y.rngs }

func (y *Sync) ask(to NodeID) Out {
	return Out{To: to, Msg: &Msg{Op: OpSync, Kind: y.kind, Key: y.cursor[to], Version: y.version, Digest: y.digest, Ranges: y.rngs, Copies: y.copySync}}
}

// NewCopySync prepares a copy sync of kind's ranges rngs: every one of
// members must hand over the copies it holds of them, whether or not it
// has synced them itself (Msg.Copies), and the ranges are synced once all
// have. The runtime asks every member that may hold a write of the ranges
// — so the union of their copies holds every write a member still holds —
// when the ordinary sync cannot finish because the members it must hear
// are themselves still pulling the ranges, each from the others (SPEC.md,
// "Copy syncs").
func NewCopySync(kind string, rngs []Range, version, digest uint64, members []NodeID, local *Replica, batch int) *Sync {
	y := NewJointSync(kind, rngs, version, digest, []Group{{Members: members, Need: len(members), Copies: true}}, local, batch)
	y.copySync = true
	return y
}

// Start asks every member of the previous set.
func (y *Sync) Start() []Out {
	if y.dropped {
		return nil
	}
	if y.satisfied() {
		y.finish()
		return nil
	}
	out := make([]Out, 0, len(y.prev))
	for _, id := range y.prev {
		out = append(out, y.ask(id))
	}
	return out
}

// Retry asks again every member that has not finished answering.
func (y *Sync) Retry() []Out {
	if y.done || y.dropped {
		return nil
	}
	var out []Out
	for _, id := range y.prev {
		if !y.finished[id] && !(y.copied[id] && !y.votes(id)) {
			out = append(out, y.ask(id))
		}
	}
	return out
}

// votes reports whether id is in a group that needs its vote (not only
// its copies).
func (y *Sync) votes(id NodeID) bool {
	for _, g := range y.groups {
		if !g.Copies && slices.Contains(g.Members, id) {
			return true
		}
	}
	return false
}

// Step takes one reply: its records are adopted; a cut reply is continued
// from its last record.
func (y *Sync) Step(from NodeID, m *Msg) []Out {
	if y.done || y.dropped || m.Op != OpSynced || !slices.Equal(m.Ranges, y.rngs) || m.Kind != y.kind || y.finished[from] {
		return nil
	}
	if m.Status == StatusUnsynced || m.Status == StatusJoining {
		y.unsynced[from] = true
		y.joining[from] = m.Status == StatusJoining
	}
	// A newcomer's copies, or an unsynced member's in a copy sync: adopted,
	// not a vote.
	copies := m.Status == StatusJoining || y.copySync && m.Status == StatusUnsynced
	if m.Status != StatusOK && !copies {
		return nil // unsynced or behind: that member does not count (yet)
	}
	if m.Version != y.version || m.Brief || copies && y.copied[from] {
		return nil // an answer to another request (a repair's): not this sync's
	}
	if !copies {
		delete(y.unsynced, from)
		delete(y.joining, from)
	}
	if m.Key != y.cursor[from] {
		return nil // a duplicate or late reply to an earlier request
	}
	for _, rec := range m.Records {
		if _, err := y.local.Adopt(y.kind, rec); err != nil {
			return nil // a malformed copy: that member does not count
		}
	}
	if m.More && len(m.Records) > 0 {
		y.cursor[from] = m.Records[len(m.Records)-1].Key
		return []Out{y.ask(from)}
	}
	if copies {
		y.copied[from] = true
		y.cursor[from] = "" // asked again for its vote, from the start
	} else {
		y.finished[from] = true
	}
	if y.satisfied() {
		y.finish()
	}
	return nil
}

func (y *Sync) finish() {
	y.done = true
	for _, r := range y.rngs {
		y.local.Synced(y.kind, r)
	}
}
