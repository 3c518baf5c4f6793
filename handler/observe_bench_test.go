package handler_test

import (
	"context"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
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
// and idemotel over the OpenTelemetry noop providers and over the SDK: its
// metrics on a manual reader, with tracing off (otel_sdk_metrics) or the
// SDK's tracing with the batch span processor in front of an exporter
// that drops what it gets, sampling a fraction of the requests
// (ParentBased(TraceIDRatioBased), otel_sdk_ratio_*) or every one
// (otel_sdk_always). The request has no incoming span, so the guard's
// span is a root and the ratio sampler decides on it. The difference to
// "none" is the observer's overhead; cpu-ns/op is the process's CPU time
// per request, which a loaded machine inflates less than ns/op.
func BenchmarkObserver(b *testing.B) {
	nop := idemkey.ObserverFunc(func(context.Context, idemkey.Event) {})
	otel := func(mp metric.MeterProvider, tp trace.TracerProvider) func() idemkey.Observer {
		return func() idemkey.Observer {
			return idemotel.New(func(o *idemotel.Options) { o.MeterProvider, o.TracerProvider = mp, tp })
		}
	}
	sdkMetrics := func() metric.MeterProvider {
		return sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	}
	sdkTracing := func(s sdktrace.Sampler) trace.TracerProvider {
		return sdktrace.NewTracerProvider(sdktrace.WithSampler(s), sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	}
	for _, c := range []struct {
		name string
		obs  func() idemkey.Observer
	}{
		{"none", func() idemkey.Observer { return nop }},
		{"log_default", func() idemkey.Observer { return nil }},
		{"otel_noop", otel(metricnoop.NewMeterProvider(), tracenoop.NewTracerProvider())},
		{"otel_sdk_metrics", otel(sdkMetrics(), tracenoop.NewTracerProvider())},
		{"otel_sdk_ratio_0.01", otel(sdkMetrics(), sdkTracing(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01))))},
		{"otel_sdk_ratio_0.1", otel(sdkMetrics(), sdkTracing(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1))))},
		{"otel_sdk_always", otel(sdkMetrics(), sdkTracing(sdktrace.AlwaysSample()))},
	} {
		b.Run(c.name, func(b *testing.B) {
			h := handler.New(dynamostore.New(&answered{}, "keys"), func(o *handler.Options) {
				o.SingleCaller = true
				o.Guard.Observer = c.obs()
			})(http.HandlerFunc(paymentHandler))
			b.ReportAllocs()
			start, i := processCPU(b), 0
			for b.Loop() {
				i++
				serve(b, h, fmt.Sprint("k", i))
			}
			b.ReportMetric(float64(processCPU(b)-start)/float64(i), "cpu-ns/op")
		})
	}
}

// processCPU is the process's CPU time so far (user and system).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
