package casty

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/casty-go/casty/mux"
	"github.com/casty-go/casty/ring"
)

// Logging. Every line casty writes through the logger of WithLogger names
// what it is about with these keys (TELEMETRY.md): no line is written per
// call at the default level, and the network errors that repeat while a
// peer is unreachable are rate limited (netWarnEvery).
const (
	logNode = "node" // this member's id, or "local" (nodeLogger)
	logPeer = "peer" // the other member's id or address
	logErr  = "err"  // the error
	// "kind" (an actor kind's wire name), "key" (an actor's key) and
	// "method" (a handler's name) are written by the actor layer.
)

// withNodeID gives a member's system its node id before the system is
// built, so that its logger, the actor host's included, names it.
func withNodeID(id mux.NodeID) Option {
	return func(o *systemOptions) {
		if o.nodeID == (mux.NodeID{}) { // castytest's seeded ID, if any, stands (seam.go)
			o.nodeID = id
		}
	}
}

// nodeLogger returns o's logger with the "node" key every line of the
// system then carries: the member's id, or "local" for a Local system
// (which has no id).
func nodeLogger(o *systemOptions) *slog.Logger {
	if o.nodeID == (mux.NodeID{}) {
		return o.logger.With(logNode, "local")
	}
	return o.logger.With(logNode, ring.NodeID(o.nodeID).String())
}

// layerLogger returns the logger a member hands its transport (mux) and
// its membership agent (gossip): the member's own, which names the node
// already, with the node keys those layers add of their own ("mux_node",
// "node") dropped, so that each line carries one node key.
func layerLogger(l *slog.Logger) *slog.Logger {
	return slog.New(dropWith{h: l.Handler(), keys: []string{logNode, "mux_node"}})
}

// dropWith is a handler that drops the attributes named keys when a
// logger adds them with With; records pass through unchanged.
type dropWith struct {
	h    slog.Handler
	keys []string
}

func (d dropWith) Enabled(ctx context.Context, l slog.Level) bool { return d.h.Enabled(ctx, l) }

func (d dropWith) Handle(ctx context.Context, r slog.Record) error { return d.h.Handle(ctx, r) }

func (d dropWith) WithAttrs(as []slog.Attr) slog.Handler {
	kept := make([]slog.Attr, 0, len(as))
	for _, a := range as {
		if !slices.Contains(d.keys, a.Key) {
			kept = append(kept, a)
		}
	}
	return dropWith{h: d.h.WithAttrs(kept), keys: d.keys}
}

// WithGroup: keys within a group are not the line's node key; the group's
// handler drops nothing.
func (d dropWith) WithGroup(name string) slog.Handler { return d.h.WithGroup(name) }

// netWarnEvery is how often one repeated network warning (same message,
// same peer) is written at most; the next line written says how many
// were held back ("suppressed").
const netWarnEvery = 10 * time.Second

// limiter lets through at most one line per key per interval and counts
// the lines it held back. It keeps at most maxKeys keys: past that, keys
// idle for an interval are forgotten.
type limiter struct {
	every time.Duration
	now   func() time.Time
	mu    sync.Mutex
	keys  map[string]*limitedKey
}

type limitedKey struct {
	at         time.Time // when the last line was let through
	suppressed int       // lines held back since
}

const maxLimiterKeys = 1024

func newLimiter(every time.Duration, now func() time.Time) *limiter {
	if now == nil {
		now = time.Now
	}
	return &limiter{every: every, now: now, keys: map[string]*limitedKey{}}
}

// allow reports whether a line for key may be written now and, when it
// may, how many lines for key were held back since the last one.
func (l *limiter) allow(key string) (ok bool, suppressed int) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.keys[key]
	if k == nil {
		if len(l.keys) >= maxLimiterKeys {
			for name, old := range l.keys {
				if now.Sub(old.at) >= l.every {
					delete(l.keys, name)
				}
			}
		}
		l.keys[key] = &limitedKey{at: now}
		return true, 0
	}
	if now.Sub(k.at) < l.every {
		k.suppressed++
		return false, 0
	}
	n := k.suppressed
	k.at, k.suppressed = now, 0
	return true, n
}

// limitedHandler rate-limits the warnings and errors it passes on: at
// most one per message and peer (its "peer", "remote" or "addr"
// attribute) per interval, the next one carrying "suppressed". Lines
// below Warn pass unchanged. Casty wraps mux's logger in it: a peer that
// stays unreachable must not flood the log.
type limitedHandler struct {
	inner slog.Handler
	lim   *limiter
}

func (h *limitedHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *limitedHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return h.inner.Handle(ctx, r)
	}
	key := r.Message
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case logPeer, "remote", "addr":
			key += "\x00" + a.Value.String()
			return false
		}
		return true
	})
	ok, n := h.lim.allow(key)
	if !ok {
		return nil
	}
	if n > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("suppressed", n))
	}
	return h.inner.Handle(ctx, r)
}

func (h *limitedHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &limitedHandler{inner: h.inner.WithAttrs(as), lim: h.lim}
}

func (h *limitedHandler) WithGroup(name string) slog.Handler {
	return &limitedHandler{inner: h.inner.WithGroup(name), lim: h.lim}
}

// netHooks gives mux the member's rate-limited logger (cl.logger: every
// line names this node, and mux's own node key is dropped) and the session callbacks the metrics count.
func (cl *cluster) netHooks(mcfg *mux.Config) {
	lim := newLimiter(netWarnEvery, nil)
	cl.netLim = lim
	mcfg.Logger = slog.New(&limitedHandler{inner: layerLogger(cl.logger).Handler(), lim: lim})
	if t := cl.sys.tel; t != nil && t.meter != nil {
		mcfg.OnSession = t.sessionUp
		mcfg.OnPeerLost = func(mux.NodeID, error) { t.sessionLost() }
		mcfg.OnKeepaliveFailure = func(mux.NodeID, error) { t.keepaliveFailed() }
	}
}

// warnNet writes a network warning about peer, rate limited per message
// and peer.
func (cl *cluster) warnNet(msg, peer string, err error) {
	if cl.netLim == nil {
		return
	}
	ok, n := cl.netLim.allow(msg + "\x00" + peer)
	if !ok {
		return
	}
	args := []any{logPeer, peer, logErr, err}
	if n > 0 {
		args = append(args, "suppressed", n)
	}
	cl.logger.Warn(msg, args...)
}
