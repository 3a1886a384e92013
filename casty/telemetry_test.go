package casty_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/casty-go/casty/casty"
)

// meters returns a meter provider whose metrics the test reads with
// collect.
func meters(t *testing.T) (casty.Option, func() metricdata.ResourceMetrics) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return casty.WithMeterProvider(mp), func() metricdata.ResourceMetrics {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		return rm
	}
}

// sum adds up the data points of the metric called name whose attributes
// include every one of want (a counter, a gauge or a histogram's count).
func sum(rm metricdata.ResourceMetrics, name string, want ...attribute.KeyValue) (total int64, found bool) {
	match := func(set attribute.Set) bool {
		for _, kv := range want {
			if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
				return false
			}
		}
		return true
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			found = true
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						total += p.Value
					}
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						total += p.Value
					}
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						total += int64(p.Count)
					}
				}
			}
		}
	}
	return total, found
}

func TestTelemetryCallMetricsMoveWithCallsFailuresAndActivations(t *testing.T) {
	opt, collect := meters(t)
	sys := newSys(t, opt, casty.WithDurationSampling(1))
	ctx := context.Background()
	ref := Flakies.Ref(sys, "m")
	for range 3 {
		if _, err := casty.Call(ctx, ref, (*Flaky).Add, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := casty.Do0(ctx, ref, (*Flaky).Fail); err == nil {
		t.Fatal("Fail succeeded")
	}
	kind := attribute.String("casty.actor.kind", Flakies.Name())
	rm := collect()
	for _, c := range []struct {
		name  string
		attrs []attribute.KeyValue
		want  int64
	}{
		{"casty.calls", []attribute.KeyValue{kind, attribute.String("casty.actor.method", "Add"), attribute.String("casty.call.outcome", "ok")}, 3},
		{"casty.calls", []attribute.KeyValue{kind, attribute.String("casty.actor.method", "Fail"), attribute.String("casty.call.outcome", "failed")}, 1},
		{"casty.calls", []attribute.KeyValue{kind}, 4},
		{"casty.calls", []attribute.KeyValue{attribute.String("casty.call.outcome", "failed")}, 1},
		{"casty.call.duration", []attribute.KeyValue{kind}, 4}, // WithDurationSampling(1): every call timed
		{"casty.activation.activated", []attribute.KeyValue{kind}, 1},
		{"casty.activation.active", nil, 1},
		{"casty.mailbox.depth", nil, 0},
	} {
		if got, ok := sum(rm, c.name, c.attrs...); !ok || got != c.want {
			t.Errorf("%s %v = %d (reported: %v), want %d", c.name, c.attrs, got, ok, c.want)
		}
	}
	// Deactivation is counted by reason once the activation ends.
	if err := casty.Do0(ctx, Greeters.Ref(sys, "bye"), (*Greeter).Bye); err != nil {
		t.Fatal(err)
	}
	reason := attribute.String("casty.deactivation.reason", "deactivate")
	waitFor(t, 5*time.Second, "a deactivation counted", func() bool {
		n, _ := sum(collect(), "casty.activation.deactivated", attribute.String("casty.actor.kind", Greeters.Name()), reason)
		return n == 1
	})
}

func TestTelemetryMembershipAndTransportMetricsFollowTheCluster(t *testing.T) {
	parallel(t)
	opt, collect := meters(t)
	first := startNode(t, nil, opt)
	second := startNode(t, []string{first.Addr()})
	third := startNode(t, []string{first.Addr()})
	waitConverged(t, []*casty.System{first, second, third}, 3)
	node := attribute.String("casty.node", first.ID())
	waitFor(t, 10*time.Second, "three alive members and live sessions", func() bool {
		rm := collect()
		alive, _ := sum(rm, "casty.membership.members", node, attribute.String("casty.member.state", "alive"))
		sessions, _ := sum(rm, "casty.transport.sessions", node)
		joins, _ := sum(rm, "casty.membership.joins")
		opened, _ := sum(rm, "casty.transport.session.opened")
		return alive == 3 && sessions >= 1 && joins >= 2 && opened >= 1
	})
	// A remote call counts the envelopes' bytes both ways.
	key := keyOn(t, second, first, Wheres.Name())
	if _, err := casty.Call0(context.Background(), Wheres.Ref(first, key), (*Where).Hit); err != nil {
		t.Fatal(err)
	}
	rm := collect()
	if n, ok := sum(rm, "casty.membership.refused", node); !ok || n != 0 {
		t.Errorf("membership refused records: %d (reported %v), want 0", n, ok)
	}
	for _, dir := range []string{"sent", "received"} {
		if n, _ := sum(rm, "casty.call.envelope.size", attribute.String("casty.direction", dir)); n <= 0 {
			t.Errorf("call envelope bytes %s: %d", dir, n)
		}
		if n, _ := sum(rm, "casty.transport.bytes", node, attribute.String("casty.direction", dir)); n <= 0 {
			t.Errorf("transport bytes %s: %d", dir, n)
		}
	}
	// A member killed: suspected, then dead, on the others' tables.
	casty.Crash(third)
	waitFor(t, 15*time.Second, "the crash seen as a suspicion and a death", func() bool {
		rm := collect()
		sus, _ := sum(rm, "casty.membership.suspicions")
		dead, _ := sum(rm, "casty.membership.deaths")
		deadNow, _ := sum(rm, "casty.membership.members", node, attribute.String("casty.member.state", "dead"))
		return sus >= 1 && dead >= 1 && deadNow == 1
	})
}

// spans returns a tracer provider per member, all recording into one
// span recorder.
func spans(t *testing.T) (func() casty.Option, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	return func() casty.Option {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		return casty.WithTracerProvider(tp)
	}, rec
}

// callSpans returns the client and the server span of method.
func callSpans(t *testing.T, rec *tracetest.SpanRecorder, name string) (client, server sdktrace.ReadOnlySpan) {
	t.Helper()
	for _, s := range rec.Ended() {
		if s.Name() != name {
			continue
		}
		switch s.SpanKind() {
		case trace.SpanKindClient:
			client = s
		case trace.SpanKindServer:
			server = s
		}
	}
	if client == nil || server == nil {
		t.Fatalf("%s: client span %v, server span %v, of %d ended", name, client != nil, server != nil, len(rec.Ended()))
	}
	return client, server
}

func TestTelemetryOneTraceCrossesMembers(t *testing.T) {
	provider, rec := spans(t)
	a := startNode(t, nil, provider())
	b := startNode(t, []string{a.Addr()}, provider())
	waitConverged(t, []*casty.System{a, b}, 2)
	key := keyOn(t, b, a, Wheres.Name())
	if _, err := casty.Call0(context.Background(), Wheres.Ref(a, key), (*Where).Hit); err != nil {
		t.Fatal(err)
	}
	client, server := callSpans(t, rec, Wheres.Name()+".Hit")
	if client.SpanContext().TraceID() != server.SpanContext().TraceID() {
		t.Fatalf("two traces: client %s, server %s", client.SpanContext().TraceID(), server.SpanContext().TraceID())
	}
	if server.Parent().SpanID() != client.SpanContext().SpanID() || !server.Parent().IsRemote() {
		t.Fatalf("server span's parent %v, want the client span %v (remote)", server.Parent(), client.SpanContext())
	}
	if client.Status().Code == codes.Error || server.Status().Code == codes.Error {
		t.Fatalf("a successful call's spans say error: %v %v", client.Status(), server.Status())
	}
}

func TestTelemetryErrorsSetSpanStatus(t *testing.T) {
	provider, rec := spans(t)
	a := startNode(t, nil, provider())
	b := startNode(t, []string{a.Addr()}, provider())
	waitConverged(t, []*casty.System{a, b}, 2)
	key := keyOn(t, b, a, Flakies.Name())
	var failed *casty.ActorFailedError
	if err := casty.Do0(context.Background(), Flakies.Ref(a, key), (*Flaky).Fail); !errors.As(err, &failed) {
		t.Fatalf("Fail: %v", err)
	}
	client, server := callSpans(t, rec, Flakies.Name()+".Fail")
	for _, s := range []sdktrace.ReadOnlySpan{client, server} {
		if s.Status().Code != codes.Error {
			t.Errorf("%v span status %v, want Error", s.SpanKind(), s.Status())
		}
		recorded := false
		for _, ev := range s.Events() {
			recorded = recorded || ev.Name == "exception"
		}
		if !recorded {
			t.Errorf("%v span records no error event", s.SpanKind())
		}
	}
}

func TestTelemetryStreamsCarryTheTrace(t *testing.T) {
	provider, rec := spans(t)
	a := startNode(t, nil, provider())
	b := startNode(t, []string{a.Addr()}, provider())
	waitConverged(t, []*casty.System{a, b}, 2)
	key := keyOn(t, b, a, Logs.Name())
	for _, err := range casty.Stream(context.Background(), Logs.Ref(a, key), (*Log).Tail, 0) {
		if err != nil {
			t.Fatal(err)
		}
	}
	// The server span ends after the stream's last frame: wait for it.
	waitFor(t, 5*time.Second, "the stream's server span", func() bool {
		for _, s := range rec.Ended() {
			if s.SpanKind() == trace.SpanKindServer {
				return true
			}
		}
		return false
	})
	client, server := callSpans(t, rec, Logs.Name()+".Tail")
	if client.SpanContext().TraceID() != server.SpanContext().TraceID() || server.Parent().SpanID() != client.SpanContext().SpanID() {
		t.Fatalf("stream spans not joined: client %v, server parent %v", client.SpanContext(), server.Parent())
	}
}

// A replica that lost its copy refuses the next commit as need-full, and
// its member's missed-basis counter says so.
func TestTelemetryCountsCommitsAReplicaMissedTheBasisOf(t *testing.T) {
	opt, collect := meters(t)
	nodes := startReplicated(t, 3, opt)
	key := keyOn(t, nodes[0], nodes[0], Ledgers.Name())
	ref := Ledgers.Ref(nodes[0], key)
	add := func() {
		callUntil(t, 10*time.Second, "a replicated write", func(ctx context.Context) (int, error) {
			return casty.Call(ctx, ref, (*Ledger).Add, 1)
		})
	}
	add()
	// The write is acknowledged once a majority holds it: the third
	// member's copy may still be on its way, and dropped before it lands
	// it would be rebuilt by that commit, leaving the next one nothing to
	// refuse.
	waitFor(t, 5*time.Second, "the third member holding the first commit", func() bool {
		want, _ := casty.ReplicaState(nodes[0], Ledgers.Name(), key)
		got, ok := casty.ReplicaState(nodes[2], Ledgers.Name(), key)
		return ok && got == want
	})
	casty.DropCopy(nodes[2], Ledgers.Name(), key)
	add()
	waitFor(t, 5*time.Second, "the member that lost its copy to count the commit it refused", func() bool {
		n, _ := sum(collect(), "casty.replication.missed_basis", attribute.String("casty.node", nodes[2].ID()))
		return n >= 1
	})
}

func TestTelemetryReplicationMetricsCountCommitsAcksAndQuorumFailures(t *testing.T) {
	parallel(t)
	opt, collect := meters(t)
	nodes := startReplicated(t, 3, opt)
	key := keyOn(t, nodes[0], nodes[0], Ledgers.Name())
	ref := Ledgers.Ref(nodes[0], key)
	for i := range 3 {
		callUntil(t, 10*time.Second, "a replicated write", func(ctx context.Context) (int, error) {
			return casty.Call(ctx, ref, (*Ledger).Add, i+1)
		})
	}
	rm := collect()
	commits, _ := sum(rm, "casty.replication.commits", attribute.String("casty.node", nodes[0].ID()))
	size, _ := sum(rm, "casty.replication.commit.size", attribute.String("casty.node", nodes[0].ID()))
	acks, _ := sum(rm, "casty.replication.acks")
	if commits < 3 || size <= 0 || acks < 3 {
		t.Fatalf("after 3 replicated writes: commits %d, commit bytes %d, acks %d", commits, size, acks)
	}
	// Both other replicas gone: the owner's next commit cannot reach a
	// majority.
	casty.Crash(nodes[1])
	casty.Crash(nodes[2])
	if _, err := casty.Call(context.Background(), ref, (*Ledger).Add, 1); !errors.Is(err, casty.ErrQuorumUnavailable) {
		t.Fatalf("a write with no replica alive: %v", err)
	}
	rm = collect()
	if n, _ := sum(rm, "casty.replication.quorum.failures"); n < 1 {
		t.Fatalf("quorum failures: %d", n)
	}
	if n, _ := sum(rm, "casty.calls", attribute.String("casty.call.outcome", "quorum")); n != 1 {
		t.Fatalf("calls with outcome quorum: %d", n)
	}
}

// logLines records the messages of the log lines written.
type logLines struct {
	mu  sync.Mutex
	msg []string
}

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelInfo {
		l.mu.Lock()
		l.msg = append(l.msg, r.Message)
		l.mu.Unlock()
	}
	return nil
}
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logLines) WithGroup(string) slog.Handler      { return l }

func (l *logLines) casty() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, m := range l.msg {
		if strings.HasPrefix(m, "casty:") {
			out = append(out, m)
		}
	}
	return out
}

// Calls write no log line at the default level, whether they succeed or
// fail, locally or across members.
func TestTelemetryNoLogLinePerCall(t *testing.T) {
	rec := &logLines{}
	logger := casty.WithLogger(slog.New(rec))
	a := startNode(t, nil, logger)
	b := startNode(t, []string{a.Addr()}, logger)
	waitConverged(t, []*casty.System{a, b}, 2)
	before := len(rec.casty())
	ctx := context.Background()
	remote, local := keyOn(t, b, a, Flakies.Name()), keyOn(t, a, a, Flakies.Name())
	for range 20 {
		for _, key := range []string{remote, local} {
			if _, err := casty.Call(ctx, Flakies.Ref(a, key), (*Flaky).Add, 1); err != nil {
				t.Fatal(err)
			}
			if err := casty.Do0(ctx, Flakies.Ref(a, key), (*Flaky).Fail); err == nil {
				t.Fatal("Fail succeeded")
			}
		}
	}
	// Fail's error is not registered (casty.Errors): the first time a
	// member sends its text across, it says so once — once per handler
	// and text for the process, not once per call.
	got := rec.casty()[before:]
	unregistered := 0
	for _, m := range got {
		if strings.HasPrefix(m, "casty: a handler's error is not registered") {
			unregistered++
		}
	}
	if len(got) != unregistered || unregistered > 1 {
		t.Fatalf("80 calls wrote %d casty lines: %q", len(got), got)
	}
}
