package idemotel_test

import (
	"context"
	"testing"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/idemotel"
)

// BenchmarkObserverPerRequest measures what idemotel adds to one guarded
// request, alone: StartRequest and Observe of a first execution (the
// counter, three histograms, the span with two events and its
// attributes), under an incoming request's span. "noop" runs over the
// OpenTelemetry noop providers; "sdk_metrics" over the SDK's metrics
// (a manual reader) without tracing; "sdk" over the SDK's metrics and
// tracing, every span sampled, ended and batched for an exporter that
// drops it (the SDK's batch processor, as in production). cpu-ns/op is the process's CPU time per request, which
// a loaded machine does not inflate as it inflates ns/op.
func BenchmarkObserverPerRequest(b *testing.B) {
	event := idemkey.Event{Outcome: idemkey.OutcomeExecutedStored, Mode: idemkey.ModeClaimFirst, FrontDoor: idemkey.FrontDoorHTTP,
		Method: "POST", Path: "/payments", Start: time.Now(), Duration: 3 * time.Millisecond,
		Phases: idemkey.PhaseClaim | idemkey.PhaseRun | idemkey.PhaseCommit,
		Claim:  time.Millisecond, Run: time.Millisecond, Commit: time.Millisecond, StoreCalls: 2, StagedActions: 1, Status: 201}
	for _, c := range []struct {
		name string
		opts func(*idemotel.Options)
	}{
		{"noop", func(o *idemotel.Options) {
			o.MeterProvider, o.TracerProvider = metricnoop.NewMeterProvider(), tracenoop.NewTracerProvider()
		}},
		{"sdk_metrics", func(o *idemotel.Options) {
			o.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			o.TracerProvider = tracenoop.NewTracerProvider()
		}},
		{"sdk", func(o *idemotel.Options) {
			o.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			obs := idemotel.New(c.opts)
			var o idemotel.Options
			c.opts(&o)
			parent, span := o.TracerProvider.Tracer("server").Start(context.Background(), "POST /payments")
			defer span.End()
			b.ReportAllocs()
			start, n := cpuTime(b), 0
			for b.Loop() {
				ctx := obs.StartRequest(parent, event.Mode, event.FrontDoor)
				obs.Observe(ctx, event)
				n++
			}
			b.ReportMetric(float64(cpuTime(b)-start)/float64(n), "cpu-ns/op")
		})
	}
}
