package inspect

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Health is what a container orchestrator probes: whether the process
// should be restarted (Live) and whether it should get traffic (Ready).
type Health struct {
	// Live is false once Close has returned (and for a nil System): the
	// process has nothing left to do but exit. A member that is draining
	// is still live: restarting it would cut its handoff short. A full
	// member the placement removed while it was alive (a majority saw it
	// dead for casty.Config.Replication.RemoveDeadAfter: it was paused or
	// cut off) stays live and is not settled: it answers the syncs of
	// what it held, and joins again by itself once the placed members
	// have taken its ranges over — finished their syncs, which may wait
	// for members lost for good (RELIABILITY.md, "Operator recovery").
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

// HealthHandler serves the Health that health returns, for probes: GET
// …/livez answers 200 while it is live and 503 once it is not, GET
// …/readyz 200 while it is ready and 503 otherwise; other paths are 404.
// Each answers the Health as JSON. Mount it anywhere (the path's last
// element decides). health is called on every request; casty's
// System.Health is cheap enough for that:
//
//	http.Handle("/", inspect.HealthHandler(sys.Health))
//
// A program that starts its probe server before Start returns (a join
// can take casty.Config.Membership.JoinTimeout) serves a nil System until
// then, which is live and not ready:
//
//	var sys atomic.Pointer[casty.System]
//	http.Handle("/", inspect.HealthHandler(func() inspect.Health {
//		return sys.Load().Health()
//	}))
func HealthHandler(health func() Health) http.Handler {
	return healthHandler{health}
}

type healthHandler struct{ health func() Health }

func (h healthHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ok bool
	hs := h.health()
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
