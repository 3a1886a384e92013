package casty_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/casty-go/casty/casty"
)

// discardSpans is an exporter that keeps nothing: the SDK does all its
// work (sampling, recording, ending, exporting) and memory stays flat.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// telemetryModes are the setups the overhead benchmarks compare: no
// provider (the uninstrumented call), OpenTelemetry's no-op providers,
// the metrics SDK with an in-memory reader, and metrics plus the tracing
// SDK (every span sampled and exported to discardSpans).
func telemetryModes(b *testing.B) []struct {
	name string
	opts func() []casty.Option
} {
	sdkMeters := func() casty.Option {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		b.Cleanup(func() { mp.Shutdown(context.Background()) })
		return casty.WithMeterProvider(mp)
	}
	sdkTracer := func() casty.Option {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(discardSpans{}))
		b.Cleanup(func() { tp.Shutdown(context.Background()) })
		return casty.WithTracerProvider(tp)
	}
	return []struct {
		name string
		opts func() []casty.Option
	}{
		{"off", func() []casty.Option { return nil }},
		{"noop", func() []casty.Option {
			return []casty.Option{casty.WithMeterProvider(metricnoop.NewMeterProvider()), casty.WithTracerProvider(tracenoop.NewTracerProvider())}
		}},
		{"metrics", func() []casty.Option { return []casty.Option{sdkMeters()} }},
		{"metrics+traces", func() []casty.Option { return []casty.Option{sdkMeters(), sdkTracer()} }},
	}
}

// BenchmarkTelemetryCallLocal: BenchmarkCallSequential under each
// telemetry setup.
func BenchmarkTelemetryCallLocal(b *testing.B) {
	for _, m := range telemetryModes(b) {
		b.Run(m.name, func(b *testing.B) {
			ctx := context.Background()
			sys := casty.Local(m.opts()...)
			defer sys.Close(ctx)
			ref := Counters.Ref(sys, "bench")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := casty.Call(ctx, ref, (*Counter).Add, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTelemetryCallRemote: BenchmarkClusterCallRemote under each
// telemetry setup (both members instrumented alike).
func BenchmarkTelemetryCallRemote(b *testing.B) {
	for _, m := range telemetryModes(b) {
		b.Run(m.name, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			first, err := casty.Start(ctx, "127.0.0.1:0", append(m.opts(), quiet())...)
			if err != nil {
				b.Fatal(err)
			}
			defer first.Close(context.Background())
			second, err := casty.Start(ctx, "127.0.0.1:0", append(m.opts(), quiet(), casty.Seeds(first.Addr()))...)
			if err != nil {
				b.Fatal(err)
			}
			defer second.Close(context.Background())
			for len(first.Members()) != 2 || len(second.Members()) != 2 {
				select {
				case <-ctx.Done():
					b.Fatal("the members did not converge")
				case <-time.After(10 * time.Millisecond):
				}
			}
			key := ""
			for i := 0; key == ""; i++ {
				if o, _ := first.OwnerOf(Counters.Name(), "r"+strconv.Itoa(i)); o.Addr == second.Addr() {
					key = "r" + strconv.Itoa(i)
				}
			}
			ref := Counters.Ref(first, key)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := casty.Call(ctx, ref, (*Counter).Add, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
