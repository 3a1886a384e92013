package sim

import (
	"time"

	"github.com/casty-go/casty/gossip"
)

// Grow adds n nodes, one every gap of simulated time (each joins through a
// random running node), then runs until every running node sees every
// running node ALIVE or until limit passes. It reports convergence.
func (s *Sim) Grow(n int, gap, limit time.Duration) bool {
	for range n {
		s.AddNode()
		s.Run(gap)
	}
	return s.RunUntil(s.now+limit, s.Converged)
}

// Sees reports whether node observer's table holds subject with a status
// satisfying ok.
func (s *Sim) Sees(observer, subject int, ok func(gossip.Member) bool) bool {
	m, found := s.nodes[observer].node.Member(s.nodes[subject].peer.ID)
	return found && ok(m)
}

// AllSee reports whether every running node other than subject sees it
// with a status satisfying ok.
func (s *Sim) AllSee(subject int, ok func(gossip.Member) bool) bool {
	for _, o := range s.nodes {
		if o.state != Running || o.idx == subject {
			continue
		}
		if !s.Sees(o.idx, subject, ok) {
			return false
		}
	}
	return true
}

// IsAlive is a status predicate for Sees/AllSee.
func IsAlive(m gossip.Member) bool { return m.Status == gossip.Alive }

// IsDead is a status predicate for Sees/AllSee.
func IsDead(m gossip.Member) bool { return m.Status == gossip.Dead }

// IsLeft is a status predicate for Sees/AllSee.
func IsLeft(m gossip.Member) bool { return m.Status == gossip.Left }

// Converged reports whether every running node sees every running or
// paused node ALIVE and every crashed or departed node not ALIVE or
// SUSPECT (or forgotten). It compares table digests first (O(N)) and checks
// one table in full.
func (s *Sim) Converged() bool {
	run := s.Running()
	if len(run) == 0 {
		return true
	}
	d := s.nodes[run[0]].node.Digest()
	for _, i := range run[1:] {
		if s.nodes[i].node.Digest() != d {
			return false
		}
	}
	o := s.nodes[run[0]]
	for _, t := range s.nodes {
		m, ok := o.node.Member(t.peer.ID)
		switch t.state {
		case Running, Paused:
			if !ok || m.Status != gossip.Alive {
				return false
			}
		default:
			if ok && (m.Status == gossip.Alive || m.Status == gossip.Suspect) {
				return false
			}
		}
	}
	return true
}

// Connected reports whether the overlay of running nodes' active views
// (taken as undirected edges) is connected.
func (s *Sim) Connected() bool {
	run := s.Running()
	if len(run) == 0 {
		return true
	}
	adj := map[int][]int{}
	isRun := map[int]bool{}
	for _, i := range run {
		isRun[i] = true
	}
	for _, i := range run {
		for _, p := range s.nodes[i].node.Active() {
			j, ok := s.byAddr[p.Addr]
			if ok && isRun[j] {
				adj[i] = append(adj[i], j)
				adj[j] = append(adj[j], i)
			}
		}
	}
	seen := map[int]bool{run[0]: true}
	stack := []int{run[0]}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, j := range adj[i] {
			if !seen[j] {
				seen[j] = true
				stack = append(stack, j)
			}
		}
	}
	return len(seen) == len(run)
}

// ActiveSizes returns, for each running node, the size of its active view.
func (s *Sim) ActiveSizes() []int {
	var out []int
	for _, i := range s.Running() {
		out = append(out, len(s.nodes[i].node.Active()))
	}
	return out
}
