package mux

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// logRecorder is a slog.Handler that keeps each record as "LEVEL msg
// key=value ...".
type logRecorder struct {
	mu   sync.Mutex
	recs []string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *logRecorder) WithGroup(string) slog.Handler            { return r }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Level.String() + " " + rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	r.mu.Lock()
	r.recs = append(r.recs, b.String())
	r.mu.Unlock()
	return nil
}

// closed returns the "session closed" records.
func (r *logRecorder) closed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.recs {
		if strings.Contains(s, "mux: session closed") {
			out = append(out, s)
		}
	}
	return out
}

// A peer that closes its session or its node cleanly is routine — a lite
// client exiting, a member leaving — and its peer logs it at DEBUG; a
// connection that breaks stays at INFO.
func TestSessionClosedByThePeerLogsAtDebug(t *testing.T) {
	for _, ct := range []connType{viaTCP, viaTLS} {
		for _, how := range []string{"session", "node"} {
			t.Run(string(ct)+"/"+how, func(t *testing.T) {
				rec := &logRecorder{}
				cb := testConfig(2)
				cb.Logger = slog.New(rec)
				a, _, sa, sb := connect(t, ct, testConfig(1), cb, nil)
				if how == "session" {
					sa.Close()
				} else {
					a.Close()
				}
				<-sb.Done()
				waitFor(t, 5*time.Second, "the close logged", func() bool { return len(rec.closed()) > 0 })
				for _, r := range rec.closed() {
					if !strings.HasPrefix(r, "DEBUG ") {
						t.Errorf("a clean close by the peer logged %q", r)
					}
				}
			})
		}
	}
	t.Run("broken", func(t *testing.T) {
		rec := &logRecorder{}
		cb := testConfig(2)
		cb.Logger = slog.New(rec)
		_, _, _, sb := connect(t, viaTCP, testConfig(1), cb, nil)
		sb.conn.Close() // under the session: not a close the peer asked for
		<-sb.Done()
		waitFor(t, 5*time.Second, "the loss logged", func() bool { return len(rec.closed()) > 0 })
		if r := rec.closed()[0]; !strings.HasPrefix(r, "INFO ") {
			t.Errorf("a broken connection logged %q", r)
		}
	})
}
