package casty_test

import (
	"context"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/internal/wait"
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

// allLines records every line with its level and its keys in order, those
// added by Logger.With included, duplicates kept.
type allLines struct {
	mu    *sync.Mutex
	lines *[]loggedLine
	with  []string
}

type loggedLine struct {
	level slog.Level
	msg   string
	keys  []string
}

func newAllLines() *allLines { return &allLines{mu: &sync.Mutex{}, lines: new([]loggedLine)} }

func (h *allLines) Enabled(context.Context, slog.Level) bool { return true }

func (h *allLines) Handle(_ context.Context, r slog.Record) error {
	l := loggedLine{level: r.Level, msg: r.Message, keys: slices.Clone(h.with)}
	r.Attrs(func(a slog.Attr) bool {
		l.keys = append(l.keys, a.Key)
		return true
	})
	h.mu.Lock()
	*h.lines = append(*h.lines, l)
	h.mu.Unlock()
	return nil
}

func (h *allLines) WithAttrs(as []slog.Attr) slog.Handler {
	with := slices.Clone(h.with)
	for _, a := range as {
		with = append(with, a.Key)
	}
	return &allLines{mu: h.mu, lines: h.lines, with: with}
}

func (h *allLines) WithGroup(string) slog.Handler { return h }

func (h *allLines) all() []loggedLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(*h.lines)
}

func (h *allLines) has(prefix string) bool {
	for _, l := range h.all() {
		if strings.HasPrefix(l.msg, prefix) {
			return true
		}
	}
	return false
}

// Each line a member writes names the node once: gossip's lines (a
// joiner's "joining") and mux's (a failed inbound handshake) included,
// which add node keys of their own when used on their own.
func TestLogLinesNameTheNodeOnce(t *testing.T) {
	ha, hb := newAllLines(), newAllLines()
	a := startNode(t, nil, casty.WithLogger(slog.New(ha)))
	startNode(t, []string{a.Addr()}, casty.WithLogger(slog.New(hb)))
	// Not a casty peer: a's transport logs the failed handshake.
	c, err := net.Dial("tcp", a.Addr())
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("not a casty handshake\n"))
	c.Close()
	wait.For(t, 20*time.Second, "a's transport to log the failed handshake", func() bool { return ha.has("mux: inbound handshake failed") })
	if !hb.has("joining") {
		t.Fatal("the joiner's gossip agent logged no \"joining\" line")
	}
	for _, h := range []*allLines{ha, hb} {
		for _, l := range h.all() {
			node, other := 0, 0
			for _, k := range l.keys {
				switch k {
				case "node":
					node++
				case "mux_node":
					other++
				}
			}
			if node != 1 || other != 0 {
				t.Errorf("line %q has keys %v: want one node key", l.msg, l.keys)
			}
		}
	}
}

// A Start or Connect that no seed admits logs no ERROR: the system it
// built and takes down again had nothing to drain. (Several tries: the
// spurious line depended on which of two ready cases a select picked.)
func TestFailedJoinLogsNoError(t *testing.T) {
	parallel(t)
	seed := closedPort(t)
	for i := range 8 {
		h := newAllLines()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		var sys *casty.System
		var err error
		if i%2 == 0 {
			sys, err = casty.Start(ctx, "127.0.0.1:0", casty.Seeds(seed), casty.WithLogger(slog.New(h)))
		} else {
			sys, err = casty.Connect(ctx, []string{seed}, casty.WithLogger(slog.New(h)))
		}
		cancel()
		if err == nil {
			closeSys(t, sys)
			t.Fatal("joined through a closed port")
		}
		for _, l := range h.all() {
			if l.level >= slog.LevelError {
				t.Fatalf("a failed join logged at %v: %q %v", l.level, l.msg, l.keys)
			}
		}
	}
}

// A member that leaves gracefully is not reported as removed for being
// dead by the members that stay, even when the agreed leave reaches them
// before its LEFT record.
func TestAGracefulLeaveIsNotLoggedAsARemoval(t *testing.T) {
	parallel(t)
	hs := []*allLines{newAllLines(), newAllLines()}
	first := startNode(t, nil, casty.WithConfig(replicationConfig()), casty.WithLogger(slog.New(hs[0])))
	second := startNode(t, []string{first.Addr()}, casty.WithConfig(replicationConfig()), casty.WithLogger(slog.New(hs[1])))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	leaver, err := casty.Start(ctx, "127.0.0.1:0", casty.WithConfig(replicationConfig()), casty.Seeds(first.Addr()), quiet())
	if err != nil {
		t.Fatal(err)
	}
	stay := []*casty.System{first, second}
	wait.For(t, 20*time.Second, "three members placed", func() bool {
		return casty.Settled(first, 3) && casty.Settled(second, 3) && casty.Settled(leaver, 3)
	})
	closeSys(t, leaver)
	wait.For(t, 20*time.Second, "the leave agreed by those that stay", func() bool {
		for _, s := range stay {
			if s.Replication().Placed != 2 {
				return false
			}
		}
		return true
	})
	for i, h := range hs {
		if h.has("casty: a majority of the placement saw a member dead") {
			t.Errorf("member %d logged the graceful leave as a removal of a dead member", i)
		}
	}
}
