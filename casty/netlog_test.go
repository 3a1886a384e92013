package casty

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A repeated network warning is written once per interval for each
// message and peer; the next line written says how many were held back.
func TestNetWarningsAreRateLimitedPerMessageAndPeer(t *testing.T) {
	now := time.Unix(1000, 0)
	lim := newLimiter(10*time.Second, func() time.Time { return now })
	var out bytes.Buffer
	log := slog.New(&limitedHandler{inner: slog.NewTextHandler(&out, nil), lim: lim})
	for range 5 {
		log.Warn("mux: keepalive failed", "peer", "a", "err", errors.New("timeout"))
	}
	log.Warn("mux: keepalive failed", "peer", "b", "err", errors.New("timeout"))
	log.Info("mux: session closed", "peer", "a") // below Warn: never limited
	log.Info("mux: session closed", "peer", "a")
	now = now.Add(11 * time.Second)
	log.Warn("mux: keepalive failed", "peer", "a", "err", errors.New("timeout"))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines, want 5:\n%s", len(lines), out.String())
	}
	if !strings.Contains(lines[4], "peer=a") || !strings.Contains(lines[4], "suppressed=4") {
		t.Fatalf("the line after the interval: %s", lines[4])
	}
	if strings.Contains(lines[0], "suppressed") || !strings.Contains(lines[1], "peer=b") {
		t.Fatalf("first lines: %q", lines[:2])
	}
}

// The limiter forgets idle keys once it holds maxLimiterKeys: a stream of
// distinct peers does not grow it without bound.
func TestNetWarningLimiterStaysBounded(t *testing.T) {
	now := time.Unix(0, 0)
	lim := newLimiter(time.Second, func() time.Time { return now })
	for i := range 10 * maxLimiterKeys {
		now = now.Add(time.Millisecond)
		lim.allow(strings.Repeat("x", i%7) + string(rune(i)))
	}
	if n := len(lim.keys); n > maxLimiterKeys+1 {
		t.Fatalf("%d keys kept, bound %d", n, maxLimiterKeys)
	}
}
