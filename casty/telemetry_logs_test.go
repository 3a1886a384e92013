package casty_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/casty-go/casty/casty"
)

// keyedLines records every line written with its keys, those added by
// Logger.With included.
type keyedLines struct {
	mu    *sync.Mutex
	lines *[]map[string]string
	with  []slog.Attr
}

func newKeyedLines() *keyedLines {
	return &keyedLines{mu: &sync.Mutex{}, lines: new([]map[string]string)}
}

func (h *keyedLines) Enabled(context.Context, slog.Level) bool { return true }

func (h *keyedLines) Handle(_ context.Context, r slog.Record) error {
	line := map[string]string{"msg": r.Message}
	for _, a := range h.with {
		line[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		line[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	*h.lines = append(*h.lines, line)
	h.mu.Unlock()
	return nil
}

func (h *keyedLines) WithAttrs(as []slog.Attr) slog.Handler {
	return &keyedLines{mu: h.mu, lines: h.lines, with: append(h.with[:len(h.with):len(h.with)], as...)}
}

func (h *keyedLines) WithGroup(string) slog.Handler { return h }

// find returns the lines whose message starts with prefix.
func (h *keyedLines) find(prefix string) []map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]string
	for _, l := range *h.lines {
		if strings.HasPrefix(l["msg"], prefix) {
			out = append(out, l)
		}
	}
	return out
}

// Every line a system writes carries "node": the member's id (its actor
// layer's lines too, such as a handler's panic), or "local" for a Local
// system.
func TestLogLinesCarryTheNode(t *testing.T) {
	panicked := func(t *testing.T, sys *casty.System, key string) {
		t.Helper()
		if err := casty.Do0(context.Background(), Flakies.Ref(sys, key), (*Flaky).Panic); err == nil {
			t.Fatal("Panic succeeded")
		}
	}
	t.Run("local", func(t *testing.T) {
		h := newKeyedLines()
		sys := newSys(t, casty.WithLogger(slog.New(h)))
		panicked(t, sys, "p")
		lines := h.find("casty: handler panicked")
		if len(lines) == 0 {
			t.Fatal("no line about the panic")
		}
		for _, l := range lines {
			if l["node"] != "local" || l["kind"] != Flakies.Name() || l["key"] != "p" {
				t.Errorf("node %q kind %q key %q, want local %s p: %v", l["node"], l["kind"], l["key"], Flakies.Name(), l)
			}
		}
	})
	t.Run("member", func(t *testing.T) {
		h := newKeyedLines()
		a := startNode(t, nil, casty.WithLogger(slog.New(h)))
		key := keyOn(t, a, a, Flakies.Name())
		panicked(t, a, key)
		if len(h.find("casty: handler panicked")) == 0 {
			t.Fatal("no line about the panic")
		}
		for _, l := range h.find("") {
			if l["node"] != a.ID() {
				t.Errorf("a line with node %q, want %s: %v", l["node"], a.ID(), l)
			}
		}
	})
}
