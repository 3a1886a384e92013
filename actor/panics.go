package actor

import (
	"errors"
	"sync"
	"time"
)

// PanicLogEvery is how often a panic of one handler (kind and method) is
// logged at most, with its stack; the next line says how many panics were
// held back ("suppressed"). A handler that panics on every call must not
// flood the log, and one that panics once must not go unseen.
const PanicLogEvery = 10 * time.Second

// maxPanicKeys bounds the handlers panicLog remembers; past it, those not
// logged for PanicLogEvery are forgotten.
const maxPanicKeys = 1024

// panicLog rate-limits the log lines of handler panics, per handler.
type panicLog struct {
	mu   sync.Mutex
	last map[panicKey]*panicSeen
}

type panicKey struct{ kind, method string }

type panicSeen struct {
	at         time.Time // when the last line was written
	suppressed int       // panics held back since
}

// allow reports whether a panic of (kind, method) may be logged now and,
// when it may, how many were held back since the last line.
func (l *panicLog) allow(kind, method string, now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := panicKey{kind, method}
	s := l.last[k]
	if s == nil {
		if l.last == nil {
			l.last = map[panicKey]*panicSeen{}
		}
		if len(l.last) >= maxPanicKeys {
			for old, v := range l.last {
				if now.Sub(v.at) >= PanicLogEvery {
					delete(l.last, old)
				}
			}
		}
		l.last[k] = &panicSeen{at: now}
		return true, 0
	}
	if now.Sub(s.at) < PanicLogEvery {
		s.suppressed++
		return false, 0
	}
	n := s.suppressed
	s.at, s.suppressed = now, 0
	return true, n
}

// logPanic writes a handler's panic with its stack to the host's logger,
// at most once per PanicLogEvery per handler. err is the handler's
// failure; nothing is written unless it is a *PanicError.
func (h *Host) logPanic(a *Activation, method string, err error) {
	var pe *PanicError
	if !errors.As(err, &pe) {
		return
	}
	ok, n := h.panics.allow(a.kind.Name, method, time.Now())
	if !ok {
		return
	}
	args := []any{"kind", a.kind.Name, "key", a.key, "method", method, "panic", pe.Value, "stack", string(pe.Stack)}
	if n > 0 {
		args = append(args, "suppressed", n)
	}
	h.cfg.Logger.Error("casty: handler panicked; its call fails with a *FailedError wrapping *PanicError", args...)
}
