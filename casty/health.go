package casty

import (
	"slices"
	"strings"

	"github.com/casty-go/casty/casty/inspect"
)

// Health returns the system's liveness and readiness. It is cheap (a few
// atomic loads and one short lock), so probes may call it often. A nil
// System is live and not ready: a probe served before Start returns.
func (s *System) Health() inspect.Health {
	if s == nil {
		return inspect.Health{Live: true, Reason: "not started"}
	}
	h := inspect.Health{Live: !s.closed.Load(), Draining: s.closing.Load(), Joined: true, Settled: true}
	removed := false
	var waiting []string
	if cl := s.cl; cl != nil {
		h.Draining = h.Draining || cl.closed.Load()
		cl.mu.Lock()
		h.Joined = cl.joined
		cl.mu.Unlock()
		v := cl.view.Load()
		if cl.lite {
			h.Settled = len(v.members) > 0
		} else {
			rp := cl.rp
			if rp != nil {
				rp.mu.Lock()
				founder := !rp.joiner
				rp.mu.Unlock()
				h.Joined = h.Joined || founder
			}
			h.Settled = v.ring.Has(cl.self) && (rp == nil || rp.settled() && v.pl != nil && v.pl.placed(cl.self))
			if rp != nil && !h.Settled {
				rp.mu.Lock()
				for _, run := range rp.runs {
					for _, id := range run.waiting {
						if !slices.Contains(waiting, id.String()) {
							waiting = append(waiting, id.String())
						}
					}
				}
				rp.mu.Unlock()
			}
			if rp != nil && !h.Draining && v.pl != nil && v.pl.p.WasRemoved(cl.self) && len(kinds.replicated()) > 0 {
				h.Settled, removed = false, true
			}
		}
	}
	h.Ready = h.Joined && h.Settled && !h.Draining
	switch {
	case removed:
		h.Reason = "removed from the placement while cut off (a majority saw it dead for Config.Replication.RemoveDeadAfter): it joins the placement again once the placed members have finished their syncs (castyctl waiting lists what they wait for)"
	case !h.Live:
		h.Reason = "closed"
	case h.Draining:
		h.Reason = "draining"
	case !h.Joined:
		h.Reason = "not joined"
	case !h.Settled && len(waiting) > 0:
		h.Reason = "syncs wait for the copies of members removed as dead or departed before their handoff ended: " + strings.Join(waiting, ", ") +
			" (they come back, or an operator gives them up: AcceptLoss)"
	case !h.Settled:
		h.Reason = "ring not settled"
	}
	return h
}
