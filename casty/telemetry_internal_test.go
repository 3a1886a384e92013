package casty

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/wire"
)

// No provider, or OpenTelemetry's no-op ones, leaves a system without
// telemetry: the call path's one nil check is all it pays.
func TestTelemetryNoopProvidersAreNone(t *testing.T) {
	for name, opts := range map[string][]Option{
		"none": nil,
		"noop": {WithMeterProvider(metricnoop.NewMeterProvider()), WithTracerProvider(tracenoop.NewTracerProvider())},
	} {
		sys := Local(opts...)
		if sys.tel != nil {
			t.Errorf("%s: the system holds telemetry", name)
		}
		sys.Close(nil)
	}
}

// telemKinds is the Go type of the kinds TestTelemetryMethodsAreFoundByKindAndIndex declares.
type telemKinds struct{ N int }

func (s *telemKinds) Add(_ context.Context, n int) (int, error) { s.N += n; return s.N, nil }
func (s *telemKinds) Get(context.Context) (int, error)          { return s.N, nil }

// Each handler of each kind has its own methodTel, found again on every
// call: kinds of one Go type (declared under different names) and more
// kinds than byKind has slots, so that some share a slot's chain.
func TestTelemetryMethodsAreFoundByKindAndIndex(t *testing.T) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer mp.Shutdown(context.Background())
	tel, err := newTelemetry(mp, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	reg := wire.NewRegistry()
	var kinds []*actor.Kind
	for i := range 3 * kindSlots {
		k, err := actor.NewKind(reflect.TypeFor[telemKinds](), actor.KindOptions{Name: fmt.Sprintf("k%d", i)}, reg, func() any { return new(telemKinds) })
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, k)
	}
	seen := map[*methodTel]bool{}
	for _, k := range kinds {
		for _, name := range []string{"Add", "Get"} {
			m := k.MethodByName(name)
			mt := tel.methodOf(k, m)
			if mt == nil || mt.kind != k || mt.meth != m || mt.span != k.Name+"."+name {
				t.Fatalf("%s.%s: methodTel %+v", k.Name, name, mt)
			}
			if seen[mt] {
				t.Fatalf("%s.%s: shares its methodTel", k.Name, name)
			}
			seen[mt] = true
		}
	}
	for _, k := range kinds { // found again, not built again
		for _, name := range []string{"Add", "Get"} {
			if mt := tel.methodOf(k, k.MethodByName(name)); !seen[mt] {
				t.Fatalf("%s.%s: a second methodTel", k.Name, name)
			}
		}
	}
	if n := len(*tel.methods.Load()); n != len(seen) {
		t.Errorf("methods lists %d methodTels, want %d", n, len(seen))
	}
}
