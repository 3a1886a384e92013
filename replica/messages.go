package replica

import (
	"fmt"

	"github.com/casty-go/casty/hlc"
	"github.com/casty-go/casty/pager"
)

// NodeID names a member: the 16-byte id of the ring and of mux.
type NodeID [16]byte

// Ballot orders owners of one key. An owner takes a fresh ballot from its
// node's hybrid logical clock when it activates (hlc.Clock.Now, after
// observing every ballot it was refused with), so ballots of different
// nodes never tie and a later activation can always outbid an earlier one.
// Safety never depends on the clock: only on ballots being unique and
// totally ordered (SPEC.md).
type Ballot = hlc.Timestamp

// Op is a message's type. Requests go from an owner to a replica; each
// gets exactly one reply of the matching type.
type Op uint8

// The operations (SPEC.md, "Messages").
const (
	// OpPrepare asks a replica to promise the ballot (refuse every lower
	// one from now on) and to say what it holds: reply OpPromise.
	OpPrepare Op = 1 + iota
	// OpPromise answers OpPrepare: Status, Promised, Accepted, Stamp.
	OpPromise
	// OpFetch asks the replica holding the adopted state for the pages the
	// owner lacks: Stamp is the state wanted, Have the owner's listing
	// (nil: send everything), Part the part wanted. Reply OpPages.
	OpFetch
	// OpPages answers OpFetch: Delta is one part of a catch-up delta.
	OpPages
	// OpCommit carries one part of a commit under Ballot: reply OpAck.
	OpCommit
	// OpAck answers OpCommit: StatusOK once the commit is published,
	// StatusPending for an accepted part of an incomplete commit,
	// StatusNeedFull when the replica's state is not the delta's basis,
	// StatusStale when a higher ballot was promised.
	OpAck
	// OpConfirm asks whether Ballot is still the highest promise
	// (Read(Majority)): reply OpConfirmed.
	OpConfirm
	// OpConfirmed answers OpConfirm: Status, Promised, Accepted, Stamp.
	OpConfirmed
	// OpSync asks for the copies held of Kind's actors whose ring points
	// fall in Ranges, from the actor after Key on (Key empty: from the
	// start): a member that just entered the range's replica set pulls
	// what the range's previous set holds. Reply OpSynced.
	OpSync
	// OpSynced answers OpSync: Records, and More when the reply was cut at
	// the batch size (ask again with Key = the last record's key).
	OpSynced
)

var opNames = [...]string{"?", "prepare", "promise", "fetch", "pages", "commit", "ack", "confirm", "confirmed", "sync", "synced"}

func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// reply returns the reply type of a request type.
func (o Op) reply() Op {
	switch o {
	case OpPrepare, OpFetch, OpCommit, OpConfirm, OpSync:
		return o + 1
	}
	return 0
}

// Status is a reply's verdict.
type Status uint8

// The verdicts.
const (
	StatusOK       Status = iota // done
	StatusStale                  // refused: Promised is higher than the request's ballot
	StatusNeedFull               // commit refused: resend the full page set
	StatusPending                // commit part accepted; the commit is not complete yet
	StatusMissing                // fetch refused: the replica no longer holds that state
	StatusCorrupt                // the request was malformed (Reason says why)
	StatusBehind                 // refused: the request's placement Version is older than the replica's
	StatusUnsynced               // sync refused: the replica has not synced that range itself
	StatusFull                   // refused: the replica is at its limit and holds nothing of this actor
	StatusLagging                // sync refused for now: the replica has not adopted the request's newer placement; ask again
	StatusJoining                // sync answered by a newcomer still taking its first ranges: its copies, but not a vote (as StatusUnsynced)
)

var statusNames = [...]string{"ok", "stale", "need-full", "pending", "missing", "corrupt", "behind", "unsynced", "full", "lagging", "joining"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// Msg is one replication message. Kind and Key name the actor; the other
// fields are used as its Op says (SPEC.md lists them per Op).
type Msg struct {
	Op     Op
	Status Status
	// Voter (OpPromise) says the answer counts toward the read quorum:
	// the replica has synced the actor's range (or never left it).
	Voter bool
	More  bool
	// Brief (OpSync, OpSynced) asks for, and marks, records without their
	// pages: the keys and versions a repair compares (Repair).
	Brief bool
	// Copies (OpSync) asks a member that has not synced the ranges itself
	// for the copies it holds anyway, answered StatusUnsynced with
	// Records: a copy sync (NewCopySync) hears every member that may hold
	// the ranges' writes and counts their copies, not their votes.
	Copies bool
	// (The one-byte fields come first, together: a Msg is allocated for
	// every message, and apart they would pad it by 32 bytes.)
	Version  uint64
	Digest   uint64
	Kind     string
	Key      string
	Ballot   Ballot
	Promised Ballot
	Accepted Ballot
	Stamp    pager.Stamp
	// Part is the part a fetch wants (OpFetch, OpPages), or a confirm
	// round's number (OpConfirm), which every reply echoes: the owner
	// counts only confirmations of its running round (SPEC.md, "Owner
	// rounds").
	Part    int
	Have    *pager.Listing
	Delta   *pager.Delta
	Reason  string
	Ranges  []Range // OpSync, OpSynced: the ranges asked for
	Records []Record
	// Facts (a StatusBehind refusal) is the refuser's placement as the
	// runtime encodes it, for the requester to merge.
	Facts []byte
	// Answer (OpCommit) is the runtime's answer to the call whose commit
	// this is, attached by Session.CommitAnswering for the one member whose
	// acceptance completes the write quorum together with the owner's own
	// copy: when that member's copy accepts the commit as a voter (Decides),
	// the write is acknowledged by a quorum, and its runtime may hand the
	// answer to the caller waiting there without the owner's round trip
	// (SPEC.md, "Early answers"). The replica itself ignores it.
	Answer []byte
}

// Decides reports whether reply, a replica's answer to req, completes the
// quorum of req's round together with the owner's own copy: req carries an
// Answer (the owner counted its own copy and needed exactly this member's
// answer more) and, for a commit, the replica published it as a voter, or,
// for a confirm, the replica still holds req's ballot as its promise and
// nothing newer than the owner's state that req names. The runtime of that
// replica may then answer the caller.
func Decides(req, reply *Msg) bool {
	if req == nil || reply == nil || len(req.Answer) == 0 || reply.Status != StatusOK || reply.Ballot != req.Ballot {
		return false
	}
	switch req.Op {
	case OpCommit:
		return reply.Op == OpAck && reply.Voter && req.Delta != nil && reply.Stamp == req.Delta.Stamp
	case OpConfirm:
		return reply.Op == OpConfirmed && !(State{Accepted: req.Accepted, Stamp: req.Stamp}).Less(State{Accepted: reply.Accepted, Stamp: reply.Stamp})
	}
	return false
}

// maxRanges bounds the ranges of one sync (a member's share of a ring of
// 128 vnodes per member stays far below it).
const maxRanges = 1 << 16

// Range is an arc of the ring: the points p with Start < p <= End, wrapping
// past the largest point; Start == End is the whole ring.
type Range struct {
	Start uint64
	End   uint64
}

// Contains reports whether p lies in r.
func (r Range) Contains(p uint64) bool {
	switch {
	case r.Start == r.End:
		return true
	case r.Start < r.End:
		return r.Start < p && p <= r.End
	}
	return p > r.Start || p <= r.End
}

// Within reports whether every point of r lies in o.
func (r Range) Within(o Range) bool {
	if o.Start == o.End {
		return true
	}
	if r.Start == r.End {
		return false
	}
	span, off := o.End-o.Start, r.Start-o.Start
	return off < span && off+(r.End-r.Start) <= span
}

// Overlaps reports whether r and o share a point.
func (r Range) Overlaps(o Range) bool {
	return r.Contains(o.End) || o.Contains(r.End)
}

// Record is one actor's copy as a sync carries it.
type Record struct {
	Key      string
	Accepted Ballot
	Stamp    pager.Stamp
	Pages    []pager.Page
}

// validate checks what decoding alone cannot.
func (m *Msg) validate() error {
	if m.Op < OpPrepare || m.Op > OpSynced {
		return fmt.Errorf("%w: unknown op %d", ErrCorrupt, m.Op)
	}
	if m.Status > StatusJoining {
		return fmt.Errorf("%w: unknown status %d", ErrCorrupt, m.Status)
	}
	if len(m.Ranges) > maxRanges {
		return fmt.Errorf("%w: %d ranges, at most %d", ErrCorrupt, len(m.Ranges), maxRanges)
	}
	if m.Part < 0 || m.Part >= pager.MaxParts {
		return fmt.Errorf("%w: part %d", ErrCorrupt, m.Part)
	}
	if d := m.Delta; d != nil {
		if d.Parts < 0 || d.Parts > pager.MaxParts || d.Part < 0 || (d.Parts > 0 && d.Part >= d.Parts) || (d.Parts == 0 && d.Part != 0) {
			return fmt.Errorf("%w: delta part %d of %d", ErrCorrupt, d.Part, d.Parts)
		}
		if d.Stamp.Compare(d.Basis) <= 0 && !(m.Op == OpPages && d.Stamp == d.Basis) {
			return fmt.Errorf("%w: delta stamp %v not newer than its basis %v", ErrCorrupt, d.Stamp, d.Basis)
		}
	}
	if m.Op == OpCommit && m.Delta == nil {
		return fmt.Errorf("%w: commit without a delta", ErrCorrupt)
	}
	return nil
}
