package idemotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/idemotel"
	"github.com/idemkey/idemkey/multiregion"
)

func newObserver(t *testing.T) (*idemotel.Observer, *sdkmetric.ManualReader, *tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	t.Helper()
	reader, spans := sdkmetric.NewManualReader(), tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	return idemotel.New(func(o *idemotel.Options) { o.MeterProvider, o.TracerProvider = mp, tp }), reader, spans, tp
}

func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(t, idemotel.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// A sweep's report becomes counters that add up over runs and gauges that
// hold the last run's figures, by table.
func TestRecordSweepAddsCountsAndSetsGauges(t *testing.T) {
	obs, reader, _, _ := newObserver(t)
	ctx := context.Background()
	obs.RecordSweep(ctx, &dynamostore.SweepReport{Table: "keys", Scanned: 10, Evicted: 4, Reclaimed: 1, Skipped: 2, Errors: 1,
		LiveKeys: 3, EvictionLag: 90 * time.Second, OldestLiveKeyAge: time.Hour})
	obs.RecordSweep(ctx, &dynamostore.SweepReport{Table: "keys", Scanned: 5, Evicted: 5, LiveKeys: 2, EvictionLag: 30 * time.Second})
	obs.RecordSweep(ctx, nil)
	m := collect(t, reader)
	sum := func(name string) int64 {
		dps := m[name].Data.(metricdata.Sum[int64]).DataPoints
		require.Len(t, dps, 1, name)
		assert.Equal(t, "keys", attr(dps[0].Attributes, "table"))
		assert.Equal(t, "false", attr(dps[0].Attributes, "dry_run"))
		return dps[0].Value
	}
	gauge := func(name string) float64 {
		dps := m[name].Data.(metricdata.Gauge[float64]).DataPoints
		require.Len(t, dps, 1, name)
		return dps[0].Value
	}
	assert.EqualValues(t, 15, sum("idemkey.sweep.scanned"))
	assert.EqualValues(t, 9, sum("idemkey.sweep.evicted"))
	assert.EqualValues(t, 1, sum("idemkey.sweep.reclaimed"))
	assert.EqualValues(t, 2, sum("idemkey.sweep.skipped"))
	assert.EqualValues(t, 1, sum("idemkey.sweep.errors"))
	assert.Equal(t, 30.0, gauge("idemkey.sweep.eviction_lag"), "the last run's lag")
	assert.Equal(t, "s", m["idemkey.sweep.eviction_lag"].Unit)
	assert.Equal(t, 0.0, gauge("idemkey.sweep.oldest_live_key_age"))
	assert.Equal(t, 2.0, gauge("idemkey.sweep.live_keys"))
}

// A multi-region store's decisions are counted by kind and regions,
// without the key or the scope.
func TestRoutingDecisionsAreCountedWithoutTheKey(t *testing.T) {
	obs, reader, _, _ := newObserver(t)
	observe := multiregion.ObserverFor(obs)
	for range 2 {
		observe(multiregion.Event{Kind: multiregion.EventFailover, Scope: "tenant-SECRET", Key: "key-SECRET", Home: "eu-west-1", Region: "eu-central-1", Err: errors.New("down")})
	}
	observe(multiregion.Event{Kind: multiregion.EventFailClosed, Scope: "tenant-SECRET", Key: "key-SECRET", Home: "eu-west-1", Region: "eu-west-1"})
	dps := collect(t, reader)["idemkey.multiregion.decisions"].Data.(metricdata.Sum[int64]).DataPoints
	got := map[string]int64{}
	for _, dp := range dps {
		assert.Equal(t, 3, dp.Attributes.Len())
		got[attr(dp.Attributes, "kind")+" "+attr(dp.Attributes, "home")+">"+attr(dp.Attributes, "region")] = dp.Value
	}
	assert.Equal(t, map[string]int64{"failover eu-west-1>eu-central-1": 2, "fail_closed eu-west-1>eu-west-1": 1}, got)

}

// Observe on a context whose span the Observer did not start (a parent's)
// counts the request and leaves that span alone.
func TestObserveWithoutStartLeavesTheParentSpanOpen(t *testing.T) {
	obs, reader, spans, tp := newObserver(t)
	ctx, parent := tp.Tracer("server").Start(context.Background(), "server")
	obs.Observe(ctx, idemkey.Event{Outcome: idemkey.OutcomeReplay, Mode: idemkey.ClaimFirst, FrontDoor: "http", Phases: idemkey.PhaseClaim})
	assert.Empty(t, spans.Ended(), "the parent is not ended")
	parent.End()
	require.Len(t, spans.Ended(), 1)
	dps := collect(t, reader)["idemkey.requests"].Data.(metricdata.Sum[int64]).DataPoints
	require.Len(t, dps, 1)
	assert.Equal(t, attribute.NewSet(attribute.String("outcome", "replay"), attribute.String("mode", "claim-first"),
		attribute.String("front_door", "http")), dps[0].Attributes)
}
