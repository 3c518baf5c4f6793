package idemotel

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/idemkey/idemkey/idemotel"

// SpanName is the name of the span of a guarded request.
const SpanName = "idemkey.guard"

// Options configure New. The zero value of each field selects its
// default.
type Options struct {
	// MeterProvider provides the meter (default otel.GetMeterProvider()).
	MeterProvider metric.MeterProvider
	// TracerProvider provides the tracer (default
	// otel.GetTracerProvider()).
	TracerProvider trace.TracerProvider
}

// durationBuckets are the histograms' bucket boundaries in seconds: those
// OpenTelemetry's semantic conventions recommend for HTTP durations.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// Observer records idemkey's events in OpenTelemetry. It implements
// idemkey.Observer, idemkey.Starter and idemkey.RoutingObserver, and is
// safe for concurrent use.
type Observer struct {
	tracer                trace.Tracer
	requests              metric.Int64Counter
	claim, run, commit    metric.Float64Histogram
	routing               metric.Int64Counter
	sweepCounts           [5]metric.Int64Counter // scanned, evicted, reclaimed, skipped, errors
	lag, oldest, liveKeys metric.Float64Gauge
	measurements          memo[attrKey, measurement]
	starts                memo[[2]string, []trace.SpanStartOption] // by mode and front door
}

var (
	_ idemkey.Starter         = (*Observer)(nil)
	_ idemkey.RoutingObserver = (*Observer)(nil)
)

// New returns an Observer over the providers of the options. It panics if
// the meter refuses to create an instrument (a provider's bug: the API's
// instruments are created with fixed, valid names).
func New(optFns ...func(*Options)) *Observer {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if o.MeterProvider == nil {
		o.MeterProvider = otel.GetMeterProvider()
	}
	if o.TracerProvider == nil {
		o.TracerProvider = otel.GetTracerProvider()
	}
	m := o.MeterProvider.Meter(ScopeName)
	ob := &Observer{tracer: o.TracerProvider.Tracer(ScopeName)}
	var errs []error
	check := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var err error
	ob.requests, err = m.Int64Counter("idemkey.requests", metric.WithUnit("{request}"),
		metric.WithDescription("Requests handled by an idemkey Guard, by outcome, mode and front door."))
	check(err)
	hist := func(name, desc string) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(durationBuckets...))
		check(err)
		return h
	}
	ob.claim = hist("idemkey.claim.duration", "Duration of the claim of a key (or its lookup in the cache).")
	ob.run = hist("idemkey.run.duration", "Duration of the guarded function.")
	ob.commit = hist("idemkey.commit.duration", "Duration of the commit of a response with its staged writes.")
	ob.routing, err = m.Int64Counter("idemkey.multiregion.decisions", metric.WithUnit("{decision}"),
		metric.WithDescription("Routing decisions of a multi-region store, by kind, home region and region."))
	check(err)
	for i, name := range []string{"scanned", "evicted", "reclaimed", "skipped", "errors"} {
		ob.sweepCounts[i], err = m.Int64Counter("idemkey.sweep."+name, metric.WithUnit("{item}"),
			metric.WithDescription("Key records the sweeper "+name+" (errors: failed DynamoDB calls)."))
		check(err)
	}
	gauge := func(name, unit, desc string) metric.Float64Gauge {
		g, err := m.Float64Gauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		check(err)
		return g
	}
	ob.lag = gauge("idemkey.sweep.eviction_lag", "s", "How long ago the oldest expired record the last sweep saw expired.")
	ob.oldest = gauge("idemkey.sweep.oldest_live_key_age", "s", "Age of the oldest live record the last sweep saw.")
	ob.liveKeys = gauge("idemkey.sweep.live_keys", "{key}", "Live records the last sweep saw.")
	if len(errs) > 0 {
		panic("idemotel: New: " + errs[0].Error())
	}
	return ob
}

// attrKey identifies one attribute set of the request instruments.
type attrKey struct {
	outcome   idemkey.Outcome
	mode      string
	frontDoor string
	class     dynamostore.Class
}

// measurement holds the options of one attribute set, as the
// instruments' variadic parameters take them.
type measurement struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

// measurement returns the options of k's attribute set, built once: a
// request allocates none.
func (o *Observer) measurement(k attrKey) measurement {
	return o.measurements.get(k, func() measurement {
		kvs := []attribute.KeyValue{
			attribute.String("outcome", string(k.outcome)),
			attribute.String("mode", k.mode),
			attribute.String("front_door", k.frontDoor),
		}
		if k.class != "" {
			kvs = append(kvs, attribute.String("class", string(k.class)))
		}
		opt := metric.WithAttributeSet(attribute.NewSet(kvs...))
		return measurement{add: []metric.AddOption{opt}, record: []metric.RecordOption{opt}}
	})
}

// spanKey marks the context of a request whose span this Observer started.
type spanKey struct{}

// StartRequest starts the request's span as a child of the span in ctx.
func (o *Observer) StartRequest(ctx context.Context, mode, frontDoor string) context.Context {
	opts := o.starts.get([2]string{mode, frontDoor}, func() []trace.SpanStartOption {
		return []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(attribute.String("idemkey.mode", mode), attribute.String("idemkey.front_door", frontDoor))}
	})
	ctx, span := o.tracer.Start(ctx, SpanName, opts...)
	return context.WithValue(ctx, spanKey{}, span)
}

// Observe records e in the request instruments and ends the request's
// span (when StartRequest started one on ctx).
func (o *Observer) Observe(ctx context.Context, e idemkey.Event) {
	opt := o.measurement(attrKey{e.Outcome, e.Mode, e.FrontDoor, e.Class})
	o.requests.Add(ctx, 1, opt.add...)
	if e.Phases&idemkey.PhaseClaim != 0 {
		o.claim.Record(ctx, e.Claim.Seconds(), opt.record...)
	}
	if e.Phases&idemkey.PhaseRun != 0 {
		o.run.Record(ctx, e.Run.Seconds(), opt.record...)
	}
	if e.Phases&idemkey.PhaseCommit != 0 {
		o.commit.Record(ctx, e.Commit.Seconds(), opt.record...)
	}
	span, ok := ctx.Value(spanKey{}).(trace.Span)
	if !ok {
		return
	}
	if span.IsRecording() {
		o.annotate(span, &e)
	}
	span.End()
}

// annotate writes e on its span.
func (o *Observer) annotate(span trace.Span, e *idemkey.Event) {
	if e.Phases&idemkey.PhaseClaim != 0 {
		span.AddEvent("claim", trace.WithTimestamp(e.Start.Add(e.Claim)))
	}
	if e.Phases&idemkey.PhaseCommit != 0 {
		span.AddEvent("commit", trace.WithTimestamp(e.Start.Add(e.Claim+e.Run+e.Commit)))
	}
	attrs := make([]attribute.KeyValue, 0, 7)
	attrs = append(attrs,
		attribute.String("idemkey.outcome", string(e.Outcome)),
		attribute.Int("idemkey.store_calls", e.StoreCalls),
		attribute.Int("idemkey.staged_actions", e.StagedActions))
	if e.Mode != idemkey.ModeUnkeyed {
		attrs = append(attrs, attribute.String("idemkey.key_hash", e.KeyHash()))
	}
	if e.Status != 0 {
		attrs = append(attrs, attribute.Int("idemkey.status", e.Status))
	}
	if failed(e) {
		errType := string(e.Outcome)
		if e.Class != "" {
			errType = string(e.Class)
		}
		attrs = append(attrs, attribute.String("error.type", errType))
		span.SetStatus(codes.Error, string(e.Outcome))
	}
	span.SetAttributes(attrs...)
}

// failed reports whether e's outcome is one an operator looks at: not an
// answer of the protocol to its client (a replay, a 409 in flight, a 422),
// but a fault.
func failed(e *idemkey.Event) bool {
	switch e.Outcome {
	case idemkey.OutcomeExecutedStored, idemkey.OutcomeReplay, idemkey.OutcomeReplayFromCache,
		idemkey.OutcomeUnkeyedCommitted, idemkey.OutcomeInFlight, idemkey.OutcomeMismatch, idemkey.OutcomeInvalid:
		return false
	case idemkey.OutcomeExecutedReleased:
		return e.Err != nil
	}
	return true
}

// ObserveRouting counts a multi-region store's decision.
func (o *Observer) ObserveRouting(ctx context.Context, e idemkey.RoutingEvent) {
	o.routing.Add(ctx, 1, metric.WithAttributes(attribute.String("kind", e.Kind),
		attribute.String("home", e.Home), attribute.String("region", e.Region)))
}

// RecordSweep records what one sweep did: its counts added to the
// idemkey.sweep counters (scanned, evicted, reclaimed, skipped, errors),
// its eviction lag, oldest live key age and live keys as the gauges'
// values, all with the attribute table (and dry_run true for a dry run,
// whose evictions did not happen). A nil report records nothing.
func (o *Observer) RecordSweep(ctx context.Context, r *dynamostore.SweepReport) {
	if r == nil {
		return
	}
	opt := metric.WithAttributes(attribute.String("table", r.Table), attribute.Bool("dry_run", r.DryRun))
	for i, n := range []int64{r.Scanned, r.Evicted, r.Reclaimed, r.Skipped, r.Errors} {
		o.sweepCounts[i].Add(ctx, n, opt)
	}
	o.lag.Record(ctx, r.EvictionLag.Seconds(), opt)
	o.oldest.Record(ctx, r.OldestLiveKeyAge.Seconds(), opt)
	o.liveKeys.Record(ctx, float64(r.LiveKeys), opt)
}
