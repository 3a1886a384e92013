package casty_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/inspect"
)

// probe asks h for path and returns the status code and the Health body.
func healthProbe(t *testing.T, h http.Handler, path string) (int, inspect.Health) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	var hs inspect.Health
	if rec.Code != http.StatusNotFound {
		if err := json.Unmarshal(rec.Body.Bytes(), &hs); err != nil {
			t.Fatalf("%s: body %q: %v", path, rec.Body.String(), err)
		}
	}
	return rec.Code, hs
}

// HoldGate is an actor whose Hold blocks until its gate opens.
type HoldGate struct{}

// The gate of the running test (each run makes its own).
var holdEntered, holdGate chan struct{}

func (*HoldGate) Hold(ctx context.Context) error {
	holdEntered <- struct{}{}
	<-holdGate
	return nil
}

var HoldGates = casty.Actor[HoldGate](casty.Name("test.health.HoldGate"))

// Before a system exists a probe is live and not ready; a founder is
// ready at once; a member is not ready while it drains and not live once
// closed.
func TestHealthReadinessLifecycle(t *testing.T) {
	if code, hs := healthProbe(t, inspect.HealthHandler((*casty.System)(nil).Health), "/readyz"); code != 503 || hs.Ready || !hs.Live {
		t.Errorf("nil system /readyz: %d %+v, want 503, live, not ready", code, hs)
	}
	if code, _ := healthProbe(t, inspect.HealthHandler((*casty.System)(nil).Health), "/livez"); code != 200 {
		t.Errorf("nil system /livez: %d, want 200", code)
	}
	if code, _ := healthProbe(t, inspect.HealthHandler((*casty.System)(nil).Health), "/other"); code != 404 {
		t.Errorf("/other: %d, want 404", code)
	}

	holdEntered, holdGate = make(chan struct{}, 1), make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sys, err := casty.Start(ctx, "127.0.0.1:0", casty.WithConfig(fastCluster()), quiet())
	if err != nil {
		t.Fatal(err)
	}
	h := inspect.HealthHandler(sys.Health)
	waitFor(t, 5*time.Second, "a founder ready", func() bool { return sys.Health().Ready })
	if code, hs := healthProbe(t, h, "/healthz/readyz"); code != 200 || !hs.Joined || !hs.Settled || hs.Draining {
		t.Errorf("founder /readyz: %d %+v, want 200 joined settled", code, hs)
	}

	go casty.Do0(ctx, HoldGates.Ref(sys, "k"), (*HoldGate).Hold)
	<-holdEntered
	closed := make(chan error, 1)
	go func() { closed <- sys.Close(ctx) }()
	waitFor(t, 5*time.Second, "draining", func() bool { return sys.Health().Draining })
	if code, hs := healthProbe(t, h, "/readyz"); code != 503 || hs.Ready || hs.Reason != "draining" {
		t.Errorf("draining /readyz: %d %+v, want 503 draining", code, hs)
	}
	if code, _ := healthProbe(t, h, "/livez"); code != 200 {
		t.Errorf("draining /livez: %d, want 200 (a drain must not be cut short)", code)
	}
	close(holdGate)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if code, hs := healthProbe(t, h, "/livez"); code != 503 || hs.Live {
		t.Errorf("closed /livez: %d %+v, want 503", code, hs)
	}
}

// A joiner is not ready until it has synced the ranges it replicates
// (held here by the founder not answering replication), and is ready once
// it has; a lite member is ready once it knows full members.
func TestHealthJoinerAndLite(t *testing.T) {
	nodes := startCluster(t, 2, casty.WithConfig(replicationConfig()))
	release := casty.HoldReplication(nodes[0])
	release2 := casty.HoldReplication(nodes[1])
	joiner := startNode(t, []string{nodes[0].Addr()}, casty.WithConfig(replicationConfig()))
	t.Cleanup(func() { release(); release2() }) // before the nodes close
	h := inspect.HealthHandler(joiner.Health)
	if code, hs := healthProbe(t, h, "/readyz"); code != 503 || hs.Settled || !hs.Joined || hs.Reason != "ring not settled" {
		t.Errorf("a joiner whose sync is held: /readyz %d %+v, want 503 joined, not settled", code, hs)
	}
	release()
	release2()
	waitFor(t, 15*time.Second, "the joiner ready", func() bool { return joiner.Health().Ready })
	if !casty.Synced(joiner) {
		t.Error("the joiner is ready but has not synced its ranges")
	}
	if code, _ := healthProbe(t, h, "/readyz"); code != 200 {
		t.Errorf("a settled joiner: /readyz %d, want 200", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lite, err := casty.Connect(ctx, []string{nodes[0].Addr()}, casty.WithConfig(fastCluster()), quiet())
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the lite member ready", func() bool { return lite.Health().Ready })
	closeSys(t, lite)
	if hs := lite.Health(); hs.Ready || hs.Live {
		t.Errorf("closed lite member: %+v, want neither live nor ready", hs)
	}
}

// A live member the placement removed (seen dead while it was only slow
// or cut off) stays live — it joins again once the others took its ranges over,
// and a restart would only lose the copies it may hold alone — and is not
// ready until then.
func TestHealthOfAMemberRemovedWhileAlive(t *testing.T) {
	parallel(t)
	nodes := startReplicated(t, 3)
	h := inspect.HealthHandler(nodes[2].Health)
	if code, hs := healthProbe(t, h, "/livez"); code != 200 || !hs.Ready {
		t.Fatalf("a settled member: /livez %d %+v", code, hs)
	}
	casty.RemoveFromPlacement(nodes[2])
	code, hs := healthProbe(t, h, "/livez")
	if code != 200 || !hs.Live || hs.Ready || !strings.Contains(hs.Reason, "joins the placement again") {
		t.Fatalf("a member removed while alive: /livez %d %+v, want 200, live, not ready, a reason saying it is joined again", code, hs)
	}
	if code, _ := healthProbe(t, h, "/readyz"); code != 503 {
		t.Fatalf("a member removed while alive: /readyz %d, want 503", code)
	}
	if hs := nodes[0].Health(); !hs.Live {
		t.Fatalf("another member: %+v", hs)
	}
}

func ExampleHealthHandler() {
	sys := casty.Local()
	defer sys.Close(context.Background())
	// A container's probes: livenessProbe GET /livez, readinessProbe GET /readyz.
	mux := http.NewServeMux()
	mux.Handle("/livez", inspect.HealthHandler(sys.Health))
	mux.Handle("/readyz", inspect.HealthHandler(sys.Health))
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	fmt.Println(rec.Code, sys.Health().Ready)
	// Output: 200 true
}
