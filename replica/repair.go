package replica

import "slices"

// Repair is one anti-entropy pass (SPEC.md, "Repair"): a member compares
// what it holds of one kind over ranges it replicates with what the other
// replicas of those ranges hold, and adopts every copy newer than its own
// (Replica.Adopt). It first asks each peer for a brief listing — keys and
// versions, no pages — and then fetches in full only the copies it lacks
// or holds older, one ring point at a time. So a replica that missed
// commits (it was down, partitioned, or its acknowledgement came too late
// to count) catches up without waiting for the actor's next write or
// activation.
//
// A pure state machine like Sync: requests come out as Out values, replies
// go in through Step. A peer that refuses (not synced there itself, or on
// another placement) or never answers is skipped for this pass.
type Repair struct {
	kind    string
	rngs    []Range
	version uint64
	digest  uint64
	peers   []NodeID
	local   *Replica
	point   func(kind, key string) uint64

	cursor   map[NodeID]string // where each peer's listing resumes
	listed   map[NodeID]bool   // peers whose listing is complete (or refused)
	fetching map[NodeID]map[uint64]bool
	adopted  int
}

// NewRepair prepares a pass over kind's ranges rngs, on placement version
// (and digest), with peers: the other members of the ranges' replica set.
func NewRepair(kind string, rngs []Range, version, digest uint64, peers []NodeID, local *Replica) *Repair {
	return &Repair{kind: kind, rngs: rngs, version: version, digest: digest, peers: peers, local: local,
		point: local.point, cursor: map[NodeID]string{}, listed: map[NodeID]bool{}, fetching: map[NodeID]map[uint64]bool{}}
}

func (p *Repair) list(to NodeID) Out {
	return Out{To: to, Msg: &Msg{Op: OpSync, Brief: true, Kind: p.kind, Key: p.cursor[to], Version: p.version, Digest: p.digest, Ranges: p.rngs}}
}

// pointRange is the range holding exactly the ring point pt.
func pointRange(pt uint64) Range { return Range{Start: pt - 1, End: pt} }

// Start asks every peer for its listing.
func (p *Repair) Start() []Out {
	out := make([]Out, 0, len(p.peers))
	for _, id := range p.peers {
		out = append(out, p.list(id))
	}
	return out
}

// Step takes one reply and returns the requests that follow: fetches of
// the copies the listing shows newer, and the listing's continuation.
func (p *Repair) Step(from NodeID, m *Msg) []Out {
	if m.Op != OpSynced || m.Kind != p.kind || !slices.Contains(p.peers, from) {
		return nil
	}
	if m.Status == StatusOK && m.Version != p.version {
		return nil // an answer to another request (a sync's)
	}
	if !m.Brief {
		return p.stepFetch(from, m)
	}
	if p.listed[from] || !slices.Equal(m.Ranges, p.rngs) || m.Key != p.cursor[from] {
		return nil // done with that peer, or a duplicate or late reply
	}
	if m.Status != StatusOK {
		p.listed[from] = true // unsynced or behind: nothing to learn there now
		return nil
	}
	var out []Out
	for _, rec := range m.Records {
		have, _ := p.local.Get(p.kind, rec.Key)
		if !have.Less(State{Accepted: rec.Accepted, Stamp: rec.Stamp}) {
			continue
		}
		pt := p.point(p.kind, rec.Key)
		if p.fetching[from] == nil {
			p.fetching[from] = map[uint64]bool{}
		}
		if !p.fetching[from][pt] {
			p.fetching[from][pt] = true
			out = append(out, Out{To: from, Msg: &Msg{Op: OpSync, Kind: p.kind, Version: p.version, Digest: p.digest, Ranges: []Range{pointRange(pt)}}})
		}
	}
	if m.More && len(m.Records) > 0 {
		p.cursor[from] = m.Records[len(m.Records)-1].Key
		out = append(out, p.list(from))
	} else {
		p.listed[from] = true
	}
	return out
}

// stepFetch adopts the copies of one fetched ring point.
func (p *Repair) stepFetch(from NodeID, m *Msg) []Out {
	if len(m.Ranges) != 1 {
		return nil
	}
	pt := m.Ranges[0].End
	if !p.fetching[from][pt] || m.Ranges[0] != pointRange(pt) {
		return nil
	}
	delete(p.fetching[from], pt)
	if m.Status != StatusOK {
		return nil
	}
	for _, rec := range m.Records {
		if p.point(p.kind, rec.Key) != pt {
			continue
		}
		if ok, err := p.local.Adopt(p.kind, rec); err == nil && ok {
			p.adopted++
		}
	}
	if m.More && len(m.Records) > 0 {
		// More copies at one point than a batch holds: ask again after
		// the last one.
		p.fetching[from][pt] = true
		return []Out{{To: from, Msg: &Msg{Op: OpSync, Kind: p.kind, Key: m.Records[len(m.Records)-1].Key, Version: p.version, Digest: p.digest, Ranges: []Range{pointRange(pt)}}}}
	}
	return nil
}

// Done reports whether every peer's listing is complete and every fetch
// answered.
func (p *Repair) Done() bool {
	for _, id := range p.peers {
		if !p.listed[id] || len(p.fetching[id]) > 0 {
			return false
		}
	}
	return true
}

// Adopted returns how many copies the pass adopted.
func (p *Repair) Adopted() int { return p.adopted }
