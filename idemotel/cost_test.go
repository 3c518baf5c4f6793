package idemotel_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/idemotel"
)

// With the SDK's metrics and the noop tracer (metrics only), a request
// allocates nothing: the attribute sets are built once, and no span is
// started. The counts stay exact.
func TestMetricsOnlyRequestAllocatesNothing(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	obs := idemotel.New(func(o *idemotel.Options) { o.MeterProvider, o.TracerProvider = mp, tracenoop.NewTracerProvider() })
	e, n := benchEvent(), 0
	allocs := testing.AllocsPerRun(100, func() {
		obs.Observe(obs.StartRequest(context.Background(), e.Mode, e.FrontDoor), e)
		n++
	})
	assert.Zero(t, allocs)
	dps := collect(t, reader)["idemkey.requests"].Data.(metricdata.Sum[int64]).DataPoints
	require.Len(t, dps, 1)
	assert.Equal(t, int64(n), dps[0].Value)
	for _, name := range []string{"idemkey.claim.duration", "idemkey.run.duration", "idemkey.commit.duration"} {
		h := collect(t, reader)[name].Data.(metricdata.Histogram[float64]).DataPoints
		require.Len(t, h, 1, name)
		assert.Equal(t, uint64(n), h[0].Count, name)
	}
}

// Over the noop tracer, the guarded function's context keeps the incoming
// request's span, so what the function adds to "the current span" reaches
// a recorded span rather than a noop one.
func TestNoopTracerKeepsTheIncomingSpanCurrent(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	server := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	obs := idemotel.New(func(o *idemotel.Options) { o.TracerProvider = tracenoop.NewTracerProvider() })
	ctx, incoming := server.Tracer("server").Start(context.Background(), "POST /payments")
	e := benchEvent()
	inner := obs.StartRequest(ctx, e.Mode, e.FrontDoor)
	current := trace.SpanFromContext(inner)
	assert.True(t, current == incoming, "the current span is a %T, not the incoming one", current)
	obs.Observe(inner, e)
	assert.True(t, incoming.IsRecording(), "the incoming span is not ended by the Observer")
}

// A request whose span is not sampled allocates nothing beyond what the
// SDK allocates for an unsampled span itself: no attribute, no option and
// no context of the Observer's own.
func TestUnsampledRequestAllocatesNothingBeyondTheSDKsSpan(t *testing.T) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()), sdktrace.WithSpanProcessor(spans))
	obs := idemotel.New(func(o *idemotel.Options) { o.MeterProvider, o.TracerProvider = mp, tp })
	e := benchEvent()
	sdk := testing.AllocsPerRun(100, func() {
		_, span := tp.Tracer("bare").Start(context.Background(), idemotel.SpanName)
		span.End()
	})
	ours := testing.AllocsPerRun(100, func() {
		obs.Observe(obs.StartRequest(context.Background(), e.Mode, e.FrontDoor), e)
	})
	assert.Equal(t, sdk, ours, "the SDK allocates %v", sdk)
	assert.Empty(t, spans.Started())
	assert.Empty(t, spans.Ended())
}

// A request inside another guarded request (one guarded function calling
// another guard) whose own span is not sampled leaves the enclosing
// request's span alone: the enclosing Observe ends it, with its own
// outcome.
func TestUnsampledInnerRequestLeavesTheEnclosingSpanOpen(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	outer := idemotel.New(func(o *idemotel.Options) {
		o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	})
	inner := idemotel.New(func(o *idemotel.Options) {
		o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
	})
	e := benchEvent()
	ctx := outer.StartRequest(context.Background(), e.Mode, e.FrontDoor)
	innerEvent := e
	innerEvent.Outcome = idemkey.OutcomeReplay
	inner.Observe(inner.StartRequest(ctx, e.Mode, e.FrontDoor), innerEvent)
	assert.Empty(t, spans.Ended(), "the enclosing span is still open")
	outer.Observe(ctx, e)
	ended := spans.Ended()
	require.Len(t, ended, 1)
	assert.Equal(t, idemotel.SpanName, ended[0].Name())
	assert.Contains(t, ended[0].Attributes(), attribute.String("idemkey.outcome", string(idemkey.OutcomeExecutedStored)))
}

// Spans recorded at the same time from many goroutines each get their own
// request's attributes and events, and nothing of another's.
func TestConcurrentSpansKeepTheirOwnAttributes(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	obs := idemotel.New(func(o *idemotel.Options) {
		o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	})
	const workers, each = 8, 50
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				e := benchEvent()
				e.StoreCalls = w*each + i
				if i%2 == 1 { // a replay: no commit, no staged write
					e.Outcome, e.Phases, e.StagedActions = idemkey.OutcomeReplay, idemkey.PhaseClaim, 0
				}
				obs.Observe(obs.StartRequest(context.Background(), e.Mode, e.FrontDoor), e)
			}
		})
	}
	wg.Wait()
	ended := spans.Ended()
	require.Len(t, ended, workers*each)
	seen := map[int64]bool{}
	for _, s := range ended {
		attrs := attribute.NewSet(s.Attributes()...)
		calls, ok := attrs.Value("idemkey.store_calls")
		require.True(t, ok)
		n := calls.AsInt64()
		assert.False(t, seen[n], "store_calls %d on two spans", n)
		seen[n] = true
		outcome, _ := attrs.Value("idemkey.outcome")
		staged, _ := attrs.Value("idemkey.staged_actions")
		var events []string
		for _, ev := range s.Events() {
			events = append(events, ev.Name)
		}
		if n%2 == 1 {
			assert.Equal(t, string(idemkey.OutcomeReplay), outcome.AsString())
			assert.Equal(t, int64(0), staged.AsInt64())
			assert.Equal(t, []string{"claim"}, events)
		} else {
			assert.Equal(t, string(idemkey.OutcomeExecutedStored), outcome.AsString())
			assert.Equal(t, int64(1), staged.AsInt64())
			assert.Equal(t, []string{"claim", "commit"}, events)
		}
		assert.Len(t, s.Attributes(), 7, "mode, front door, outcome, calls, staged, key hash, status")
	}
}

// The same, with one Observer for both requests: its sampler records the
// outer request's span and drops the inner one's (a child).
func TestUnsampledInnerRequestOfTheSameObserverLeavesTheEnclosingSpanOpen(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	rootsOnly := sdktrace.ParentBased(sdktrace.AlwaysSample(),
		sdktrace.WithLocalParentSampled(sdktrace.NeverSample()))
	obs := idemotel.New(func(o *idemotel.Options) {
		o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSampler(rootsOnly), sdktrace.WithSpanProcessor(spans))
	})
	e := benchEvent()
	ctx := obs.StartRequest(context.Background(), e.Mode, e.FrontDoor)
	innerEvent := e
	innerEvent.Outcome = idemkey.OutcomeReplay
	obs.Observe(obs.StartRequest(ctx, e.Mode, e.FrontDoor), innerEvent)
	assert.Empty(t, spans.Ended(), "the enclosing span is still open")
	obs.Observe(ctx, e)
	ended := spans.Ended()
	require.Len(t, ended, 1)
	assert.Contains(t, ended[0].Attributes(), attribute.String("idemkey.outcome", string(idemkey.OutcomeExecutedStored)))
}

// idemkey.Observers starts several Starters in order: each Observer's span
// ends, whatever span a later Starter makes current.
func TestEveryObserverAmongObserversEndsItsSpan(t *testing.T) {
	first, second := tracetest.NewSpanRecorder(), tracetest.NewSpanRecorder()
	a := idemotel.New(func(o *idemotel.Options) {
		o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(first))
	})
	b := idemotel.New(func(o *idemotel.Options) {
		o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(second))
	})
	other := otherTracer{sdktrace.NewTracerProvider()}
	both := idemkey.Observers(a, b, other).(idemkey.Starter)
	e := benchEvent()
	ctx := both.StartRequest(context.Background(), e.Mode, e.FrontDoor)
	both.Observe(ctx, e)
	assert.Len(t, first.Ended(), 1, "the first Observer's span")
	assert.Len(t, second.Ended(), 1, "the second Observer's span, ended once")
}

// otherTracer is a Starter that makes a span of its own current.
type otherTracer struct{ tp *sdktrace.TracerProvider }

func (s otherTracer) StartRequest(ctx context.Context, _ idemkey.Mode, _ string) context.Context {
	ctx, _ = s.tp.Tracer("other").Start(ctx, "other")
	return ctx
}

func (otherTracer) Observe(context.Context, idemkey.Event) {}
