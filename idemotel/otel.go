package idemotel

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

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
	tracer                trace.Tracer // nil over the noop TracerProvider
	metered               bool         // false over the noop MeterProvider
	requests              metric.Int64Counter
	claim, run, commit    metric.Float64Histogram
	routing               metric.Int64Counter
	sweepCounts           [5]metric.Int64Counter // scanned, evicted, reclaimed, skipped, errors
	lag, oldest, liveKeys metric.Float64Gauge
	measurements          memo[attrKey, measurement]
	annotations           sync.Pool // of *annotation, reused from span to span
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
	ob := &Observer{}
	if _, noop := o.TracerProvider.(tracenoop.TracerProvider); !noop {
		ob.tracer = o.TracerProvider.Tracer(ScopeName)
	}
	_, noop := o.MeterProvider.(metricnoop.MeterProvider)
	ob.metered = !noop
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
	mode      idemkey.Mode
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
			attribute.String("mode", k.mode.String()),
			attribute.String("front_door", k.frontDoor),
		}
		if k.class != "" {
			kvs = append(kvs, attribute.String("class", string(k.class)))
		}
		opt := metric.WithAttributeSet(attribute.NewSet(kvs...))
		return measurement{add: []metric.AddOption{opt}, record: []metric.RecordOption{opt}}
	})
}

// spanKey holds, in the context of a request, the span that Observer o
// started for it: one key per Observer, so that other Starters (another
// Observer among idemkey.Observers) leave it to be found.
type spanKey struct{ o *Observer }

// StartRequest starts the request's span as a child of the span in ctx,
// and returns the context that holds it.
//
// The span starts without attributes: all of them are set when the
// request ends (Observe), so that a request whose span is not sampled
// pays for none of them; a sampler therefore decides without them. A span
// that does not record (one its sampler dropped) costs nothing more: it
// stays in the returned context, parent of the spans made inside, and is
// not ended, as a span that records nothing has nothing to deliver.
//
// Over the noop TracerProvider of package
// go.opentelemetry.io/otel/trace/noop, StartRequest returns ctx itself:
// no span is started, and the incoming request's span stays the current
// span of the guarded function's context.
func (o *Observer) StartRequest(ctx context.Context, mode idemkey.Mode, frontDoor string) context.Context {
	if o.tracer == nil {
		return ctx
	}
	ctx, span := o.tracer.Start(ctx, SpanName)
	if !span.IsRecording() && ctx.Value(spanKey{o}) == nil {
		return ctx // nothing to end, and no enclosing request's span to hide
	}
	// Inside a request this Observer started a span for, even a span that
	// does not record is kept: it hides the enclosing span from this
	// request's Observe, which would end it.
	return context.WithValue(ctx, spanKey{o}, span)
}

// Observe records e in the request instruments and ends the request's
// span (when StartRequest started one on ctx). Over the noop
// MeterProvider of package go.opentelemetry.io/otel/metric/noop it skips
// the instruments, which would record nothing.
func (o *Observer) Observe(ctx context.Context, e idemkey.Event) {
	if o.metered {
		o.record(ctx, &e)
	}
	if o.tracer == nil {
		return
	}
	span, ok := ctx.Value(spanKey{o}).(trace.Span)
	if !ok || !span.IsRecording() {
		return
	}
	a, _ := o.annotations.Get().(*annotation)
	if a == nil {
		a = new(annotation)
	}
	a.write(span, &e)
	*a = annotation{} // holds nothing of e while pooled
	o.annotations.Put(a)
	span.End()
}

// record adds e to the request instruments, with the attribute set of its
// outcome, mode, front door and class.
func (o *Observer) record(ctx context.Context, e *idemkey.Event) {
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
}

// annotation holds the arguments of a span's AddEvent and SetAttributes
// calls: its events' options and its attributes (at most eight). A span
// copies what it keeps of them (the SDK's spans do), so one annotation
// serves span after span.
type annotation struct {
	claim, commit [1]trace.EventOption
	attrs         [8]attribute.KeyValue
}

// write writes e on its span: its events, then all its attributes in one
// call.
func (a *annotation) write(span trace.Span, e *idemkey.Event) {
	if e.Phases&idemkey.PhaseClaim != 0 {
		a.claim[0] = trace.WithTimestamp(e.Start.Add(e.Claim))
		span.AddEvent("claim", a.claim[:]...)
	}
	if e.Phases&idemkey.PhaseCommit != 0 {
		a.commit[0] = trace.WithTimestamp(e.Start.Add(e.Claim + e.Run + e.Commit))
		span.AddEvent("commit", a.commit[:]...)
	}
	attrs := append(a.attrs[:0],
		attribute.String("idemkey.mode", e.Mode.String()),
		attribute.String("idemkey.front_door", e.FrontDoor),
		attribute.String("idemkey.outcome", string(e.Outcome)),
		attribute.Int("idemkey.store_calls", e.StoreCalls),
		attribute.Int("idemkey.staged_actions", e.StagedActions))
	if e.Mode != idemkey.Unkeyed {
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
