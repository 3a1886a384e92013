// Package placement orders the changes to the placement of replicated
// kinds: which members hold replicas. It is a pure state machine — no
// clock, no network — that casty's runtime drives (casty/agree.go) and
// that this package's simulator drives over a lossy, partitioned network
// of its own (sim_test.go).
//
// The placement is a history: version 1 holds the founder alone; each
// later version is the one before it with one agreed step applied — a
// batch of joins, leaves and removals. A step is chosen by single-decree
// Paxos among the members of the version it builds on (Acceptor,
// Proposer): a majority of that version's members must accept it, so the
// minority side of a partition can change nothing, two members never
// apply different steps as one version, and every member applies the
// versions in order. Each version's digest chains the one before it, so
// two histories agree on a version exactly when they agree on its digest.
// replica/SPEC.md, "Placement by agreement", has the argument.
package placement

import (
	"encoding/binary"
	"errors"
	"slices"

	"github.com/casty-go/casty/ring"
)

// Op is what a change does to a member.
type Op uint8

const (
	// Join places a member that was never placed, or places again one that
	// was removed (a member cut off for longer than the removal delay
	// comes back): never one that left.
	Join Op = iota + 1
	// Leave takes out a member that leaves gracefully (it hands its
	// ranges off).
	Leave
	// Remove takes out a member that a majority of the placement holds
	// dead, or one whose address a new process took.
	Remove
	// Lose records an operator's acceptance that the copies of a member
	// taken out (removed, or left with its handoff cut short) are gone for
	// good: syncs stop waiting for it (its writes that no other member
	// holds are lost). Only an operator proposes it.
	Lose
)

// String names the op.
func (o Op) String() string {
	switch o {
	case Join:
		return "join"
	case Leave:
		return "leave"
	case Remove:
		return "remove"
	case Lose:
		return "lose"
	}
	return "op?"
}

// Change is one member entering or leaving the placement.
type Change struct {
	Op Op          `msgpack:"o"`
	ID ring.NodeID `msgpack:"i"`
}

// Placement is one version of the placement, immutable.
type Placement struct {
	Version uint64
	Digest  uint64
	Founder ring.NodeID
	Members []ring.NodeID // placed, sorted
	Gone    []ring.NodeID // placed once and taken out; sorted
	Removed []ring.NodeID // of Gone, those removed (not left), who may join again; sorted
	Lost    []ring.NodeID // of Gone, those whose copies an operator gave up; sorted
	Ring    *ring.Ring    // Members as a ring
}

// Genesis is version 1: the founder alone.
func Genesis(founder ring.NodeID) *Placement {
	r, _ := ring.New([]ring.NodeID{founder})
	return &Placement{Version: 1, Digest: ring.Hash(founder[:]) | 1, Founder: founder,
		Members: []ring.NodeID{founder}, Ring: r}
}

// Has reports whether id is placed.
func (p *Placement) Has(id ring.NodeID) bool {
	_, ok := slices.BinarySearchFunc(p.Members, id, ring.NodeID.Compare)
	return ok
}

// WasGone reports whether id was placed once and taken out.
func (p *Placement) WasGone(id ring.NodeID) bool {
	_, ok := slices.BinarySearchFunc(p.Gone, id, ring.NodeID.Compare)
	return ok
}

// WasRemoved reports whether id was taken out by a removal, not a leave.
func (p *Placement) WasRemoved(id ring.NodeID) bool {
	_, ok := slices.BinarySearchFunc(p.Removed, id, ring.NodeID.Compare)
	return ok
}

// WasLost reports whether an operator gave up id's copies.
func (p *Placement) WasLost(id ring.NodeID) bool {
	_, ok := slices.BinarySearchFunc(p.Lost, id, ring.NodeID.Compare)
	return ok
}

// Majority is how many members make a majority of p.
func (p *Placement) Majority() int { return len(p.Members)/2 + 1 }

// Valid reports whether c can apply to p: a join of a member not placed
// that did not leave, a leave or removal of a placed member, the loss of
// the copies of a member taken out.
func (p *Placement) Valid(c Change) bool {
	switch c.Op {
	case Join:
		return !c.ID.IsZero() && !p.Has(c.ID) && (!p.WasGone(c.ID) || p.WasRemoved(c.ID))
	case Leave, Remove:
		return p.Has(c.ID)
	case Lose:
		return p.WasGone(c.ID) && !p.WasLost(c.ID)
	}
	return false
}

// Next returns the version after p with step applied. Changes that do not
// apply (Valid) and repeats are skipped, so every member computes the same
// placement from the same step, whatever it holds.
func (p *Placement) Next(step []Change) *Placement {
	n := &Placement{Version: p.Version + 1, Founder: p.Founder, Members: slices.Clone(p.Members),
		Gone: slices.Clone(p.Gone), Removed: slices.Clone(p.Removed), Lost: slices.Clone(p.Lost)}
	h := make([]byte, 8, 8+17*len(step))
	binary.BigEndian.PutUint64(h, p.Digest)
	for _, c := range step {
		h = append(h, byte(c.Op))
		h = append(h, c.ID[:]...)
		if !n.Valid(c) {
			continue
		}
		switch c.Op {
		case Join:
			n.Members = insert(n.Members, c.ID)
			n.Gone, n.Removed, n.Lost = drop(n.Gone, c.ID), drop(n.Removed, c.ID), drop(n.Lost, c.ID)
		case Leave, Remove:
			i, _ := slices.BinarySearchFunc(n.Members, c.ID, ring.NodeID.Compare)
			n.Members = slices.Delete(n.Members, i, i+1)
			n.Gone = insert(n.Gone, c.ID)
			if c.Op == Remove {
				n.Removed = insert(n.Removed, c.ID)
			}
		case Lose:
			n.Lost = insert(n.Lost, c.ID)
		}
	}
	n.Ring, _ = ring.New(n.Members)
	n.Digest = ring.Hash(h) | 1
	return n
}

func drop(ids []ring.NodeID, id ring.NodeID) []ring.NodeID {
	return slices.DeleteFunc(ids, func(x ring.NodeID) bool { return x == id })
}

func insert(ids []ring.NodeID, id ring.NodeID) []ring.NodeID {
	i, _ := slices.BinarySearchFunc(ids, id, ring.NodeID.Compare)
	return slices.Insert(ids, i, id)
}

// Log is a placement history on the wire: the founder, then each step.
type Log struct {
	Founder ring.NodeID `msgpack:"f"`
	Steps   [][]Change  `msgpack:"s"` // Steps[i] makes version i+2
}

// Errors of History.Merge.
var (
	// ErrOtherCluster: the log was founded by another member — a second
	// cluster, or a founder that restarted alone.
	ErrOtherCluster = errors.New("placement: a history founded by another member")
	// ErrDiverged: the log disagrees with this history on a version both
	// hold. Agreement makes this impossible; it means a bug or a forgery.
	ErrDiverged = errors.New("placement: a history that disagrees on an agreed version")
)

// History is the placement versions a member knows, in order. The zero
// History knows none (a member that has not joined yet).
type History struct {
	founder  ring.NodeID
	steps    [][]Change
	versions []*Placement // versions[i] is version i+1
}

// Found starts the history of a new cluster.
func Found(founder ring.NodeID) *History {
	return &History{founder: founder, versions: []*Placement{Genesis(founder)}}
}

// Version returns the newest version known, 0 when none.
func (h *History) Version() uint64 { return uint64(len(h.versions)) }

// Latest returns the newest placement, nil when none.
func (h *History) Latest() *Placement {
	if len(h.versions) == 0 {
		return nil
	}
	return h.versions[len(h.versions)-1]
}

// At returns version v, nil when it is not known.
func (h *History) At(v uint64) *Placement {
	if v == 0 || v > uint64(len(h.versions)) {
		return nil
	}
	return h.versions[v-1]
}

// Append applies step as the next version (one this member saw chosen).
func (h *History) Append(step []Change) *Placement {
	p := h.Latest().Next(step)
	h.steps = append(h.steps, slices.Clone(step))
	h.versions = append(h.versions, p)
	return p
}

// Log returns the history's wire form.
func (h *History) Log() Log {
	return Log{Founder: h.founder, Steps: slices.Clone(h.steps)}
}

// Merge extends h with the versions of l that it lacks and returns how many
// it added. A log that disagrees with h on a version both hold adds
// nothing (ErrDiverged); so does one of another founder (ErrOtherCluster),
// unless h knows no version yet.
func (h *History) Merge(l Log) (int, error) {
	if len(h.versions) == 0 {
		if l.Founder.IsZero() {
			return 0, nil
		}
		h.founder = l.Founder
		h.versions = []*Placement{Genesis(l.Founder)}
		for _, s := range l.Steps {
			h.Append(s)
		}
		return len(h.versions), nil
	}
	if l.Founder != h.founder {
		return 0, ErrOtherCluster
	}
	// A version's digest chains every change of every step up to it
	// (Next), so the log agrees with h on the versions both hold exactly
	// when their steps are equal: they are compared as they are, not by
	// replaying the versions, which builds a ring per version, for every
	// history a member receives.
	both := min(len(l.Steps), len(h.steps))
	for i, s := range l.Steps[:both] {
		if !slices.Equal(s, h.steps[i]) {
			return 0, ErrDiverged
		}
	}
	added := 0
	for _, s := range l.Steps[both:] {
		h.Append(s)
		added++
	}
	return added, nil
}

// LogAt returns the history up to version v in its wire form.
func (h *History) LogAt(v uint64) Log {
	n := min(int(v), len(h.versions)) - 1
	if n < 0 {
		return Log{Founder: h.founder}
	}
	return Log{Founder: h.founder, Steps: slices.Clone(h.steps[:n])}
}
