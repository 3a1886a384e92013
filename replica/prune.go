package replica

import "slices"

// Prune lets a member forget copies it no longer needs (SPEC.md,
// "Pruning"): copies of actors whose ranges it left (a join or a removal
// moved them to other members), and deleted actors' empty copies
// (tombstones) once they are old. A copy is forgotten only when every
// member of the actor's current replica set (this member aside) answered
// a brief listing in full and holds that copy or a newer one — or, for an
// empty copy, nothing at all — and no owner has promised a ballot above
// the copy's since (its promise equals its accepted ballot). Any doubt
// keeps the copy.
//
// A pure state machine like Repair; Pruned returns what it dropped once
// Done.
type Prune struct {
	kind    string
	rngs    []Range
	version uint64
	digest  uint64
	set     []NodeID
	local   *Replica
	cands   map[string]State // key → the copy it may drop

	cursor map[NodeID]string
	listed map[NodeID]bool
	failed bool                       // a member refused or a listing broke off
	seen   map[string]map[NodeID]bool // key → members that hold it or newer
	older  map[string]bool            // keys some member holds an older copy of
	pruned []string
}

// NewPrune prepares the pruning of cands (keys of kind held here, with the
// copies held) in ranges rngs, whose replica set on placement version is
// set without this member.
func NewPrune(kind string, rngs []Range, version, digest uint64, set []NodeID, cands map[string]State, local *Replica) *Prune {
	return &Prune{kind: kind, rngs: rngs, version: version, digest: digest, set: set, local: local, cands: cands,
		cursor: map[NodeID]string{}, listed: map[NodeID]bool{}, seen: map[string]map[NodeID]bool{}, older: map[string]bool{}}
}

func (p *Prune) list(to NodeID) Out {
	return Out{To: to, Msg: &Msg{Op: OpSync, Brief: true, Kind: p.kind, Key: p.cursor[to], Version: p.version, Digest: p.digest, Ranges: p.rngs}}
}

// Start asks every member of the set for its listing.
func (p *Prune) Start() []Out {
	out := make([]Out, 0, len(p.set))
	for _, id := range p.set {
		out = append(out, p.list(id))
	}
	if len(p.set) == 0 {
		p.failed = true // nobody else holds anything: keep it all
	}
	return out
}

// Step takes one listing reply.
func (p *Prune) Step(from NodeID, m *Msg) []Out {
	if m.Op != OpSynced || !m.Brief || m.Kind != p.kind || !slices.Contains(p.set, from) || p.listed[from] ||
		!slices.Equal(m.Ranges, p.rngs) || m.Key != p.cursor[from] {
		return nil
	}
	if m.Status != StatusOK || m.Version != p.version {
		p.failed = true
		p.listed[from] = true
		return nil
	}
	for _, rec := range m.Records {
		mine, ok := p.cands[rec.Key]
		if !ok {
			continue
		}
		if (State{Accepted: rec.Accepted, Stamp: rec.Stamp}).Less(mine) {
			p.older[rec.Key] = true
			continue
		}
		if p.seen[rec.Key] == nil {
			p.seen[rec.Key] = map[NodeID]bool{}
		}
		p.seen[rec.Key][from] = true
	}
	if m.More && len(m.Records) > 0 {
		p.cursor[from] = m.Records[len(m.Records)-1].Key
		return []Out{p.list(from)}
	}
	p.listed[from] = true
	if p.Done() {
		p.finish()
	}
	return nil
}

// Done reports whether every member's listing is in (or refused).
func (p *Prune) Done() bool {
	for _, id := range p.set {
		if !p.listed[id] {
			return false
		}
	}
	return true
}

// finish drops every candidate the whole set confirmed, if it is still
// the copy held and no higher ballot was promised on it.
func (p *Prune) finish() {
	if p.failed {
		return
	}
	for k, mine := range p.cands {
		// Nobody may hold it older; and everybody must hold it or newer,
		// unless it is empty (then holding nothing is as good).
		if p.older[k] || len(p.seen[k]) < len(p.set) && !p.local.empty(p.kind, k) {
			continue
		}
		if p.local.dropIf(p.kind, k, mine) {
			p.pruned = append(p.pruned, k)
		}
	}
	slices.Sort(p.pruned)
}

// Pruned returns the keys dropped, once Done.
func (p *Prune) Pruned() []string { return p.pruned }
