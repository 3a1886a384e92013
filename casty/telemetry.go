package casty

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

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

// WithDurationSampling sets which calls casty.call.duration times: one
// call in n on average, picked at random, is timed and recorded; n = 1
// times every call. The default (n ≤ 0, or no option) is
// DefaultDurationSampling. casty.calls counts every call whatever n
// (TELEMETRY.md). Timing a call costs two clock reads and the SDK's
// histogram Record — on the benchmark VM as much as half a sequential
// local call (BENCHMARKS.md) — so sampling is what keeps metrics cheap on
// the local call path. The pick costs a call no random draw: a hash of
// each handler's call count, seeded at random, picks one call end in n,
// and the next call of that handler to start is timed. The gaps between
// timed calls are random, so the sample follows no period of the
// workload, and a call's pick never depends on its own duration: the
// sampled durations are an unbiased sample of each handler's and
// outcome's durations.
func WithDurationSampling(n int) Option {
	return func(o *systemOptions) { o.sampling = n }
}

// DefaultDurationSampling is n of WithDurationSampling when it is not
// given: one call in 32 is timed.
const DefaultDurationSampling = 32

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

// spanOK is the outcome every span starts with (endSpan).
var spanOK = attrOutcome.String(outcomeOK)

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

func outcomeOf(err error) string { return outcomes[outcomeIndex(err)] }

// outcomeIndex returns the index in outcomes of err's outcome. A nil err
// costs a compare: the error cases live in outcomeIndexErr, whose
// errors.As target would otherwise be allocated on every call.
func outcomeIndex(err error) int {
	if err == nil {
		return 0
	}
	return outcomeIndexErr(err)
}

func outcomeIndexErr(err error) int {
	var failed *ActorFailedError
	switch {
	case isAnswered(err):
		return 2
	case errors.As(err, &failed):
		return 1
	case errors.Is(err, ErrTimeout):
		return 3
	case errors.Is(err, context.Canceled):
		return 4
	case errors.Is(err, ErrQuorumUnavailable), errors.Is(err, ErrReplicaFull):
		return 5
	}
	return 6
}

var memberStates = [...]gossip.Status{gossip.Alive, gossip.Suspect, gossip.Left, gossip.Dead}

// outcomes, in the order outcomeIndex numbers them.
var outcomes = [...]string{outcomeOK, outcomeFailed, outcomeAnswered, outcomeTimeout, outcomeCanceled, outcomeQuorum, outcomeUnavailable}

// telemetry is a system's instruments and tracer; nil when it has
// neither provider.
type telemetry struct {
	tracer trace.Tracer // nil without a TracerProvider
	meter  metric.Meter // nil without a MeterProvider
	every  uint64       // one call in every is timed (WithDurationSampling), at most 1<<32

	callDur      metric.Float64Histogram
	streamOpened metric.Int64Counter
	streamEnded  metric.Int64Counter
	streamElems  metric.Int64Counter
	activated    metric.Int64Counter
	deactivated  metric.Int64Counter
	quorumFails  metric.Int64Counter
	acks         metric.Int64Counter
	sessions     metric.Int64Counter
	reconnects   metric.Int64Counter
	peersLost    metric.Int64Counter
	keepalive    metric.Int64Counter
	suspicions   metric.Int64Counter
	deaths       metric.Int64Counter
	joins        metric.Int64Counter

	epoch time.Time // durations are read as time.Since(epoch): one clock read each
	// The handlers' methodTels: a call finds its kind's kindTel in
	// byKind, by a hash of the kind's pointer, and its handler's methodTel
	// there by the handler's index (actor.Method.Index) — two loads and a
	// compare, no map read. Built on a kind's and a handler's first call,
	// under addMu; methods lists them all for casty.calls' callback.
	byKind  [kindSlots]atomic.Pointer[kindTel]
	methods atomic.Pointer[[]*methodTel] // copy on write
	addMu   sync.Mutex                   // serializes additions to byKind and methods
	kinds   sync.Map                     // *actor.Kind → metric.MeasurementOption
	reg     metric.Registration

	mu    sync.Mutex
	peers map[mux.NodeID]bool // peers this node had a session with (reconnects)
	sent  metric.MeasurementOption
	recv  metric.MeasurementOption
	// casty.call.envelope.size, read at collection time: a remote call
	// pays two atomic adds, not two instrument calls.
	bytesOut, bytesIn atomic.Int64
	reasons           sync.Map // reasonKey → metric.MeasurementOption
}

// kindSlots is the number of byKind's chains: more than the kinds of
// most programs, so that a chain is one kindTel long.
const kindSlots = 64

// kindSlot returns k's chain in byKind: a multiplicative hash of its
// pointer (kinds are heap objects, which do not move).
func kindSlot(k *actor.Kind) uint64 {
	return uint64(uintptr(unsafe.Pointer(k))) * 0x9e3779b97f4a7c15 >> 58 // 64 slots
}

// kindTel is one kind's methodTels, by handler index (actor.Method.Index).
type kindTel struct {
	k       *actor.Kind
	next    *kindTel // another kind in the same slot
	methods []atomic.Pointer[methodTel]
}

// methodTel is what one handler's calls record: its calls by outcome,
// which casty.calls reads at each collection, its span name, and the
// attribute sets of each outcome, built once. The fields a call touches
// come first.
type methodTel struct {
	t        *telemetry
	calls    [len(outcomes)]atomic.Int64          // calls ended, by outcome
	timeNext atomic.Bool                          // a call end was picked: time the next call to start (sampled)
	seed     uint64                               // of the picks (picked)
	record   [len(outcomes)][]metric.RecordOption // by outcome; a slice so that no variadic one is allocated per call
	kind     *actor.Kind
	meth     *actor.Method
	span     string
	spanAttr trace.SpanStartOption
	observe  [len(outcomes)]metric.ObserveOption // the same sets, for casty.calls

	// A streaming handler's (streamtel.go): casty.stream.opened's set,
	// casty.stream.ended's by outcome, casty.stream.elements' sent and
	// received.
	opened []metric.AddOption
	ended  [len(outcomes)][]metric.AddOption
	elems  [2][]metric.AddOption
}

func newTelemetry(mp metric.MeterProvider, tp trace.TracerProvider, sampling int) (*telemetry, error) {
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
	if sampling <= 0 {
		sampling = DefaultDurationSampling
	}
	t := &telemetry{peers: map[mux.NodeID]bool{}, every: min(uint64(sampling), 1<<32), epoch: time.Now()}
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
	// A call pays no instrument: casty.calls is observed from the
	// handlers' atomic counts at collection time, and only the sampled
	// calls (WithDurationSampling) record their duration.
	var err error
	t.callDur, err = m.Float64Histogram("casty.call.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of a sample of the calls made by this system (one in WithDurationSampling), by kind, method and outcome."),
		metric.WithExplicitBucketBoundaries(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
	errs = append(errs, err)
	t.streamOpened = counter("casty.stream.opened", "{stream}", "Streams this system opened (Stream, Upload, Duplex), by kind and method.")
	t.streamEnded = counter("casty.stream.ended", "{stream}", "Streams this system opened that ended, by kind, method and outcome.")
	t.streamElems = counter("casty.stream.elements", "{element}", "Elements of the streams this system opened, by kind, method and direction.")
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
	records := ocounter("casty.transport.records", "{record}", "Records this node's sessions read and wrote, by direction.")
	commits := ocounter("casty.replication.commits", "{commit}", "Commits made by this member's activations.")
	commitBytes := ocounter("casty.replication.commit.size", "By", "Bytes of commit messages sent to replicas.")
	repairs := ocounter("casty.replication.repairs", "{copy}", "Copies adopted by anti-entropy passes.")
	version := gauge("casty.placement.version", "{version}", "The agreed placement version this member acts on.")
	lost := gauge("casty.replication.lost_members", "{member}", "Removed members whose copies an operator gave up (AcceptLoss).")
	waiting := gauge("casty.replication.syncs_waiting", "{sync}", "Syncs of entered ranges waiting for removed members' copies (AcceptLoss ends the wait).")
	missed := ocounter("casty.replication.missed_basis", "{commit}", "Commits this member's copy refused for lack of the commit they were built on (need-full).")
	calls := ocounter("casty.calls", "{call}", "Calls made by this system, by kind, method and outcome.")
	callBytes := ocounter("casty.call.envelope.size", "By", "Bytes of call envelopes sent to and received from other members.")
	if err := errors.Join(errs...); err != nil {
		return err
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		node := metric.WithAttributes(attrNode.String(sys.ID()))
		o.ObserveInt64(active, int64(sys.host.Len()), node)
		o.ObserveInt64(depth, int64(sys.host.Queued()), node)
		if ms := t.methods.Load(); ms != nil {
			for _, mt := range *ms {
				for i := range mt.calls {
					if n := mt.calls[i].Load(); n > 0 {
						o.ObserveInt64(calls, n, mt.observe[i])
					}
				}
			}
		}
		cl := sys.cl
		if cl == nil {
			return nil
		}
		o.ObserveInt64(callBytes, t.bytesOut.Load(), t.sent)
		o.ObserveInt64(callBytes, t.bytesIn.Load(), t.recv)
		o.ObserveInt64(live, int64(len(cl.node.Sessions())), node)
		tr := cl.node.Traffic()
		sent := metric.WithAttributes(attrNode.String(sys.ID()), attrDirection.String("sent"))
		recv := metric.WithAttributes(attrNode.String(sys.ID()), attrDirection.String("received"))
		o.ObserveInt64(traffic, int64(tr.BytesOut), sent)
		o.ObserveInt64(traffic, int64(tr.BytesIn), recv)
		o.ObserveInt64(records, int64(tr.RecordsOut), sent)
		o.ObserveInt64(records, int64(tr.RecordsIn), recv)
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
			o.ObserveInt64(missed, rp.missedBasis.Load(), node)
			st := sys.Replication()
			o.ObserveInt64(version, int64(st.PlacementVersion), node)
			o.ObserveInt64(lost, int64(st.LostMembers), node)
			o.ObserveInt64(waiting, int64(len(st.Waiting)), node)
		}
		return nil
	}, active, depth, members, refused, live, traffic, records, commits, commitBytes, repairs, missed, version, lost, waiting, calls, callBytes)
	t.reg = reg
	return err
}

// close unregisters the observable instruments' callbacks.
func (t *telemetry) close() {
	if t != nil && t.reg != nil {
		_ = t.reg.Unregister()
	}
}

// method returns what calls of the handler fn (its func pointer) of k
// record; nil when fn is not one of k's handlers.
func (t *telemetry) method(k *actor.Kind, fn uintptr) *methodTel {
	m := k.MethodFor(fn)
	if m == nil {
		return nil
	}
	return t.methodOf(k, m)
}

// methodOf returns what calls of k's handler m record. Once built, it
// costs two atomic loads and a compare (byKind).
func (t *telemetry) methodOf(k *actor.Kind, m *actor.Method) *methodTel {
	for kt := t.byKind[kindSlot(k)].Load(); kt != nil; kt = kt.next {
		if kt.k == k {
			if m.Index >= 0 && m.Index < len(kt.methods) {
				if mt := kt.methods[m.Index].Load(); mt != nil {
					return mt
				}
			}
			break
		}
	}
	return t.addMethod(k, m)
}

// addMethod builds the methodTel of k's handler m, once.
func (t *telemetry) addMethod(k *actor.Kind, m *actor.Method) *methodTel {
	t.addMu.Lock()
	defer t.addMu.Unlock()
	slot := &t.byKind[kindSlot(k)]
	kt := slot.Load()
	for ; kt != nil && kt.k != k; kt = kt.next {
	}
	if kt == nil {
		kt = &kindTel{k: k, next: slot.Load(), methods: make([]atomic.Pointer[methodTel], reflect.PointerTo(k.Type).NumMethod())}
		slot.Store(kt)
	}
	if m.Index < 0 || m.Index >= len(kt.methods) {
		return nil // not a method of k's type: cannot be one of its handlers
	}
	if mt := kt.methods[m.Index].Load(); mt != nil {
		return mt // added meanwhile
	}
	mt := &methodTel{t: t, kind: k, meth: m, span: k.Name + "." + m.Name, seed: rand.Uint64(),
		spanAttr: trace.WithAttributes(attrKind.String(k.Name), attrMethod.String(m.Name), spanOK)}
	for i, o := range outcomes {
		set := metric.WithAttributeSet(attribute.NewSet(attrKind.String(k.Name), attrMethod.String(m.Name), attrOutcome.String(o)))
		mt.record[i] = []metric.RecordOption{set}
		mt.observe[i] = set
		mt.ended[i] = []metric.AddOption{set}
	}
	if m.Shape != actor.Unary {
		mt.opened = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attrKind.String(k.Name), attrMethod.String(m.Name)))}
		for i, dir := range [2]string{"sent", "received"} {
			mt.elems[i] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attrKind.String(k.Name), attrMethod.String(m.Name), attrDirection.String(dir)))}
		}
	}
	var all []*methodTel
	if old := t.methods.Load(); old != nil {
		all = append(all, *old...)
	}
	all = append(all, mt)
	t.methods.Store(&all)
	kt.methods[m.Index].Store(mt)
	return mt
}

// callObs is one call being observed; its zero value observes nothing.
type callObs struct {
	mt    *methodTel // nil: nothing to observe
	span  trace.Span
	start time.Duration // since t.epoch; 0 unless the call is timed (WithDurationSampling)
}

// telemetry returns s's telemetry: nil without providers, or for a zero
// Ref's nil system.
func (s *System) telemetry() *telemetry {
	if s == nil {
		return nil
	}
	return s.tel
}

// startCall begins observing a call of k's handler m on the actor key:
// it returns the context the call runs with (carrying the client span)
// and the observation, to end with the call's outcome.
//
//go:noinline
func (t *telemetry) startCall(ctx context.Context, k *actor.Kind, m *actor.Method, key string) (context.Context, callObs) {
	mt := t.methodOf(k, m)
	if mt == nil {
		return ctx, callObs{}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	o := callObs{mt: mt}
	if t.meter != nil && (t.every == 1 || mt.timeNext.Load() && mt.timeNext.CompareAndSwap(true, false)) {
		o.start = max(time.Since(t.epoch), 1) // 1: never the "not timed" 0
	}
	if t.tracer != nil {
		ctx, o.span = t.tracer.Start(ctx, o.mt.span, trace.WithSpanKind(trace.SpanKindClient), o.mt.spanAttr,
			trace.WithAttributes(attrKey.String(key)))
	}
	return ctx, o
}

// end records the call's outcome.
func (o callObs) end(err error) {
	if o.mt != nil {
		o.finish(err)
	}
}

//go:noinline
func (o callObs) finish(err error) {
	i, mt := outcomeIndex(err), o.mt
	if t := mt.t; t.meter != nil {
		n := mt.calls[i].Add(1)
		if o.start != 0 {
			t.callDur.Record(context.Background(), (time.Since(t.epoch) - o.start).Seconds(), mt.record[i]...)
		}
		if t.every > 1 && picked(mt.seed, i, n, t.every) {
			mt.timeNext.Store(true)
		}
	}
	if o.span != nil {
		endSpan(o.span, err, outcomes[i])
	}
}

// picked reports whether the end of a handler's nth call with outcome i
// picks the next call to time: for one n in every, pseudo-randomly (a
// SplitMix64 finalizer of n, i and the handler's seed, scaled to
// [0, every) by a multiply), so that a call pays a few multiplies, not a
// random draw.
func picked(seed uint64, i int, n int64, every uint64) bool {
	x := seed ^ uint64(n) ^ uint64(i)<<56
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return (x>>32)*every>>32 == 0
}

// endSpan ends s with its outcome. Every span starts with outcome ok
// (spanOK): on success nothing is set, which spares the SDK an append
// that grows the span's attributes; an error replaces it.
func endSpan(s trace.Span, err error, out string) {
	if err != nil {
		s.SetAttributes(attrOutcome.String(out))
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
		trace.WithAttributes(attrKind.String(req.Kind), attrMethod.String(req.Method), attrKey.String(req.Key), spanOK))
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
	if out {
		t.bytesOut.Add(int64(n))
	} else {
		t.bytesIn.Add(int64(n))
	}
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
