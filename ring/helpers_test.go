package ring

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// randomIDs returns n distinct non-nil node ids drawn from a seeded source.
func randomIDs(rng *rand.Rand, n int) []NodeID {
	ids := make([]NodeID, 0, n)
	seen := map[NodeID]bool{}
	for len(ids) < n {
		var id NodeID
		for i := range id {
			id[i] = byte(rng.UintN(256))
		}
		if id.IsZero() || seen[id] {
			continue
		}
		seen[id] = true
		ids = append(ids, id)
	}
	return ids
}

func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

func mustNew(t testing.TB, members []NodeID) *Ring {
	t.Helper()
	r, err := New(members)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// naive is the reference ring: a flat list of entries, sorted with
// sort.Slice, and queried by linear scans only.
type naive struct {
	members []NodeID
	entries []naiveEntry
}

type naiveEntry struct {
	token uint64
	node  NodeID
}

func newNaive(members []NodeID) naive {
	set := map[NodeID]bool{}
	var n naive
	for _, m := range members {
		if !set[m] {
			set[m] = true
			n.members = append(n.members, m)
		}
	}
	for _, m := range n.members {
		for i := uint32(0); i < VNodes; i++ {
			n.entries = append(n.entries, naiveEntry{Token(m, i), m})
		}
	}
	sort.Slice(n.entries, func(a, b int) bool {
		ea, eb := n.entries[a], n.entries[b]
		if ea.token != eb.token {
			return ea.token < eb.token
		}
		return bytes.Compare(ea.node[:], eb.node[:]) < 0
	})
	return n
}

// ownerIndex: the first entry (in sorted order) with token >= p, else entry 0.
func (n naive) ownerIndex(p uint64) int {
	for i, e := range n.entries {
		if e.token >= p {
			return i
		}
	}
	return 0
}

func (n naive) owner(p uint64) (NodeID, bool) {
	if len(n.entries) == 0 {
		return NodeID{}, false
	}
	return n.entries[n.ownerIndex(p)].node, true
}

func (n naive) replicas(p uint64, k int) []NodeID {
	var out []NodeID
	if len(n.entries) == 0 {
		return out
	}
	start := n.ownerIndex(p)
	for s := 0; s < len(n.entries) && len(out) < k; s++ {
		node := n.entries[(start+s)%len(n.entries)].node
		if !slices.Contains(out, node) {
			out = append(out, node)
		}
	}
	return out
}

// probes returns points worth checking on ring r: random points plus every
// token, token-1 and token+1 of a sample of entries, and the extremes.
func probes(rng *rand.Rand, rings []*Ring, random int) []uint64 {
	ps := []uint64{0, 1, ^uint64(0), ^uint64(0) - 1}
	for range random {
		ps = append(ps, rng.Uint64())
	}
	for _, r := range rings {
		for i := 0; i < len(r.tokens); i += 1 + rng.IntN(8) {
			t := r.tokens[i]
			ps = append(ps, t-1, t, t+1)
		}
	}
	return ps
}
