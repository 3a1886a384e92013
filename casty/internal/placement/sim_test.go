package placement

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/casty-go/casty/ring"
)

// The simulator runs members' acceptors, proposers and histories over a
// network that loses, reorders and partitions messages, one seed a run,
// and checks what agreement promises: every member that holds a version
// holds the same one; a step is chosen only with a majority of its base's
// members accepting it; a minority side changes nothing.

type simMember struct {
	id    ring.NodeID
	hist  *History
	acc   Acceptor
	prop  *Proposer
	n     uint64 // ballot counter
	want  []Change
	alive bool
}

type simPacket struct {
	from, to ring.NodeID
	msg      *Msg // agreement message
	log      *Log // a learned history
}

type simNet struct {
	rnd     *rand.Rand
	members map[ring.NodeID]*simMember
	order   []ring.NodeID
	queue   []simPacket
	side    map[ring.NodeID]int // partition side
	loss    float64
	chosen  map[uint64]uint64 // version -> digest, as first chosen
	// acceptedBy counts, for each chosen (version, digest), the base
	// members that accepted it.
	t *testing.T
}

func simID(i int) ring.NodeID {
	var id ring.NodeID
	id[0], id[15] = byte(i+1), byte(i*7+3)
	return id
}

func (s *simNet) send(p simPacket) {
	if s.side[p.from] != s.side[p.to] || s.rnd.Float64() < s.loss {
		return
	}
	s.queue = append(s.queue, p)
	if s.rnd.IntN(10) == 0 { // duplicate
		s.queue = append(s.queue, p)
	}
}

func (s *simNet) adopt(m *simMember) {
	m.acc.Reset(m.hist.Latest())
	p := m.hist.Latest()
	if d, ok := s.chosen[p.Version]; ok && d != p.Digest {
		s.t.Fatalf("member %x holds version %d with digest %x; %x was chosen", m.id[0], p.Version, p.Digest, d)
	}
	s.chosen[p.Version] = p.Digest
}

func (s *simNet) propose(m *simMember) {
	base := m.hist.Latest()
	if base == nil || !base.Has(m.id) || len(m.want) == 0 {
		return
	}
	m.n++
	m.prop = NewProposer(base, Ballot{N: m.n, By: m.id}, m.want)
	if !m.prop.Wants() {
		m.prop = nil
		return
	}
	msg, to := m.prop.Start()
	for _, id := range to {
		s.send(simPacket{from: m.id, to: id, msg: &msg})
	}
}

func (s *simNet) deliver(p simPacket) {
	m := s.members[p.to]
	if !m.alive {
		return
	}
	if p.log != nil {
		before := m.hist.Version()
		if _, err := m.hist.Merge(*p.log); err != nil {
			s.t.Fatalf("merge: %v", err)
		}
		if m.hist.Version() > before {
			s.adopt(m)
		}
		return
	}
	switch p.msg.Kind {
	case Prepare, Accept:
		reply := m.acc.Handle(*p.msg, func(Change) bool { return true })
		s.send(simPacket{from: p.to, to: p.from, msg: &reply})
	default:
		if p.msg.Kind == Refuse && p.msg.Current < m.hist.Version() {
			// Behind: the proposer sends it the history.
			l := m.hist.Log()
			s.send(simPacket{from: m.id, to: p.from, log: &l})
		}
		if m.prop == nil {
			return
		}
		next, out := m.prop.Step(p.from, *p.msg)
		if next != nil {
			for _, id := range m.prop.base.Members {
				s.send(simPacket{from: m.id, to: id, msg: next})
			}
		}
		switch out {
		case Chosen:
			base := m.prop.base
			// Chosen only when a majority of the base's acceptors accepted
			// it (or have since moved past the base).
			held := 0
			for _, id := range base.Members {
				a := &s.members[id].acc
				if a.base > base.Version || a.base == base.Version && !a.accepted.Less(m.prop.ballot) && slices.Equal(a.value, m.prop.Value) {
					held++
				}
			}
			if held < base.Majority() {
				s.t.Fatalf("version %d chosen with %d of %d members accepting", base.Version+1, held, len(base.Members))
			}
			if m.hist.Version() == base.Version {
				m.hist.Append(m.prop.Value)
				s.adopt(m)
			}
			m.prop = nil
			l := m.hist.Log()
			for _, id := range s.order {
				s.send(simPacket{from: m.id, to: id, log: &l})
			}
		case Preempted, Unsupported:
			if m.prop.MaxSeen.N > m.n {
				m.n = m.prop.MaxSeen.N
			}
			m.prop = nil
		}
	}
}

func runSim(t *testing.T, seed uint64, n int) (versions int) {
	s := &simNet{rnd: rand.New(rand.NewPCG(seed, 1)), members: map[ring.NodeID]*simMember{},
		side: map[ring.NodeID]int{}, chosen: map[uint64]uint64{}, t: t, loss: 0.1}
	for i := range n + 3 {
		id := simID(i)
		s.members[id] = &simMember{id: id, alive: true, hist: &History{}}
		s.order = append(s.order, id)
	}
	founder := s.members[s.order[0]]
	founder.hist = Found(founder.id)
	s.adopt(founder)
	// Every member wants the first n joined; later members want random
	// changes: joins, leaves, removals.
	for _, m := range s.members {
		for _, id := range s.order[1:n] {
			m.want = append(m.want, Change{Op: Join, ID: id})
		}
	}
	for step := 0; step < 4000; step++ {
		s.step(step)
	}
	// Healed and lossless, every member learns the same newest version.
	for _, id := range s.order {
		s.side[id] = 0
	}
	s.loss = 0
	for _, m := range s.members {
		m.want = nil
	}
	for len(s.queue) > 0 {
		s.step(-1)
	}
	var newest *Placement
	for _, m := range s.members {
		if p := m.hist.Latest(); p != nil && (newest == nil || p.Version > newest.Version) {
			newest = p
		}
	}
	l := s.members[founder.id].hist.Log()
	for _, m := range s.members {
		if m.hist.Version() == newest.Version {
			l = m.hist.Log()
		}
	}
	for _, id := range s.order {
		s.send(simPacket{from: id, to: id, log: &l})
	}
	for len(s.queue) > 0 {
		s.step(-1)
	}
	for _, m := range s.members {
		if m.hist.Latest().Digest != newest.Digest {
			t.Fatalf("member %x ends at version %d, not %d", m.id[0], m.hist.Version(), newest.Version)
		}
	}
	return int(newest.Version)
}

// step runs one event: a partition, a heal, a wanted change, a proposal or
// a delivery; with i < 0, a delivery only.
func (s *simNet) step(i int) {
	r := 99
	if i >= 0 {
		r = s.rnd.IntN(100)
	}
	switch {
	case r < 3:
		// A partition: a random side of fewer than half the members.
		for _, id := range s.order {
			s.side[id] = 0
		}
		for _, j := range s.rnd.Perm(len(s.order))[:s.rnd.IntN(len(s.order)/2+1)] {
			s.side[s.order[j]] = 1
		}
	case r < 5:
		for _, id := range s.order {
			s.side[id] = 0
		}
	case r < 7:
		m := s.members[s.order[s.rnd.IntN(len(s.order))]]
		target := s.order[s.rnd.IntN(len(s.order))]
		c := Change{Op: Op(1 + s.rnd.IntN(3)), ID: target}
		for _, o := range s.members {
			if s.rnd.IntN(2) == 0 || o == m {
				o.want = append(o.want, c)
			}
		}
	case r < 25:
		if m := s.members[s.order[s.rnd.IntN(len(s.order))]]; m.prop == nil {
			s.propose(m)
		}
	default:
		if len(s.queue) == 0 {
			return
		}
		j := s.rnd.IntN(len(s.queue))
		p := s.queue[j]
		s.queue[j] = s.queue[len(s.queue)-1]
		s.queue = s.queue[:len(s.queue)-1]
		if s.side[p.from] == s.side[p.to] {
			s.deliver(p)
		}
	}
}

func seeds(t *testing.T, def int) int {
	if v, err := strconv.Atoi(os.Getenv("CASTY_PLACEMENT_SEEDS")); err == nil && v > 0 {
		return v
	}
	if testing.Short() {
		return def / 10
	}
	return def
}

func TestAgreementHoldsUnderLossAndPartitions(t *testing.T) {
	total := 0
	for seed := range uint64(seeds(t, 1000)) {
		for _, n := range []int{3, 5} {
			t.Run(fmt.Sprintf("seed%d-n%d", seed, n), func(t *testing.T) {
				total += runSim(t, seed, n)
			})
			if t.Failed() {
				return
			}
		}
	}
	if total == 0 {
		t.Fatal("no run chose a single version: the simulator does not exercise agreement")
	}
	t.Logf("%d versions chosen in all", total)
}
