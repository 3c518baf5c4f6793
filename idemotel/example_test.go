package idemotel_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/idemotel"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/multiregion"
)

// printRequests prints the idemkey.requests counter of reader, one line per
// attribute set, sorted.
func printRequests(reader *sdkmetric.ManualReader) {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, dp := range sum.DataPoints {
					outcome, _ := dp.Attributes.Value("outcome")
					door, _ := dp.Attributes.Value("front_door")
					lines = append(lines, fmt.Sprintf("%s outcome=%s front_door=%s: %d", m.Name, outcome.Emit(), door.Emit(), dp.Value))
				}
			}
		}
	}
	slices.Sort(lines) // data points come in no fixed order
	fmt.Println(strings.Join(lines, "\n"))
}

// The OpenTelemetry observer of a guarded handler: a request sent twice is
// one execution and one replay, counted by outcome, each with its span.
// The application's providers come in through the options (without them,
// the global ones).
func ExampleNew() {
	ctx := context.Background()
	ep, err := localstack.Start(ctx)
	if err != nil {
		panic(err)
	}
	defer ep.Close()
	keys := localstack.TableName("example-keys")
	if err := dynamostore.EnsureTable(ctx, ep.Client, keys, 0); err != nil {
		panic(err)
	}

	reader, spans := sdkmetric.NewManualReader(), tracetest.NewSpanRecorder()
	obs := idemotel.New(func(o *idemotel.Options) {
		o.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	})
	idem := handler.New(dynamostore.New(ep.Client, keys), func(o *handler.Options) {
		o.SingleCaller = true
		o.Guard.Observer = idemkey.Observers(obs, handler.LogObserver(nil))
	})
	h := idem(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	for range 2 {
		req := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"sku":"a"}`))
		req.Header.Set(handler.HeaderName, "order-1")
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	printRequests(reader)
	for _, s := range spans.Ended() {
		var events []string
		for _, e := range s.Events() {
			events = append(events, e.Name)
		}
		fmt.Println(s.Name(), events)
	}
	// Output:
	// idemkey.requests outcome=executed-stored front_door=http: 1
	// idemkey.requests outcome=replay front_door=http: 1
	// idemkey.guard [claim commit]
	// idemkey.guard [claim]
}

// A sweeper's report (from dynamostore.Sweeper, or the scheduled sweeper's
// function) becomes the idemkey.sweep instruments.
func ExampleObserver_RecordSweep() {
	reader := sdkmetric.NewManualReader()
	obs := idemotel.New(func(o *idemotel.Options) {
		o.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	})
	obs.RecordSweep(context.Background(), &dynamostore.SweepReport{Table: "idemkey-keys", Scanned: 120, Evicted: 40, EvictionLag: 90 * time.Second})

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			fmt.Println(m.Name, d.DataPoints[0].Value)
		case metricdata.Gauge[float64]:
			fmt.Println(m.Name, d.DataPoints[0].Value, m.Unit)
		}
	}
	// Output:
	// idemkey.sweep.scanned 120
	// idemkey.sweep.evicted 40
	// idemkey.sweep.reclaimed 0
	// idemkey.sweep.skipped 0
	// idemkey.sweep.errors 0
	// idemkey.sweep.eviction_lag 90 s
	// idemkey.sweep.oldest_live_key_age 0 s
	// idemkey.sweep.live_keys 0 {key}
}

// A multi-region store's routing decisions reach the same Observer through
// multiregion.ObserverFor, as the counter idemkey.multiregion.decisions.
func ExampleObserver_ObserveRouting() {
	reader := sdkmetric.NewManualReader()
	obs := idemotel.New(func(o *idemotel.Options) {
		o.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	})
	opts := multiregion.Options{Observer: multiregion.ObserverFor(obs)} // with the store's other options
	opts.Observer(multiregion.Event{Kind: multiregion.EventFailover, Home: "eu-west-1", Region: "eu-central-1"})

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	m := rm.ScopeMetrics[0].Metrics[0]
	dp := m.Data.(metricdata.Sum[int64]).DataPoints[0]
	kind, _ := dp.Attributes.Value("kind")
	fmt.Println(m.Name, kind.Emit(), dp.Value)
	// Output:
	// idemkey.multiregion.decisions failover 1
}
