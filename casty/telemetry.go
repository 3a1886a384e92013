package casty

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/gossip"
	"github.com/casty-go/casty/mux"
)

// Telemetry: OpenTelemetry metrics and traces, both off unless a provider
// is given (WithMeterProvider, WithTracerProvider). Off, a System holds no
// telemetry at all and every hook below is one nil check. TELEMETRY.md
// lists every instrument, attribute and span.

// instrumentation is the scope name of casty's meter and tracer.
const instrumentation = "github.com/casty-go/casty/casty"

// WithMeterProvider makes the system record its metrics (calls, mailboxes,
// activations, replication, transport, membership: TELEMETRY.md) through
// mp's meter. Without it (or with OpenTelemetry's no-op provider) nothing
// is recorded and the call path does no extra work.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *systemOptions) { o.meters = mp }
}

// WithTracerProvider makes the system trace calls and streams through tp's
// tracer: a client span on the caller, a server span around the handler on
// the member that runs it, joined by the W3C trace context each request
// carries (SPEC.md), so one trace crosses members. Without it (or with
// OpenTelemetry's no-op provider) no span is started and nothing is added
// to requests.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *systemOptions) { o.tracers = tp }
}

// Attribute keys; their values are bounded sets (kind and method names
// are declared, outcomes and reasons are enumerated): never a key.
const (
	attrKind      = attribute.Key("casty.actor.kind")
	attrMethod    = attribute.Key("casty.actor.method")
	attrOutcome   = attribute.Key("casty.call.outcome")
	attrReason    = attribute.Key("casty.deactivation.reason")
	attrNode      = attribute.Key("casty.node")
	attrState     = attribute.Key("casty.member.state")
	attrDirection = attribute.Key("casty.direction")
	attrKey       = attribute.Key("casty.actor.key") // spans only
)

// The call outcomes (attrOutcome).
const (
	outcomeOK          = "ok"          // the handler returned no error
	outcomeFailed      = "failed"      // the handler returned an error (*ActorFailedError)
	outcomeAnswered    = "answered"    // the handler answered an error marked with Answer
	outcomeTimeout     = "timeout"     // ErrTimeout
	outcomeCanceled    = "canceled"    // the caller's ctx was cancelled
	outcomeQuorum      = "quorum"      // ErrQuorumUnavailable, ErrReplicaFull
	outcomeUnavailable = "unavailable" // every other error
)

func outcomeOf(err error) string {
	var failed *ActorFailedError
	switch {
	case err == nil:
		return outcomeOK
	case isAnswered(err):
		return outcomeAnswered
	case errors.As(err, &failed):
		return outcomeFailed
	case errors.Is(err, ErrTimeout):
		return outcomeTimeout
	case errors.Is(err, context.Canceled):
		return outcomeCanceled
	case errors.Is(err, ErrQuorumUnavailable), errors.Is(err, ErrReplicaFull):
		return outcomeQuorum
	}
	return outcomeUnavailable
}

var memberStates = [...]gossip.Status{gossip.Alive, gossip.Suspect, gossip.Left, gossip.Dead}

var outcomes = [...]string{outcomeOK, outcomeFailed, outcomeAnswered, outcomeTimeout, outcomeCanceled, outcomeQuorum, outcomeUnavailable}

// telemetry is a system's instruments and tracer; nil when it has
// neither provider.
type telemetry struct {
	tracer trace.Tracer // nil without a TracerProvider
	meter  metric.Meter // nil without a MeterProvider

	callDur     metric.Float64Histogram
	callBytes   metric.Int64Counter
	activated   metric.Int64Counter
	deactivated metric.Int64Counter
	quorumFails metric.Int64Counter
	acks        metric.Int64Counter
	sessions    metric.Int64Counter
	reconnects  metric.Int64Counter
	peersLost   metric.Int64Counter
	keepalive   metric.Int64Counter
	suspicions  metric.Int64Counter
	deaths      metric.Int64Counter
	joins       metric.Int64Counter

	methods sync.Map // *actor.Method → *methodTel
	kinds   sync.Map // *actor.Kind → metric.MeasurementOption
	reg     metric.Registration

	mu      sync.Mutex
	peers   map[mux.NodeID]bool // peers this node had a session with (reconnects)
	sent    metric.MeasurementOption
	recv    metric.MeasurementOption
	reasons sync.Map // reasonKey → metric.MeasurementOption
}

// methodTel is what one handler's calls record: its span name and the
// attribute sets of each outcome, built once.
type methodTel struct {
	span     string
	spanAttr trace.SpanStartOption
	record   [len(outcomes)][]metric.RecordOption // by outcome; a slice so that no variadic one is allocated per call
}

func newTelemetry(mp metric.MeterProvider, tp trace.TracerProvider) (*telemetry, error) {
	// OpenTelemetry's no-op providers are no providers: nothing to pay for.
	if _, ok := mp.(metricnoop.MeterProvider); ok {
		mp = nil
	}
	if _, ok := tp.(tracenoop.TracerProvider); ok {
		tp = nil
	}
	if mp == nil && tp == nil {
		return nil, nil
	}
	t := &telemetry{peers: map[mux.NodeID]bool{}}
	if tp != nil {
		t.tracer = tp.Tracer(instrumentation)
	}
	if mp == nil {
		return t, nil
	}
	m := mp.Meter(instrumentation)
	t.meter = m
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	// One instrument per call: the histogram's count is the number of
	// calls (casty_call_duration_seconds_count in Prometheus), so no
	// counter is kept beside it.
	var err error
	t.callDur, err = m.Float64Histogram("casty.call.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of calls made by this system, by kind, method and outcome."),
		metric.WithExplicitBucketBoundaries(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
	errs = append(errs, err)
	t.callBytes = counter("casty.call.envelope.size", "By", "Bytes of call envelopes sent to and received from other members.")
	t.activated = counter("casty.activation.activated", "{activation}", "Activations started, by kind.")
	t.deactivated = counter("casty.activation.deactivated", "{activation}", "Activations ended, by kind and reason.")
	t.quorumFails = counter("casty.replication.quorum.failures", "{failure}", "Commits and confirmations that did not reach their quorum.")
	t.acks = counter("casty.replication.acks", "{ack}", "Replica acknowledgements received by this member's commits.")
	t.sessions = counter("casty.transport.session.opened", "{session}", "Sessions to peers that became live.")
	t.reconnects = counter("casty.transport.reconnects", "{session}", "Sessions to a peer this node had a session with before.")
	t.peersLost = counter("casty.transport.session.lost", "{session}", "Live sessions that closed with no replacement.")
	t.keepalive = counter("casty.transport.keepalive.failures", "{failure}", "Keepalive pings that failed (the connection is closed).")
	t.suspicions = counter("casty.membership.suspicions", "{event}", "Members this node saw become suspect.")
	t.deaths = counter("casty.membership.deaths", "{event}", "Members this node saw declared dead.")
	t.joins = counter("casty.membership.joins", "{event}", "Members this node saw join (or come back).")
	t.sent = metric.WithAttributeSet(attribute.NewSet(attrDirection.String("sent")))
	t.recv = metric.WithAttributeSet(attribute.NewSet(attrDirection.String("received")))
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return t, nil
}

// observe registers the callbacks of the observable instruments, which
// read sys at each collection.
func (t *telemetry) observe(sys *System) error {
	if t == nil || t.meter == nil {
		return nil
	}
	m := t.meter
	var errs []error
	gauge := func(name, unit, desc string) metric.Int64ObservableGauge {
		g, err := m.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return g
	}
	ocounter := func(name, unit, desc string) metric.Int64ObservableCounter {
		c, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	active := gauge("casty.activation.active", "{activation}", "Live activations on this node.")
	depth := gauge("casty.mailbox.depth", "{message}", "Messages waiting in this node's mailboxes, not counting those running.")
	members := gauge("casty.membership.members", "{member}", "Members in this node's membership table, by state.")
	refused := ocounter("casty.membership.refused", "{record}", "Records of new members refused because this node's member table was full.")
	live := gauge("casty.transport.sessions", "{session}", "Live sessions to peers.")
	traffic := ocounter("casty.transport.bytes", "By", "Bytes this node's sessions read and wrote, by direction.")
	commits := ocounter("casty.replication.commits", "{commit}", "Commits made by this member's activations.")
	commitBytes := ocounter("casty.replication.commit.size", "By", "Bytes of commit messages sent to replicas.")
	repairs := ocounter("casty.replication.repairs", "{copy}", "Copies adopted by anti-entropy passes.")
	if err := errors.Join(errs...); err != nil {
		return err
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		node := metric.WithAttributes(attrNode.String(sys.ID()))
		o.ObserveInt64(active, int64(sys.host.Len()), node)
		o.ObserveInt64(depth, int64(sys.host.Queued()), node)
		cl := sys.cl
		if cl == nil {
			return nil
		}
		o.ObserveInt64(live, int64(len(cl.node.Sessions())), node)
		tr := cl.node.Traffic()
		o.ObserveInt64(traffic, int64(tr.BytesOut), metric.WithAttributes(attrNode.String(sys.ID()), attrDirection.String("sent")))
		o.ObserveInt64(traffic, int64(tr.BytesIn), metric.WithAttributes(attrNode.String(sys.ID()), attrDirection.String("received")))
		byState := map[gossip.Status]int64{}
		for _, mb := range cl.agent.Members() {
			byState[mb.Status]++
		}
		for _, st := range memberStates {
			o.ObserveInt64(members, byState[st], metric.WithAttributes(attrNode.String(sys.ID()), attrState.String(st.String())))
		}
		o.ObserveInt64(refused, int64(cl.agent.Stats().Refused), node)
		if rp := cl.rp; rp != nil {
			o.ObserveInt64(commits, rp.commits.Load(), node)
			o.ObserveInt64(commitBytes, rp.commitBytes.Load(), node)
			o.ObserveInt64(repairs, rp.repaired.Load(), node)
		}
		return nil
	}, active, depth, members, refused, live, traffic, commits, commitBytes, repairs)
	t.reg = reg
	return err
}

// close unregisters the observable instruments' callbacks.
func (t *telemetry) close() {
	if t != nil && t.reg != nil {
		_ = t.reg.Unregister()
	}
}

func (t *telemetry) method(k *actor.Kind, m *actor.Method) *methodTel {
	if v, ok := t.methods.Load(m); ok {
		return v.(*methodTel)
	}
	mt := &methodTel{span: k.Name + "." + m.Name,
		spanAttr: trace.WithAttributes(attrKind.String(k.Name), attrMethod.String(m.Name))}
	for i, o := range outcomes {
		set := metric.WithAttributeSet(attribute.NewSet(attrKind.String(k.Name), attrMethod.String(m.Name), attrOutcome.String(o)))
		mt.record[i] = []metric.RecordOption{set}
	}
	v, _ := t.methods.LoadOrStore(m, mt)
	return v.(*methodTel)
}

// callObs is one call being observed; its zero value observes nothing.
type callObs struct {
	t     *telemetry
	mt    *methodTel
	span  trace.Span
	start time.Time
}

// telemetry returns s's telemetry: nil without providers, or for a zero
// Ref's nil system.
func (s *System) telemetry() *telemetry {
	if s == nil {
		return nil
	}
	return s.tel
}

// startCall begins observing a call of fn on k's actor key: it returns
// the context the call runs with (carrying the client span) and the
// observation, to end with the call's outcome.
//
//go:noinline
func (t *telemetry) startCall(ctx context.Context, k *actor.Kind, key string, fn any) (context.Context, callObs) {
	m := k.MethodFor(reflect.ValueOf(fn).Pointer())
	if m == nil {
		return ctx, callObs{} // resolve reports it
	}
	if ctx == nil {
		ctx = context.Background()
	}
	o := callObs{t: t, mt: t.method(k, m), start: time.Now()}
	if t.tracer != nil {
		ctx, o.span = t.tracer.Start(ctx, o.mt.span, trace.WithSpanKind(trace.SpanKindClient), o.mt.spanAttr,
			trace.WithAttributes(attrKey.String(key)))
	}
	return ctx, o
}

// end records the call's outcome.
func (o callObs) end(err error) {
	if o.t != nil {
		o.finish(err)
	}
}

//go:noinline
func (o callObs) finish(err error) {
	out := outcomeOf(err)
	if o.t.meter != nil {
		i := 0
		for i < len(outcomes) && outcomes[i] != out {
			i++
		}
		o.t.callDur.Record(context.Background(), time.Since(o.start).Seconds(), o.mt.record[i]...)
	}
	if o.span != nil {
		endSpan(o.span, err, out)
	}
}

func endSpan(s trace.Span, err error, out string) {
	s.SetAttributes(attrOutcome.String(out))
	if err != nil {
		s.RecordError(err)
		s.SetStatus(codes.Error, err.Error())
	}
	s.End()
}

// endServerSpan ends a served call's span with its answer's outcome.
func endServerSpan(s trace.Span, we *wireError) {
	if we == nil {
		endSpan(s, nil, outcomeOK)
		return
	}
	err := we.decodeMarked()
	endSpan(s, err, outcomeOf(err))
}

// ---- the trace context on the wire (envelope.go: traceCtx) ----

// outgoing returns the trace context of ctx's span for a request.
func (t *telemetry) outgoing(ctx context.Context) traceCtx {
	if t == nil || t.tracer == nil {
		return traceCtx{}
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return traceCtx{}
	}
	return traceCtx{TraceID: sc.TraceID(), SpanID: sc.SpanID(), Flags: byte(sc.TraceFlags()), State: sc.TraceState().String()}
}

// serverSpan starts the span of a request served here: a child of the
// caller's span when the request carried its trace context.
func (t *telemetry) serverSpan(ctx context.Context, req *callReq) (context.Context, trace.Span) {
	if tc := req.trace; tc.present() {
		cfg := trace.SpanContextConfig{TraceID: tc.TraceID, SpanID: tc.SpanID, TraceFlags: trace.TraceFlags(tc.Flags), Remote: true}
		if tc.State != "" {
			if ts, err := trace.ParseTraceState(tc.State); err == nil {
				cfg.TraceState = ts
			}
		}
		ctx = trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(cfg))
	}
	return t.tracer.Start(ctx, req.Kind+"."+req.Method, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attrKind.String(req.Kind), attrMethod.String(req.Method), attrKey.String(req.Key)))
}

// ---- hooks the runtime calls (each a no-op on a nil telemetry) ----

type reasonKey struct {
	k *actor.Kind
	r actor.Reason
}

// lifecycle counts an activation starting or ending (actor.Config.Lifecycle).
func (t *telemetry) lifecycle(k *actor.Kind, started bool, r actor.Reason) {
	if started {
		v, ok := t.kinds.Load(k)
		if !ok {
			v, _ = t.kinds.LoadOrStore(k, metric.WithAttributeSet(attribute.NewSet(attrKind.String(k.Name))))
		}
		t.activated.Add(context.Background(), 1, v.(metric.MeasurementOption))
		return
	}
	v, ok := t.reasons.Load(reasonKey{k, r})
	if !ok {
		v, _ = t.reasons.LoadOrStore(reasonKey{k, r}, metric.WithAttributeSet(attribute.NewSet(attrKind.String(k.Name), attrReason.String(r.String()))))
	}
	t.deactivated.Add(context.Background(), 1, v.(metric.MeasurementOption))
}

// bytes counts a call envelope sent (out) or received.
func (t *telemetry) bytes(n int, out bool) {
	if t == nil || t.meter == nil {
		return
	}
	dir := t.recv
	if out {
		dir = t.sent
	}
	t.callBytes.Add(context.Background(), int64(n), dir)
}

// member counts a membership event.
func (t *telemetry) member(ev gossip.Event) {
	if t == nil || t.meter == nil {
		return
	}
	switch ev.Kind {
	case gossip.EventSuspect:
		t.suspicions.Add(context.Background(), 1)
	case gossip.EventDead:
		t.deaths.Add(context.Background(), 1)
	case gossip.EventJoined:
		t.joins.Add(context.Background(), 1)
	}
}

// quorumFailed counts a commit or confirmation short of its quorum.
func (t *telemetry) quorumFailed() {
	if t != nil && t.meter != nil {
		t.quorumFails.Add(context.Background(), 1)
	}
}

// acked counts replica acknowledgements.
func (t *telemetry) acked(n int) {
	if t != nil && t.meter != nil && n > 0 {
		t.acks.Add(context.Background(), int64(n))
	}
}

// sessionUp counts a session becoming live (mux.Config.OnSession).
func (t *telemetry) sessionUp(s *mux.Session) {
	if t == nil || t.meter == nil {
		return
	}
	t.sessions.Add(context.Background(), 1)
	t.mu.Lock()
	again := t.peers[s.Peer()]
	t.peers[s.Peer()] = true
	t.mu.Unlock()
	if again {
		t.reconnects.Add(context.Background(), 1)
	}
}

// sessionLost counts a live session closed without replacement.
func (t *telemetry) sessionLost() {
	if t != nil && t.meter != nil {
		t.peersLost.Add(context.Background(), 1)
	}
}

// keepaliveFailed counts a failed keepalive.
func (t *telemetry) keepaliveFailed() {
	if t != nil && t.meter != nil {
		t.keepalive.Add(context.Background(), 1)
	}
}
