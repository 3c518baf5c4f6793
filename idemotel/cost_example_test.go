package idemotel_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/idemotel"
	"github.com/idemkey/idemkey/localstack"
)

// guardedOrders returns a handler that creates orders, guarded over the
// embedded emulator (or AWS_ENDPOINT_URL_DYNAMODB) and observed by obs,
// and a function that closes the emulator.
func guardedOrders(obs idemkey.Observer) (http.Handler, func()) {
	ctx := context.Background()
	ep, err := localstack.Start(ctx)
	if err != nil {
		panic(err)
	}
	keys := localstack.TableName("example-keys")
	if err := dynamostore.EnsureTable(ctx, ep.Client, keys, 0); err != nil {
		panic(err)
	}
	idem := handler.New(dynamostore.New(ep.Client, keys), func(o *handler.Options) {
		o.SingleCaller = true
		o.Guard.Observer = obs
	})
	return idem(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) })), func() { _ = ep.Close() }
}

// postOrder sends a new order with key under ctx, the incoming request's
// context.
func postOrder(ctx context.Context, h http.Handler, key string) {
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/orders", strings.NewReader(`{"sku":"a"}`))
	req.Header.Set(handler.HeaderName, key)
	h.ServeHTTP(httptest.NewRecorder(), req)
}

// Metrics without traces: over the noop tracer, the Observer starts no
// span and records the request instruments only, the configuration whose
// cost per request stays under 2 µs (see BENCHMARKS.md).
func ExampleNew_metricsOnly() {
	reader := sdkmetric.NewManualReader()
	obs := idemotel.New(func(o *idemotel.Options) {
		o.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		o.TracerProvider = tracenoop.NewTracerProvider()
	})
	h, closeEmulator := guardedOrders(obs)
	defer closeEmulator()
	postOrder(context.Background(), h, "order-1")
	postOrder(context.Background(), h, "order-1")
	postOrder(context.Background(), h, "order-2")
	printRequests(reader)
	// Output:
	// idemkey.requests outcome=executed-stored front_door=http: 2
	// idemkey.requests outcome=replay front_door=http: 1
}

// Sampled traces: with the sampler ParentBased(TraceIDRatioBased(ratio)),
// the guard's span follows the decision made for the incoming request (by
// the HTTP instrumentation, here a remote parent), and a request whose
// span is dropped pays for none of its attributes. The counts stay exact:
// every request is counted, sampled or not.
func ExampleNew_sampling() {
	reader, spans := sdkmetric.NewManualReader(), tracetest.NewSpanRecorder()
	obs := idemotel.New(func(o *idemotel.Options) {
		o.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		o.TracerProvider = sdktrace.NewTracerProvider(
			sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1))),
			sdktrace.WithSpanProcessor(spans)) // in production: sdktrace.WithBatcher(exporter)
	})
	h, closeEmulator := guardedOrders(obs)
	defer closeEmulator()
	incoming := func(traceID byte, sampled bool) context.Context {
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{traceID}, SpanID: trace.SpanID{1}, Remote: true})
		if sampled {
			sc = sc.WithTraceFlags(trace.FlagsSampled)
		}
		return trace.ContextWithRemoteSpanContext(context.Background(), sc)
	}
	postOrder(incoming(1, true), h, "order-1")
	postOrder(incoming(2, false), h, "order-2")
	postOrder(incoming(3, false), h, "order-3")
	printRequests(reader)
	for _, s := range spans.Ended() {
		fmt.Println(s.Name(), "in trace", s.SpanContext().TraceID())
	}
	// Output:
	// idemkey.requests outcome=executed-stored front_door=http: 3
	// idemkey.guard in trace 01000000000000000000000000000000
}
