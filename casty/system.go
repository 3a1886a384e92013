package casty

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/casty/inspect"
	"github.com/casty-go/casty/casty/internal/seam"
	"github.com/casty-go/casty/mux"
)

// System is a running Casty system: local (Local), a cluster member
// (Start) or a lite member (Connect). All share this API. Close it when
// done.
type System struct {
	host   *actor.Host
	cfg    Config
	logger *slog.Logger
	cl     *cluster // nil in local mode

	closing, closed atomic.Bool  // Close began, Close returned (health.go)
	spies           atomic.Int64 // spy subscriptions served (Config.Actors.MaxSpies)

	tel *telemetry // nil without a meter or tracer provider (telemetry.go)
}

// Member is a full cluster member: its node id (ID) and the address
// others dial (Addr).
type Member = inspect.Member

// Option configures a System.
type Option func(*systemOptions)

type systemOptions struct {
	cfg         Config
	supervisor  Supervisor
	logger      *slog.Logger
	injectors   map[*actor.Kind][]func(any)
	interceptor func(Event)
	seeds       []string
	advertise   string
	cluster     string
	clusterSet  bool
	tls         *TLS
	secrets     secrets           // WithClusterSecret, WithOperatorSecret, WithClientSecret
	editMux     func(*mux.Config) // tests: a hostile node's transport
	durability  actor.Durability  // keeps the actors' state (replication)
	replicator  *replicator       // the member's replication runtime, when it is the durability
	meters      metric.MeterProvider
	tracers     trace.TracerProvider
	sampling    int                           // WithDurationSampling
	nodeID      mux.NodeID                    // a member's id, drawn before its host starts (withNodeID)
	network     Network                       // WithNetwork; nil: TCP
	clock       func() time.Time              // WithClock; nil: time.Now
	seam        *seam.Member                  // castytest's randomness and mutants (seam.go)
	idle        map[*actor.Kind]time.Duration // Tune
	errs        []error                       // options refused (Tune)
}

// withDurability sets the host's Durability: the seam replication plugs
// into (actor.Durability).
func withDurability(d actor.Durability) Option {
	return func(o *systemOptions) { o.durability = d }
}

// WithConfig sets every timeout, size and interval (zero fields keep their
// defaults; see DefaultConfig).
func WithConfig(cfg Config) Option { return func(o *systemOptions) { o.cfg = cfg } }

// WithSupervisor sets the supervisor for kinds without their own. Default:
// always Keep.
func WithSupervisor(f Supervisor) Option { return func(o *systemOptions) { o.supervisor = f } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *systemOptions) { o.logger = l } }

// Inject runs f on every activation of kind k on this system, after state is
// restored and before the Activate hook, so transient (unexported) fields
// can hold what the process owns: database handles, clients, caches.
func Inject[T any](k Declared[T], f func(*T)) Option {
	return func(o *systemOptions) {
		if o.injectors == nil {
			o.injectors = map[*actor.Kind][]func(any){}
		}
		d := k.desc()
		o.injectors[d] = append(o.injectors[d], func(state any) { f(state.(*T)) })
	}
}

// Tune overrides, on this system only, options of kind k that an operator
// sets per deployment — from a flag or a config file — rather than in the
// code that declares k:
//
//	sys, err := casty.Start(ctx, *listen, casty.Seeds(seeds...),
//		casty.Tune(Carts, casty.IdleTimeout(*cartIdle)))
//
// Only the options that each member may set on its own are accepted:
// IdleTimeout, except Forever on a replicated kind and any value on a
// durable one (Replicas > 1 and IdleTimeout(Forever), docs/guide.md), whose
// durability every member must agree on. Name, Replicas, Write and Read
// must be the same on every node and stay declarations; Supervise and
// Concurrency are not tunable (yet). Start and Connect fail with an error
// naming a refused option, Local panics with it, as for an invalid Config.
// Other Systems in the process keep k's declared options.
func Tune[T any](k Declared[T], opts ...KindOption) Option {
	return func(o *systemOptions) {
		d := k.desc()
		var ko kindOptions
		for _, opt := range opts {
			opt(&ko)
		}
		for _, what := range slices.Sorted(maps.Keys(ko.set)) {
			if what != "IdleTimeout" {
				o.errs = append(o.errs, fmt.Errorf("casty: Tune %s: %s is not tunable at start: only IdleTimeout is", d.Name, what))
			}
		}
		if !ko.set["IdleTimeout"] {
			return
		}
		replicated := replicasOf(d) > 1
		switch {
		case ko.idle <= 0:
			o.errs = append(o.errs, fmt.Errorf("casty: Tune %s: IdleTimeout must be positive, got %v", d.Name, ko.idle))
		case replicated && d.IdleTimeout == Forever:
			o.errs = append(o.errs, fmt.Errorf("casty: Tune %s: a durable kind (Replicas > 1 and IdleTimeout(Forever)) keeps its idle timeout: every member must agree it is durable", d.Name))
		case replicated && ko.idle == Forever:
			o.errs = append(o.errs, fmt.Errorf("casty: Tune %s: IdleTimeout(Forever) would make a replicated kind durable on this member only: declare it", d.Name))
		default:
			if o.idle == nil {
				o.idle = map[*actor.Kind]time.Duration{}
			}
			o.idle[d] = ko.idle
		}
	}
}

// Local returns an in-process system: mailboxes, lifecycle, supervision and
// everything else, with no network at all. Actors declared with Replicas > 1
// run as a single copy. Local panics on an invalid Config (a programming
// error, reported with the offending field) and, as Start refuses to
// start, on a type the declarations use that was never registered
// (ErrNotRegistered).
func Local(opts ...Option) *System {
	sys, err := newSystem(opts)
	if err != nil {
		panic(err.Error())
	}
	return sys
}

func newSystem(opts []Option) (*System, error) {
	sys, o, err := newSystemWith(opts)
	if err != nil {
		return nil, err
	}
	if len(o.seeds) > 0 || o.tls != nil || o.advertise != "" || o.network != nil || o.secrets.any() {
		sys.discard()
		return nil, fmt.Errorf("casty: Seeds, Advertise, WithNetwork, WithTLS and the secrets are cluster options: use Start or Connect")
	}
	if err := sys.tel.observe(sys); err != nil {
		sys.discard()
		return nil, err
	}
	return sys, nil
}

func newSystemWith(opts []Option) (*System, *systemOptions, error) {
	o := &systemOptions{}
	for _, opt := range opts {
		opt(o)
	}
	if err := errors.Join(o.errs...); err != nil {
		return nil, nil, err
	}
	if err := o.cfg.Validate(); err != nil {
		return nil, nil, err
	}
	if err := checkDeclarations(); err != nil {
		return nil, nil, err
	}
	cfg := o.cfg.withDefaults()
	if o.logger == nil {
		o.logger = slog.Default()
	}
	o.logger = nodeLogger(o)
	ec := cfg.engine()
	ec.Logger = o.logger
	ec.IdleTimeouts = o.idle
	if o.supervisor != nil {
		ec.Supervisor = o.supervisor
	}
	ec.Interceptor = o.interceptor
	ec.Durability = o.durability
	tel, err := newTelemetry(o.meters, o.tracers, o.sampling)
	if err != nil {
		return nil, nil, err
	}
	if tel != nil && tel.meter != nil {
		ec.Lifecycle = tel.lifecycle
	}
	host, err := actor.NewHost(ec, o.injectors)
	if err != nil {
		return nil, nil, err
	}
	sys := &System{host: host, cfg: cfg, logger: o.logger, tel: tel}
	host.SetOwner(sys)
	return sys, o, nil
}

// discard closes the host of a system that failed to start.
func (s *System) discard() {
	s.tel.close()
	s.host.Close(context.Background())
}

// Config returns the system's configuration, defaults filled in.
func (s *System) Config() Config { return s.cfg }

// Addr returns the address other nodes dial; empty for a local system.
func (s *System) Addr() string {
	if s.cl == nil {
		return ""
	}
	return s.cl.addr
}

// ID returns the node id (empty for a local system).
func (s *System) ID() string {
	if s.cl == nil {
		return ""
	}
	return s.cl.self.String()
}

// Members lists the live full members, self included (a lite member lists
// the members it routes to, not itself); a local system is not a cluster
// member and has none.
func (s *System) Members() []Member {
	if s.cl == nil {
		return nil
	}
	return s.cl.members()
}

// Close shuts the system down gracefully: it stops accepting calls, lets
// in-flight and queued messages finish and Deactivate hooks run (within
// Config.Actors.DrainTimeout or ctx), and from then on every call fails with
// ErrActorUnavailable. Close is idempotent. It returns an error naming the
// handlers still running when the drain timed out.
func (s *System) Close(ctx context.Context) error {
	if s == nil {
		return nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	s.closing.Store(true)
	defer s.closed.Store(true)
	s.tel.close() // no collection reads a system being taken apart
	var err error
	if s.cl != nil {
		s.cl.closeOnce.Do(func() { err = s.cl.shutdown(ctx, true) })
	} else {
		err = s.host.Close(ctx)
	}
	return err
}

// Active returns the number of live activations on this node.
func (s *System) Active() int { return s.host.Len() }

func (s *System) String() string {
	if s.cl != nil {
		mode := "member"
		if s.cl.lite {
			mode = "lite member"
		}
		return fmt.Sprintf("casty.System(%s %s at %s, %d active)", mode, s.cl.self, s.cl.addr, s.host.Len())
	}
	return fmt.Sprintf("casty.System(local, %d active)", s.host.Len())
}
