package actor

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Config holds the engine's knobs. The zero value of a field means its
// default; DefaultConfig spells every default out.
type Config struct {
	// CallTimeout bounds a call whose ctx has no deadline. Default 10 s.
	// A timeout of a second or more is enforced by a sweeper rather than a
	// timer per call, and may fire up to 10 ms late.
	CallTimeout time.Duration
	// IdleTimeout deactivates an activation that has had no message for
	// this long, unless its kind sets its own. Default 300 s; Forever never.
	IdleTimeout time.Duration
	// IdleTimeouts overrides, on this host only, the idle timeout of the
	// kinds it names (their own or IdleTimeout). Read-only once the host
	// runs.
	IdleTimeouts map[*Kind]time.Duration
	// DrainTimeout bounds Close: how long in-flight and queued messages and
	// Deactivate hooks may run before Close gives up on them. Default 10 s.
	DrainTimeout time.Duration
	// Supervisor decides failures for kinds without their own. Default:
	// always Keep.
	Supervisor Supervisor
	// Logger receives the engine's log lines. Default slog.Default().
	Logger *slog.Logger
	// Node names this host in events; empty locally.
	Node string
	// Interceptor, when set, receives every lifecycle event inline, on the
	// goroutine of the handler that caused it. It must return fast and never
	// block; a panic in it is logged and never fails the handler.
	Interceptor func(Event)
	// BeforeWait, when set, is called with the caller's context when a
	// call is about to wait for its activation (queued behind other
	// messages, or for the mailbox's goroutine), before it waits. Casty
	// passes mux.HandOff: a remote call's handler running on a
	// connection's reader then hands the reading on rather than hold the
	// connection while it waits.
	BeforeWait func(ctx context.Context)
	// Admit, when set, runs before a message creates an activation that
	// does not exist on the host yet, with the message's ctx (the
	// caller's), under the lock of the activation table: its error fails
	// the message, unchanged, and nothing is created. It is not asked for
	// an activation that already exists. It must be fast and must not call
	// the host. Casty checks there that a call from another node names a
	// key this node owns.
	Admit func(ctx context.Context, k *Kind, key string) error
	// ExternalWaits, when set, reports how many callers of this process
	// are waiting for answers no host produces (calls to other nodes).
	// Such a caller holds no P, but its answer will need one: it counts
	// toward the load that decides whether waiters spin (Host.spin).
	ExternalWaits func() int32
	// Durability, when set, keeps activations' state beyond their life
	// (casty's replication): see Durability.
	Durability Durability
	// MaxActivations bounds the activations the host holds at once. A
	// call that needs a new one while the host is full first deactivates
	// an idle one (capacity.go): the least recently used of a sample,
	// gracefully, exactly as its idle timeout would have (Deactivate hook,
	// Durability's Release), and waits for it to be gone; it waits too
	// for one whose handler returned and whose commit still runs (it soon
	// is idle); when none is idle and none is committing it fails with
	// ErrOverloaded. Default 1,000,000.
	MaxActivations int
	// Lifecycle, when set, is told when an activation starts (its Activate
	// hook succeeded: started true, reason ReasonNone) and when a started
	// activation ends (started false, with the reason). It runs on the
	// activation's goroutine, whether or not anyone observes events: it
	// must return fast and never block. Casty counts activations with it
	// for its metrics.
	Lifecycle func(k *Kind, started bool, reason Reason)
}

// DefaultConfig returns the defaults, every field set.
func DefaultConfig() Config {
	return Config{
		CallTimeout:    10 * time.Second,
		IdleTimeout:    300 * time.Second,
		DrainTimeout:   10 * time.Second,
		MaxActivations: 1_000_000,
		Supervisor:     func(string, string, error, Failure) Directive { return Keep },
		Logger:         slog.Default(),
	}
}

// withDefaults fills zero fields from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.CallTimeout == 0 {
		c.CallTimeout = d.CallTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = d.IdleTimeout
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = d.DrainTimeout
	}
	if c.MaxActivations == 0 {
		c.MaxActivations = d.MaxActivations
	}
	if c.Supervisor == nil {
		c.Supervisor = d.Supervisor
	}
	if c.Logger == nil {
		c.Logger = d.Logger
	}
	return c
}

// Validate reports a negative duration or limit.
func (c Config) Validate() error {
	if c.MaxActivations < 0 {
		return fmt.Errorf("casty: config: MaxActivations must not be negative, got %d", c.MaxActivations)
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"CallTimeout", c.CallTimeout}, {"IdleTimeout", c.IdleTimeout}, {"DrainTimeout", c.DrainTimeout}} {
		if f.d < 0 {
			return fmt.Errorf("casty: config: %s must not be negative, got %v", f.name, f.d)
		}
	}
	return nil
}
