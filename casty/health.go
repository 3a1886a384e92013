package casty

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
)

// Health is what a container orchestrator probes: whether the process
// should be restarted (Live) and whether it should get traffic (Ready).
type Health struct {
	// Live is false once Close has returned (and for a nil System): the
	// process has nothing left to do but exit. A member that is draining
	// is still live: restarting it would cut its handoff short. A full
	// member the placement removed while it was alive (a majority saw it
	// dead for Config.Replication.RemoveDeadAfter: it was paused or cut off) stays
	// live and is not settled: it answers the syncs of what it held, and
	// joins again by itself once the placed members have taken its ranges
	// over — finished their syncs, which may wait for members lost for
	// good (RELIABILITY.md, "Operator recovery").
	Live bool `json:"live"`
	// Ready is Joined && Settled && !Draining.
	Ready bool `json:"ready"`
	// Joined: a member that joined through seeds has seen another member;
	// a founder (Start without seeds) and a local system are joined at
	// once; a lite member once it has joined.
	Joined bool `json:"joined"`
	// Settled: a full member is on its own ring and has adopted a
	// placement with no range sync in flight (it votes everywhere it is a
	// replica); a lite member knows at least one full member to route to.
	// A local system is always settled.
	Settled bool `json:"settled"`
	// Draining: Close has begun; the system stops taking calls.
	Draining bool `json:"draining"`
	// Reason says why the system is not ready (or not live), empty when
	// it is.
	Reason string `json:"reason,omitempty"`
}

// Health returns the system's liveness and readiness. It is cheap (a few
// atomic loads and one short lock), so probes may call it often. A nil
// System is live and not ready: a probe served before Start returns.
func (s *System) Health() Health {
	if s == nil {
		return Health{Live: true, Reason: "not started"}
	}
	h := Health{Live: !s.closed.Load(), Draining: s.closing.Load(), Joined: true, Settled: true}
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
		h.Reason = "syncs wait for the copies of members removed as dead: " + strings.Join(waiting, ", ") +
			" (they come back, or an operator gives them up: AcceptLoss)"
	case !h.Settled:
		h.Reason = "ring not settled"
	}
	return h
}

// HealthHandler serves sys's Health for probes: GET …/livez answers 200
// while sys is live and 503 once it is closed, GET …/readyz 200 while it
// is ready and 503 otherwise; other paths are 404. Each answers the
// Health as JSON. Mount it anywhere (the path's last element decides).
//
// A program that starts its probe server before Start returns (a join
// can take Config.Membership.JoinTimeout) serves a nil System until then, which is
// live and not ready:
//
//	var sys atomic.Pointer[casty.System]
//	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
//		casty.HealthHandler(sys.Load()).ServeHTTP(w, r)
//	})
func HealthHandler(sys *System) http.Handler {
	return healthHandler{sys}
}

type healthHandler struct{ sys *System }

func (h healthHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ok bool
	hs := h.sys.Health()
	switch {
	case strings.HasSuffix(r.URL.Path, "/livez"):
		ok = hs.Live
	case strings.HasSuffix(r.URL.Path, "/readyz"):
		ok = hs.Ready
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	json.NewEncoder(w).Encode(hs)
}
