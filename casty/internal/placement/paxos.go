package placement

import (
	"slices"

	"github.com/casty-go/casty/ring"
)

// Ballot orders proposals for one version: higher wins; ties are broken by
// the proposer's id.
type Ballot struct {
	N  uint64      `msgpack:"n"`
	By ring.NodeID `msgpack:"b"`
}

// Less reports whether b orders before o.
func (b Ballot) Less(o Ballot) bool {
	if b.N != o.N {
		return b.N < o.N
	}
	return b.By.Compare(o.By) < 0
}

// IsZero reports whether b is no ballot.
func (b Ballot) IsZero() bool { return b == Ballot{} }

// Kind is what a Msg is.
type Kind uint8

const (
	// Prepare asks an acceptor to promise a ballot for the version after
	// Base, and whether it supports Step.
	Prepare Kind = iota + 1
	// Promise answers Prepare: Accepted and Step are what the acceptor
	// accepted before (zero when nothing), Support which of the
	// prepare's changes it supports.
	Promise
	// Accept asks an acceptor to accept Step under Ballot.
	Accept
	// Accepted answers Accept.
	Accepted
	// Refuse answers either: the acceptor is on another version (Current)
	// or promised a higher ballot (Ballot).
	Refuse
)

// Msg is one message of the agreement.
type Msg struct {
	Kind     Kind     `msgpack:"k"`
	Base     uint64   `msgpack:"v"` // the version the step builds on
	Digest   uint64   `msgpack:"d"` // Base's digest
	Ballot   Ballot   `msgpack:"b"`
	Step     []Change `msgpack:"s,omitempty"`
	Accepted Ballot   `msgpack:"a,omitempty"`
	Support  []bool   `msgpack:"u,omitempty"`
	Current  uint64   `msgpack:"c,omitempty"` // Refuse: the acceptor's version
}

// Acceptor is one member's vote on the next version. It votes only on the
// version after the one it holds: a member never votes on a version it has
// not reached through every one before it.
type Acceptor struct {
	base     uint64
	digest   uint64
	promised Ballot
	accepted Ballot
	value    []Change
}

// Reset moves the acceptor to vote on the version after p (the member
// adopted p): what it promised or accepted for an earlier version is over.
func (a *Acceptor) Reset(p *Placement) {
	if p == nil || p.Version <= a.base {
		return
	}
	*a = Acceptor{base: p.Version, digest: p.Digest}
}

// Handle answers a Prepare or an Accept. supports says whether this member
// supports a change (a removal only when it holds the member dead too).
func (a *Acceptor) Handle(m Msg, supports func(Change) bool) Msg {
	out := Msg{Base: a.base, Digest: a.digest, Ballot: m.Ballot}
	if a.base == 0 || m.Base != a.base || m.Digest != a.digest {
		out.Kind, out.Current = Refuse, a.base
		return out
	}
	if m.Ballot.Less(a.promised) {
		out.Kind, out.Ballot, out.Current = Refuse, a.promised, a.base
		return out
	}
	switch m.Kind {
	case Prepare:
		a.promised = m.Ballot
		out.Kind, out.Accepted, out.Step = Promise, a.accepted, slices.Clone(a.value)
		out.Support = make([]bool, len(m.Step))
		for i, c := range m.Step {
			out.Support[i] = supports(c)
		}
	case Accept:
		a.promised, a.accepted, a.value = m.Ballot, m.Ballot, slices.Clone(m.Step)
		out.Kind = Accepted
	default:
		out.Kind, out.Current = Refuse, a.base
	}
	return out
}

// Outcome is where a proposal stands.
type Outcome uint8

const (
	// Pending: more answers are needed.
	Pending Outcome = iota
	// Chosen: Value is the step for the version after the base; every
	// member must apply it.
	Chosen
	// Preempted: a higher ballot or another version got in the way; try
	// again (Behind tells whether this member must first learn newer
	// versions).
	Preempted
	// Unsupported: a majority promised, none of the wanted changes had a
	// majority's support, and nothing was accepted before.
	Unsupported
)

// Proposer runs one proposal: the step for the version after base, among
// base's members.
type Proposer struct {
	base    *Placement
	ballot  Ballot
	want    []Change
	phase   Kind // Prepare, then Accept
	heard   map[ring.NodeID]bool
	yes     int
	support []int
	best    Ballot
	bestVal []Change
	value   []Change
	// MaxSeen is the highest ballot an acceptor refused this one for.
	MaxSeen Ballot
	// Ahead: an acceptor holds a newer version than base.
	Ahead bool
	// Value is the chosen step (Chosen).
	Value []Change
}

// NewProposer proposes want (the changes valid on base) under ballot.
func NewProposer(base *Placement, ballot Ballot, want []Change) *Proposer {
	var valid []Change
	for _, c := range want {
		if base.Valid(c) && !slices.Contains(valid, c) {
			valid = append(valid, c)
		}
	}
	return &Proposer{base: base, ballot: ballot, want: valid, phase: Prepare,
		heard: map[ring.NodeID]bool{}, support: make([]int, len(valid))}
}

// Wants reports whether the proposal has anything to propose.
func (p *Proposer) Wants() bool { return len(p.want) > 0 }

// Start returns the prepare to send to every member of the base.
func (p *Proposer) Start() (Msg, []ring.NodeID) {
	return Msg{Kind: Prepare, Base: p.base.Version, Digest: p.base.Digest, Ballot: p.ballot, Step: p.want}, p.base.Members
}

// Step takes an acceptor's answer. It returns the next message to send to
// every member of the base (non-nil when the prepare phase ends) and the
// outcome so far.
func (p *Proposer) Step(from ring.NodeID, m Msg) (*Msg, Outcome) {
	if !p.base.Has(from) || m.Ballot != p.ballot && m.Kind != Refuse {
		return nil, Pending
	}
	switch m.Kind {
	case Refuse:
		if m.Current > p.base.Version {
			p.Ahead = true
			return nil, Preempted
		}
		if p.ballot.Less(m.Ballot) {
			if p.MaxSeen.Less(m.Ballot) {
				p.MaxSeen = m.Ballot
			}
			return nil, Preempted
		}
		return nil, Pending // behind: it cannot vote until it learns the base
	case Promise:
		if p.phase != Prepare || p.heard[from] {
			return nil, Pending
		}
		p.heard[from] = true
		p.yes++
		if !m.Accepted.IsZero() && p.best.Less(m.Accepted) {
			p.best, p.bestVal = m.Accepted, m.Step
		}
		for i := range p.support {
			if i < len(m.Support) && m.Support[i] {
				p.support[i]++
			}
		}
		if p.yes < p.base.Majority() {
			return nil, Pending
		}
		if !p.best.IsZero() {
			// Something may have been chosen under an earlier ballot: only
			// that value may be proposed.
			p.value = p.bestVal
		} else {
			for i, c := range p.want {
				if p.support[i] >= p.base.Majority() {
					p.value = append(p.value, c)
				}
			}
			if len(p.value) == 0 {
				return nil, Unsupported
			}
		}
		p.phase, p.yes, p.heard = Accept, 0, map[ring.NodeID]bool{}
		return &Msg{Kind: Accept, Base: p.base.Version, Digest: p.base.Digest, Ballot: p.ballot, Step: p.value}, Pending
	case Accepted:
		if p.phase != Accept || p.heard[from] {
			return nil, Pending
		}
		p.heard[from] = true
		p.yes++
		if p.yes >= p.base.Majority() {
			p.Value = p.value
			return nil, Chosen
		}
	}
	return nil, Pending
}
