// Observability: two members in one process, each with OpenTelemetry
// metrics and traces (casty.WithMeterProvider, casty.WithTracerProvider).
// Metrics go to a Prometheus exporter served on /metrics of a local port,
// which the program then scrapes to print a few lines; spans go to the
// stdout trace exporter. A call from the first member to an actor the
// second owns is one trace: the client span on the caller, the server span
// around the handler on the owner, with one trace id, printed from both
// sides. casty/TELEMETRY.md lists every metric and span.
//
// Run it from the repository root:
//
//	go run ./examples/12_observability
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/casty-go/casty/casty"
)

// Order is an actor; Pay reports the trace it runs in, as its owner sees it.
type Order struct {
	Paid bool
}

// Pay marks the order paid and returns the trace id of the handler's span.
func (o *Order) Pay(ctx context.Context) (string, error) {
	o.Paid = true
	return trace.SpanContextFromContext(ctx).TraceID().String(), nil
}

// Cancel refuses to cancel a paid order: a failing call, for the metrics
// and the spans to show.
func (o *Order) Cancel(ctx context.Context) error {
	if o.Paid {
		return errors.New("a paid order cannot be cancelled")
	}
	return nil
}

// Orders is declared once; both members know it.
var Orders = casty.Actor[Order](casty.Name("shop.Order"))

// spanLog keeps what the stdout exporter wrote, to show which member
// ended which span.
type spanLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *spanLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// tracing returns a tracer provider for one member, exporting each span
// as it ends through the stdout exporter into spans.
func tracing(member string, spans *spanLog) *sdktrace.TracerProvider {
	exp, err := stdouttrace.New(stdouttrace.WithWriter(spans), stdouttrace.WithoutTimestamps())
	if err != nil {
		log.Fatal(err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceInstanceID(member))))
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	quiet := casty.WithLogger(slog.New(slog.DiscardHandler))

	// Metrics: one Prometheus registry for the process, served on /metrics.
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		log.Fatal(err)
	}
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer meters.Shutdown(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}
	go srv.Serve(ln)
	defer srv.Close()

	// Traces: a tracer provider per member, both into one span log.
	spans := &spanLog{}
	tracesA, tracesB := tracing("member-a", spans), tracing("member-b", spans)
	defer tracesA.Shutdown(context.Background())
	defer tracesB.Shutdown(context.Background())

	a, err := casty.Start(ctx, "127.0.0.1:0", quiet,
		casty.WithMeterProvider(meters), casty.WithTracerProvider(tracesA))
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close(context.Background())
	b, err := casty.Start(ctx, "127.0.0.1:0", casty.Seeds(a.Addr()), quiet,
		casty.WithMeterProvider(meters), casty.WithTracerProvider(tracesB))
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close(context.Background())
	for _, m := range []*casty.System{a, b} {
		if err := m.WaitMembers(ctx, 2); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("2 members, metrics on", "http://"+ln.Addr().String()+"/metrics")

	// An order the second member owns, paid from the first, inside a span
	// of the caller's own: the trace starts here.
	key := ""
	for i := 0; key == ""; i++ {
		k := fmt.Sprintf("order-%d", i)
		if m, ok := a.OwnerOf(Orders.Name(), k); ok && m.Addr == b.Addr() {
			key = k
		}
	}
	cctx, checkout := tracesA.Tracer("example").Start(ctx, "checkout")
	seenByOwner, err := casty.Call0(cctx, Orders.Ref(a, key), (*Order).Pay)
	checkout.End()
	if err != nil {
		log.Fatal(err)
	}
	caller := checkout.SpanContext().TraceID().String()
	fmt.Println("trace id on member-a (caller):", caller)
	fmt.Println("trace id on member-b (owner): ", seenByOwner)
	fmt.Println("one trace spans both members:", caller == seenByOwner)

	// What the stdout exporter wrote: one line per span.
	spans.mu.Lock()
	out := spans.buf.String()
	spans.mu.Unlock()
	fmt.Println("spans exported (stdout exporter):")
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var s struct {
			Name        string
			SpanKind    int
			SpanContext struct{ TraceID string }
			Resource    []struct {
				Key   string
				Value struct{ Value any }
			}
		}
		if err := dec.Decode(&s); err != nil {
			log.Fatal(err)
		}
		member := ""
		for _, kv := range s.Resource {
			if kv.Key == string(semconv.ServiceInstanceIDKey) {
				member = fmt.Sprint(kv.Value.Value)
			}
		}
		fmt.Printf("  %-9s %-8s %-15s trace %s\n", member, trace.SpanKind(s.SpanKind), s.Name, s.SpanContext.TraceID)
	}

	// A failing call: its spans carry the error, the counter the outcome.
	if err := casty.Do0(ctx, Orders.Ref(a, key), (*Order).Cancel); err == nil {
		log.Fatal("a paid order was cancelled")
	}

	// Scrape ourselves and print a few of casty's series.
	resp, err := http.Get("http://" + ln.Addr().String() + "/metrics")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	fmt.Println("scraped /metrics:")
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, p := range []string{"casty_calls_total{", "casty_activation_active{", "casty_membership_members{", "casty_transport_sessions{"} {
			if strings.HasPrefix(line, p) && !strings.Contains(line, `casty_member_state="left"`) && !strings.Contains(line, `casty_member_state="dead"`) {
				fmt.Println(" ", stripScope(line))
			}
		}
	}
}

// stripScope drops the otel_scope_* labels the exporter adds, for
// readability.
func stripScope(line string) string {
	open, close := strings.IndexByte(line, '{'), strings.LastIndexByte(line, '}')
	if open < 0 || close < open {
		return line
	}
	var keep []string
	for _, l := range strings.Split(line[open+1:close], ",") {
		if !strings.HasPrefix(l, "otel_scope_") {
			keep = append(keep, l)
		}
	}
	return line[:open+1] + strings.Join(keep, ",") + line[close:]
}
