package casty

import (
	"testing"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
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
