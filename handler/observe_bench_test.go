package handler_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/idemotel"
)

// BenchmarkObserver measures what an Observer costs per guarded request:
// first executions (claim, run, commit) through the middleware, DynamoDB
// answered in process, with no Observer at all (a nop function, so that
// the default logging is out of the way too), the default LogObserver,
// and idemotel over the OpenTelemetry noop providers and over the SDK (a
// manual metric reader, every span sampled and batched for an exporter
// that drops it). The
// difference to "none" is the observer's overhead.
func BenchmarkObserver(b *testing.B) {
	nop := idemkey.ObserverFunc(func(context.Context, idemkey.Event) {})
	sdk := func() idemkey.Observer {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		return idemotel.New(func(o *idemotel.Options) { o.MeterProvider, o.TracerProvider = mp, tp })
	}
	for _, c := range []struct {
		name string
		obs  func() idemkey.Observer
	}{
		{"none", func() idemkey.Observer { return nop }},
		{"log_default", func() idemkey.Observer { return nil }},
		{"otel_noop", func() idemkey.Observer {
			return idemotel.New(func(o *idemotel.Options) {
				o.MeterProvider, o.TracerProvider = metricnoop.NewMeterProvider(), tracenoop.NewTracerProvider()
			})
		}},
		{"otel_sdk", sdk},
	} {
		b.Run(c.name, func(b *testing.B) {
			h := handler.New(dynamostore.New(&answered{}, "keys"), func(o *handler.Options) {
				o.SingleCaller = true
				o.Guard.Observer = c.obs()
			})(http.HandlerFunc(paymentHandler))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				serve(b, h, fmt.Sprint("k", i))
			}
		})
	}
}
