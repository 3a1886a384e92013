package casty_test

import (
	"context"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/casty-go/casty/casty"
)

// The streams a system opens are counted when they open and when they
// end, by outcome, with their elements each way — locally and to another
// member — and a member's transport counts its records.
func TestTelemetryStreamMetricsCountStreamsAndElements(t *testing.T) {
	for _, remote := range []bool{false, true} {
		name := "local"
		if remote {
			name = "remote"
		}
		t.Run(name, func(t *testing.T) {
			opt, collect := meters(t)
			var sys *casty.System
			key := "s"
			if remote {
				sys = startNode(t, nil, opt)
				other := startNode(t, []string{sys.Addr()})
				waitConverged(t, []*casty.System{sys, other}, 2)
				key = keyOn(t, other, sys, Logs.Name())
			} else {
				sys = newSys(t, opt)
			}
			ctx := context.Background()
			ref := Logs.Ref(sys, key)
			if n, err := casty.Upload(ctx, ref, (*Log).Ingest, slices.Values(lines(5))); err != nil || n != 5 {
				t.Fatalf("Upload: %d, %v", n, err)
			}
			for _, err := range casty.Stream(ctx, ref, (*Log).Tail, 0) {
				if err != nil {
					t.Fatal(err)
				}
			}
			for _, err := range casty.Duplex(ctx, ref, (*Log).Lengths, slices.Values(lines(3))) {
				if err != nil {
					t.Fatal(err)
				}
			}
			var failed error
			for _, err := range casty.Stream(ctx, ref, (*Log).Broken, 0) {
				failed = err
			}
			if failed == nil {
				t.Fatal("Broken ended without its error")
			}
			rm := collect()
			kind := attribute.String("casty.actor.kind", Logs.Name())
			method := func(m string) attribute.KeyValue { return attribute.String("casty.actor.method", m) }
			dir := func(d string) attribute.KeyValue { return attribute.String("casty.direction", d) }
			outcome := func(o string) attribute.KeyValue { return attribute.String("casty.call.outcome", o) }
			for _, c := range []struct {
				name  string
				attrs []attribute.KeyValue
				want  int64
			}{
				{"casty.stream.opened", []attribute.KeyValue{kind}, 4},
				{"casty.stream.opened", []attribute.KeyValue{kind, method("Ingest")}, 1},
				{"casty.stream.ended", []attribute.KeyValue{kind, method("Ingest"), outcome("ok")}, 1},
				{"casty.stream.ended", []attribute.KeyValue{kind, method("Tail"), outcome("ok")}, 1},
				{"casty.stream.ended", []attribute.KeyValue{kind, method("Lengths"), outcome("ok")}, 1},
				{"casty.stream.ended", []attribute.KeyValue{kind, method("Broken"), outcome("failed")}, 1},
				{"casty.stream.elements", []attribute.KeyValue{kind, method("Ingest"), dir("sent")}, 5},
				{"casty.stream.elements", []attribute.KeyValue{kind, method("Tail"), dir("received")}, 5},
				{"casty.stream.elements", []attribute.KeyValue{kind, method("Lengths"), dir("sent")}, 3},
				{"casty.stream.elements", []attribute.KeyValue{kind, method("Lengths"), dir("received")}, 3},
				{"casty.stream.elements", []attribute.KeyValue{kind, method("Broken"), dir("received")}, 3},
			} {
				if got, ok := sum(rm, c.name, c.attrs...); !ok || got != c.want {
					t.Errorf("%s %v = %d (reported: %v), want %d", c.name, c.attrs, got, ok, c.want)
				}
			}
			if remote {
				node := attribute.String("casty.node", sys.ID())
				for _, d := range []string{"sent", "received"} {
					if n, _ := sum(rm, "casty.transport.records", node, dir(d)); n <= 0 {
						t.Errorf("transport records %s: %d", d, n)
					}
				}
			}
		})
	}
}

// A span's casty.call.outcome is ok when its call succeeds and the
// error's outcome when it fails, on both sides (spans start with ok and
// an error replaces it).
func TestTelemetrySpansCarryTheOutcome(t *testing.T) {
	provider, rec := spans(t)
	a := startNode(t, nil, provider())
	b := startNode(t, []string{a.Addr()}, provider())
	waitConverged(t, []*casty.System{a, b}, 2)
	key := keyOn(t, b, a, Flakies.Name())
	ctx := context.Background()
	if _, err := casty.Call(ctx, Flakies.Ref(a, key), (*Flaky).Add, 1); err != nil {
		t.Fatal(err)
	}
	if err := casty.Do0(ctx, Flakies.Ref(a, key), (*Flaky).Fail); err == nil {
		t.Fatal("Fail succeeded")
	}
	for method, want := range map[string]string{"Add": "ok", "Fail": "failed"} {
		client, server := callSpans(t, rec, Flakies.Name()+"."+method)
		for _, s := range []sdktrace.ReadOnlySpan{client, server} {
			var got []string
			for _, kv := range s.Attributes() {
				if kv.Key == "casty.call.outcome" {
					got = append(got, kv.Value.AsString())
				}
			}
			if len(got) != 1 || got[0] != want {
				t.Errorf("%s %v span: outcome %q, want [%s]", method, s.SpanKind(), got, want)
			}
		}
	}
}
