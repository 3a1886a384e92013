package replica

import (
	"bytes"
	"fmt"

	"github.com/casty-go/casty/hlc"
	"github.com/casty-go/casty/pager"
	"github.com/vmihailenco/msgpack/v5"
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
)

var opNames = [...]string{"?", "prepare", "promise", "fetch", "pages", "commit", "ack", "confirm", "confirmed"}

func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// reply returns the reply type of a request type.
func (o Op) reply() Op {
	switch o {
	case OpPrepare, OpFetch, OpCommit, OpConfirm:
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
)

var statusNames = [...]string{"ok", "stale", "need-full", "pending", "missing", "corrupt"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// Msg is one replication message. Kind and Key name the actor; the other
// fields are used as its Op says (SPEC.md lists them per Op).
type Msg struct {
	Op       Op            `msgpack:"o"`
	Kind     string        `msgpack:"k"`
	Key      string        `msgpack:"y"`
	Ballot   Ballot        `msgpack:"b"`
	Status   Status        `msgpack:"s,omitempty"`
	Promised Ballot        `msgpack:"p"`
	Accepted Ballot        `msgpack:"a"`
	Stamp    pager.Stamp   `msgpack:"t"`
	Part     int           `msgpack:"n,omitempty"`
	Have     *pager.Listing `msgpack:"h,omitempty"`
	Delta    *pager.Delta  `msgpack:"d,omitempty"`
	Reason   string        `msgpack:"r,omitempty"`
}

// Encode returns m's wire form: msgpack, short field names as keys.
func (m *Msg) Encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("replica: encode %v: %w", m.Op, err)
	}
	return buf.Bytes(), nil
}

// Decode parses a message received from the network. Malformed input of
// any kind yields an error wrapping ErrCorrupt, never a panic; a message
// whose delta is inconsistent (part numbers, a stamp not newer than its
// basis) is malformed too.
func Decode(b []byte) (m *Msg, err error) {
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("%w: %v", ErrCorrupt, r)
		}
	}()
	if err := pager.ValidateMsgpack(b); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	m = new(Msg)
	if err := msgpack.NewDecoder(bytes.NewReader(b)).Decode(m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// validate checks what decoding alone cannot.
func (m *Msg) validate() error {
	if m.Op < OpPrepare || m.Op > OpConfirmed {
		return fmt.Errorf("%w: unknown op %d", ErrCorrupt, m.Op)
	}
	if m.Status > StatusCorrupt {
		return fmt.Errorf("%w: unknown status %d", ErrCorrupt, m.Status)
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
