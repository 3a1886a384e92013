package casty_test

import (
	"context"
	"github.com/casty-go/casty/internal/procstat"
	"slices"
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
			for _, s := range []*casty.System{first, second} {
				if err := s.WaitMembers(ctx, 2); err != nil {
					b.Fatal(err)
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

// BenchmarkTelemetryOverhead measures, in one process and in alternating
// rounds, the sequential Call under each telemetry setup against the
// uninstrumented call (CallUninstrumented: Call's body without its
// telemetry hooks), locally and to another member. It reports the median
// ns/call of each and, per setup, the median, first and third quartile of
// its per-round ratio to the uninstrumented call: each round's ratio
// compares runs a few milliseconds apart, so the machine's drift over the
// run (other processes on a shared machine) cancels out. It reports the
// same for the process's CPU time per call (-cpu-ratio: user and system
// time, which the time other processes hold the CPU does not inflate).
// Run it once: -benchtime 1x.
func BenchmarkTelemetryOverhead(b *testing.B) {
	for _, where := range []struct {
		name   string
		remote bool
		calls  int
	}{{"local", false, 2500}, {"remote", true, 150}} {
		b.Run(where.name, func(b *testing.B) {
			const rounds = 201
			type variant struct {
				name  string
				ref   casty.Ref[Counter]
				plain bool
				ns    []float64
				cpu   []float64
			}
			var vs []*variant
			for _, m := range telemetryModes(b) {
				if m.name == "noop" {
					continue // the same code path as off
				}
				ref := overheadRef(b, where.remote, m.opts())
				if m.name == "off" {
					vs = append(vs, &variant{name: "uninstrumented", ref: ref, plain: true})
				}
				vs = append(vs, &variant{name: m.name, ref: ref})
			}
			ctx := context.Background()
			for range b.N {
				for r := range rounds {
					for i := range vs {
						v := vs[(i+r)%len(vs)] // rotate the order each round
						start, cpu := time.Now(), procstat.Self()
						for range where.calls {
							var err error
							if v.plain {
								_, err = casty.CallUninstrumented(ctx, v.ref, (*Counter).Add, 1)
							} else {
								_, err = casty.Call(ctx, v.ref, (*Counter).Add, 1)
							}
							if err != nil {
								b.Fatal(err)
							}
						}
						v.ns = append(v.ns, float64(time.Since(start).Nanoseconds())/float64(where.calls))
						v.cpu = append(v.cpu, float64((procstat.Self()-cpu).Nanoseconds())/float64(where.calls))
					}
				}
			}
			quantile := func(xs []float64, q float64) float64 {
				xs = slices.Clone(xs)
				slices.Sort(xs)
				return xs[int(q*float64(len(xs)-1)+0.5)]
			}
			for _, v := range vs {
				b.ReportMetric(quantile(v.ns, 0.5), v.name+"-ns/call")
				if v == vs[0] {
					continue
				}
				for _, m := range []struct {
					suffix string
					xs     []float64
					base   []float64
				}{{"-ratio", v.ns, vs[0].ns}, {"-cpu-ratio", v.cpu, vs[0].cpu}} {
					var ratios []float64
					for r := range m.xs {
						if m.base[r] > 0 {
							ratios = append(ratios, m.xs[r]/m.base[r])
						}
					}
					if len(ratios) == 0 {
						continue // no CPU time on this platform
					}
					b.ReportMetric(quantile(ratios, 0.5), v.name+m.suffix)
					b.ReportMetric(quantile(ratios, 0.25), v.name+m.suffix+"-q1")
					b.ReportMetric(quantile(ratios, 0.75), v.name+m.suffix+"-q3")
				}
			}
		})
	}
}

// overheadRef returns a ref to a Counter on a system with opts: a local
// one, or the first of two members with the key on the second.
func overheadRef(b *testing.B, remote bool, opts []casty.Option) casty.Ref[Counter] {
	if !remote {
		sys := casty.Local(opts...)
		b.Cleanup(func() { sys.Close(context.Background()) })
		return Counters.Ref(sys, "bench")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first, err := casty.Start(ctx, "127.0.0.1:0", append(opts, quiet())...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { first.Close(context.Background()) })
	second, err := casty.Start(ctx, "127.0.0.1:0", append(opts, quiet(), casty.Seeds(first.Addr()))...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { second.Close(context.Background()) })
	for _, s := range []*casty.System{first, second} {
		if err := s.WaitMembers(ctx, 2); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; ; i++ {
		if o, _ := first.OwnerOf(Counters.Name(), "r"+strconv.Itoa(i)); o.Addr == second.Addr() {
			return Counters.Ref(first, "r"+strconv.Itoa(i))
		}
	}
}
