package sim

import (
	"fmt"
	"time"

	"github.com/casty-go/casty/gossip"
	"github.com/casty-go/casty/gossip/internal/core"
)

// The liveness scenarios: a member is alive when members reach it, so
// neither a lite client bridging a partition nor a forger can keep a cut
// or crashed member alive (gossip/SPEC.md, Failure detection, "Liveness
// is proven by members").

// BridgedResult is what BridgedPartition measures.
type BridgedResult struct {
	Dead    time.Duration // partition -> every majority member holds every cut member DEAD
	Revived int           // ALIVE/JOINED events about a cut member at a majority member while the partition lasted, after Dead
	Rejoin  time.Duration // heal -> every node holds every node ALIVE
}

// BridgedPartition settles n members and one lite client, cuts k members
// off from the others while the client keeps its links to both sides
// (bridged; otherwise the client is on the majority's side, the baseline),
// and measures how long the majority takes to hold every cut member DEAD
// (limit 2 min: a cut member in no majority member's active view is found
// by the anti-entropy probes, one per AntiEntropyInterval per member,
// Failure detection input 2); it lets the partition last hold more, counting cut
// members revived at the majority, then heals it and measures the rejoin
// (limit 2 min).
func BridgedPartition(cfg Config, n, k int, bridged bool, hold time.Duration) (BridgedResult, error) {
	var r BridgedResult
	var s *Sim
	cut := map[gossip.NodeID]bool{}
	var majority map[int]bool
	dead := false
	prev := cfg.OnEvent
	cfg.OnEvent = func(at time.Duration, node int, ev gossip.Event) {
		if dead && majority[node] && cut[ev.Member.ID] && (ev.Kind == gossip.EventAlive || ev.Kind == gossip.EventJoined) {
			r.Revived++
		}
		if prev != nil {
			prev(at, node, ev)
		}
	}
	s, err := Build(cfg, n)
	if err != nil {
		return r, err
	}
	lite := s.AddClient()
	if !s.RunUntil(s.Now()+60*time.Second, s.Converged) {
		return r, fmt.Errorf("sim: seed %d: the lite client did not converge", cfg.Seed)
	}
	s.Run(Settle)
	perm := s.rng.Perm(n)
	minority, rest := perm[:k], perm[k:]
	majority = map[int]bool{}
	for _, i := range rest {
		majority[i] = true
	}
	for _, i := range minority {
		cut[s.ID(i)] = true
	}
	t0 := s.Now()
	if bridged {
		s.Bridge(lite)
		s.Partition(minority, rest)
	} else {
		s.Partition(minority, append(rest[:len(rest):len(rest)], lite))
	}
	holdsDead := func() bool {
		for _, o := range rest {
			for _, c := range minority {
				if !s.Sees(o, c, IsDead) {
					return false
				}
			}
		}
		return true
	}
	if !s.RunUntil(t0+2*time.Minute, holdsDead) {
		return r, fmt.Errorf("sim: seed %d: the majority does not hold the cut members DEAD 2 min into the partition (bridged %v)", cfg.Seed, bridged)
	}
	r.Dead = s.Now() - t0
	dead = true
	s.Run(hold)
	dead = false
	t1 := s.Now()
	s.Heal()
	if !s.RunUntil(t1+2*time.Minute, s.Converged) {
		return r, fmt.Errorf("sim: seed %d: not every node holds every node ALIVE 2 min after the heal", cfg.Seed)
	}
	r.Rejoin = s.Now() - t1
	return r, nil
}

// ForgedAliveResult is what ForgedAlive measures.
type ForgedAliveResult struct {
	Latency     time.Duration // crash -> every survivor holds the crashed member DEAD
	FalseDeaths uint64        // DEAD events about running nodes
}

// ForgedAlive settles n members, crashes one at random and measures the
// time until every survivor holds it DEAD (limit 30 s). With forge set, a
// forger that learned the victim's incarnation sends one member (another
// random one), from 1 s before the crash on, every 250 ms, the victim's
// record ALIVE at one above the incarnation that member holds, as a GOSSIP
// and in a SYNC; client marks its connection as having proved only the
// client credential (otherwise: an open cluster's stranger).
func ForgedAlive(cfg Config, n int, forge, client bool) (ForgedAliveResult, error) {
	var r ForgedAliveResult
	s, err := Build(cfg, n)
	if err != nil {
		return r, err
	}
	base := s.Stats().FalseDeaths
	victim := s.rng.IntN(n)
	target := (victim + 1 + s.rng.IntN(n-1)) % n
	send := func() {
		m, ok := s.Node(target).Member(s.ID(victim))
		if !ok {
			return
		}
		m.Status, m.Incarnation = gossip.Alive, m.Incarnation+1
		from := gossip.Peer{ID: Forger.ID, Addr: Forger.Addr, Role: gossip.RoleMember}
		if client {
			from.Role = gossip.RoleClient
		}
		for _, msg := range []*core.Message{
			{Kind: core.KindGossip, From: from, Members: []gossip.Member{m}},
			{Kind: core.KindSync, From: from, Members: []gossip.Member{m}},
		} {
			if client {
				s.InjectClientVia(target, Forger.Addr, msg)
			} else {
				s.InjectVia(target, Forger.Addr, msg)
			}
		}
	}
	const every = 250 * time.Millisecond
	step := func(until time.Duration, cond func() bool) bool {
		for {
			if forge {
				send()
			}
			next := min(s.Now()+every, until)
			if s.RunUntil(next, cond) {
				return true
			}
			if next >= until {
				return false
			}
		}
	}
	step(s.Now()+time.Second, nil)
	t0 := s.Now()
	s.Crash(victim)
	if !step(t0+30*time.Second, func() bool { return s.AllSee(victim, IsDead) }) {
		return r, fmt.Errorf("sim: seed %d: crashed node not DEAD everywhere 30 s after the crash (forger %v)", cfg.Seed, forge)
	}
	r.Latency = s.Now() - t0
	step(s.Now()+5*time.Second, nil)
	r.FalseDeaths = s.Stats().FalseDeaths - base
	return r, nil
}
