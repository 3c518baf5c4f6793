package idemotel_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/idemotel"
)

// benchEvent is the Event of a first execution: claim, run and commit, one
// staged write, answered 201.
func benchEvent() idemkey.Event {
	return idemkey.Event{Outcome: idemkey.OutcomeExecutedStored, Mode: idemkey.ClaimFirst, FrontDoor: idemkey.FrontDoorHTTP,
		Method: "POST", Path: "/payments", Start: time.Now(), Duration: 3 * time.Millisecond,
		Phases: idemkey.PhaseClaim | idemkey.PhaseRun | idemkey.PhaseCommit,
		Claim:  time.Millisecond, Run: time.Millisecond, Commit: time.Millisecond, StoreCalls: 2, StagedActions: 1, Status: 201}
}

// benchSetup is one configuration of the OpenTelemetry providers, as an
// application sets them up: the SDK's metrics on a manual reader (a
// periodic reader collects the same aggregations, on a timer), and the
// SDK's tracing with a sampler and the batch span processor in front of an
// exporter that drops what it gets (so that no export I/O is measured).
type benchSetup struct {
	name string
	mp   metric.MeterProvider
	tp   trace.TracerProvider
}

func benchSetups() []benchSetup {
	sdkMetrics := func(opts ...sdkmetric.Option) metric.MeterProvider {
		return sdkmetric.NewMeterProvider(append([]sdkmetric.Option{sdkmetric.WithReader(sdkmetric.NewManualReader())}, opts...)...)
	}
	sdkTracing := func(s sdktrace.Sampler) trace.TracerProvider {
		return sdktrace.NewTracerProvider(sdktrace.WithSampler(s), sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	}
	return []benchSetup{
		{"noop", metricnoop.NewMeterProvider(), tracenoop.NewTracerProvider()},
		{"sdk_metrics", sdkMetrics(), tracenoop.NewTracerProvider()},
		{"sdk_ratio_0.01", sdkMetrics(), sdkTracing(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01)))},
		{"sdk_ratio_0.1", sdkMetrics(), sdkTracing(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1)))},
		{"sdk_always", sdkMetrics(), sdkTracing(sdktrace.AlwaysSample())},
		{"sdk_always_no_exemplars", sdkMetrics(sdkmetric.WithExemplarFilter(exemplar.AlwaysOffFilter)),
			sdkTracing(sdktrace.AlwaysSample())},
	}
}

// parents are the contexts of incoming requests: each holds a server span
// started by tp's sampler on a new trace, as the HTTP instrumentation
// starts one per request, so that a ratio sampler keeps its fraction of
// them and the guard's span follows its parent's decision. It also returns
// how many of them were sampled.
func parents(tp trace.TracerProvider) ([]context.Context, int) {
	ctxs, sampled := make([]context.Context, 1000), 0
	for i := range ctxs {
		ctx, span := tp.Tracer("server").Start(context.Background(), "POST /payments", trace.WithSpanKind(trace.SpanKindServer))
		if span.SpanContext().IsSampled() {
			sampled++
		}
		ctxs[i] = ctx
	}
	return ctxs, sampled
}

// loop runs op for every iteration of b, over the parent contexts in turn,
// and reports the process's CPU time per iteration (cpu-ns/op), which a
// loaded machine does not inflate as it inflates ns/op, and the fraction
// of the parents that were sampled (sampled/op).
func loop(b *testing.B, ctxs []context.Context, sampled int, op func(context.Context)) {
	b.ReportAllocs()
	start, n := cpuTime(b), 0
	for b.Loop() {
		op(ctxs[n%len(ctxs)])
		n++
	}
	b.ReportMetric(float64(cpuTime(b)-start)/float64(n), "cpu-ns/op")
	b.ReportMetric(float64(sampled)/float64(len(ctxs)), "sampled/op")
}

// BenchmarkObserverPerRequest measures what idemotel adds to one guarded
// request, alone: StartRequest and Observe of a first execution (the
// counter, three histograms, the span with two events and its
// attributes), under an incoming request's span, for each setup of
// benchSetups: "noop" over the OpenTelemetry noop providers; "sdk_metrics"
// over the SDK's metrics without tracing; "sdk_ratio_*" over the SDK's
// metrics and tracing with the sampler
// ParentBased(TraceIDRatioBased(ratio)), which records that fraction of
// the traces; "sdk_always" with every span sampled (AlwaysSample), and
// "sdk_always_no_exemplars" the same without the metrics' exemplars
// (which the SDK offers for every measurement in a sampled span's
// context). Beside each, "sdk_floor" is the same work done by hand on the
// same providers (see BenchmarkSDKFloor): the difference is idemotel's
// own cost.
func BenchmarkObserverPerRequest(b *testing.B) {
	event := benchEvent()
	for _, s := range benchSetups() {
		obs := idemotel.New(func(o *idemotel.Options) { o.MeterProvider, o.TracerProvider = s.mp, s.tp })
		ctxs, sampled := parents(s.tp)
		b.Run(s.name+"/observer", func(b *testing.B) {
			loop(b, ctxs, sampled, func(parent context.Context) {
				obs.Observe(obs.StartRequest(parent, event.Mode, event.FrontDoor), event)
			})
		})
		if s.name == "noop" {
			continue
		}
		f := newFloor(s, event)
		b.Run(s.name+"/sdk_floor", func(b *testing.B) {
			loop(b, ctxs, sampled, func(ctx context.Context) { f.metrics(f.span(ctx)) })
		})
	}
}

// floor records by hand, with the least work the OpenTelemetry API allows,
// what idemotel records for a first execution.
type floor struct {
	metrics   func(context.Context)
	span      func(context.Context) context.Context
	spanEmpty func(context.Context)
}

// newFloor returns the floor of event over s's providers: instruments like
// idemotel's on the same meter provider, attribute sets built once, and
// the span's seven attributes built once; no span over the noop tracer.
func newFloor(s benchSetup, event idemkey.Event) floor {
	m := s.mp.Meter("floor")
	requests, _ := m.Int64Counter("requests")
	hist := func(name string) metric.Float64Histogram {
		h, _ := m.Float64Histogram(name, metric.WithUnit("s"),
			metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10))
		return h
	}
	claim, run, commit := hist("claim"), hist("run"), hist("commit")
	set := metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", string(event.Outcome)),
		attribute.String("mode", event.Mode.String()), attribute.String("front_door", event.FrontDoor)))
	add, record := []metric.AddOption{set}, []metric.RecordOption{set}
	tracer := s.tp.Tracer("floor")
	attrs := []attribute.KeyValue{attribute.String("idemkey.mode", event.Mode.String()),
		attribute.String("idemkey.front_door", event.FrontDoor), attribute.String("idemkey.outcome", string(event.Outcome)),
		attribute.Int("idemkey.store_calls", event.StoreCalls), attribute.Int("idemkey.staged_actions", event.StagedActions),
		attribute.String("idemkey.key_hash", "0123456789abcdef"), attribute.Int("idemkey.status", event.Status)}
	f := floor{
		metrics: func(ctx context.Context) {
			requests.Add(ctx, 1, add...)
			claim.Record(ctx, event.Claim.Seconds(), record...)
			run.Record(ctx, event.Run.Seconds(), record...)
			commit.Record(ctx, event.Commit.Seconds(), record...)
		},
		span: func(ctx context.Context) context.Context {
			ctx, span := tracer.Start(ctx, idemotel.SpanName)
			if span.IsRecording() {
				span.AddEvent("claim", trace.WithTimestamp(event.Start.Add(event.Claim)))
				span.AddEvent("commit", trace.WithTimestamp(event.Start.Add(event.Claim+event.Run+event.Commit)))
				span.SetAttributes(attrs...)
			}
			span.End()
			return ctx
		},
		spanEmpty: func(ctx context.Context) {
			_, span := tracer.Start(ctx, idemotel.SpanName)
			span.End()
		},
	}
	if _, noop := s.tp.(tracenoop.TracerProvider); noop {
		f.span = func(ctx context.Context) context.Context { return ctx } // nothing to trace
	}
	return f
}

// BenchmarkSDKFloor splits the floor of BenchmarkObserverPerRequest (the
// OpenTelemetry SDK's own cost of what idemotel records per request) into
// its parts, on the same setups: "metrics" is the counter and the three
// histograms recorded with an attribute set built once (the least any
// caller of the metric API pays per measurement); "span_empty" a span
// started and ended, no attribute, no event; "span_same" the span
// idemotel records for a first execution (two events at given instants,
// then seven attributes in one call), every attribute built before the
// loop.
func BenchmarkSDKFloor(b *testing.B) {
	event := benchEvent()
	for _, s := range benchSetups() {
		if s.name == "noop" {
			continue
		}
		f := newFloor(s, event)
		ctxs, sampled := parents(s.tp)
		b.Run(s.name+"/metrics", func(b *testing.B) { loop(b, ctxs, sampled, f.metrics) })
		if s.name == "sdk_metrics" {
			continue
		}
		b.Run(s.name+"/span_empty", func(b *testing.B) { loop(b, ctxs, sampled, f.spanEmpty) })
		b.Run(s.name+"/span_same", func(b *testing.B) {
			loop(b, ctxs, sampled, func(ctx context.Context) { f.span(ctx) })
		})
	}
}
