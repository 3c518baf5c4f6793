package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/tracing/smithyoteltracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/idemotel"
)

// telemetry is what -otel sets up: spans written to stdout as they end
// (one JSON object per span), idemkey's metrics written to stdout every
// interval and at exit (one line per data point), and the DynamoDB
// client's own spans (the SDK's tracing, through smithyoteltracing) nested under each request's idemkey.guard.
type telemetry struct {
	observer idemkey.Observer
	client   func(*dynamodb.Options) // instruments a DynamoDB client
	shutdown func(context.Context) error
}

func newTelemetry(w io.Writer, interval time.Duration) (*telemetry, error) {
	spans, err := stdouttrace.New(stdouttrace.WithWriter(w))
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	mp := metric.NewMeterProvider(metric.WithReader(metric.NewPeriodicReader(&metricLines{w: w}, metric.WithInterval(interval))))
	return &telemetry{
		observer: idemotel.New(func(o *idemotel.Options) { o.MeterProvider, o.TracerProvider = mp, tp }),
		client: func(o *dynamodb.Options) {
			o.TracerProvider = smithyoteltracing.Adapt(tp) // the SDK's own spans, one per call
		},
		shutdown: func(ctx context.Context) error { return errors.Join(mp.Shutdown(ctx), tp.Shutdown(ctx)) },
	}, nil
}

// metricLines is a metric exporter that writes each data point as a line:
// name{attributes} value, a histogram as its count and sum.
type metricLines struct {
	mu sync.Mutex
	w  io.Writer
}

func (*metricLines) Temporality(k metric.InstrumentKind) metricdata.Temporality {
	return metric.DefaultTemporalitySelector(k)
}

func (*metricLines) Aggregation(k metric.InstrumentKind) metric.Aggregation {
	return metric.DefaultAggregationSelector(k)
}

func (e *metricLines) Export(_ context.Context, rm *metricdata.ResourceMetrics) error {
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("%s{%s} %d", m.Name, labels(dp.Attributes.ToSlice()), dp.Value))
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("%s{%s} count=%d sum=%.6fs", m.Name, labels(dp.Attributes.ToSlice()), dp.Count, dp.Sum))
				}
			case metricdata.Gauge[float64]:
				for _, dp := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("%s{%s} %g", m.Name, labels(dp.Attributes.ToSlice()), dp.Value))
				}
			}
		}
	}
	sort.Strings(lines)
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, l := range lines {
		if _, err := fmt.Fprintln(e.w, "metric", l); err != nil {
			return err
		}
	}
	return nil
}

func (*metricLines) ForceFlush(context.Context) error { return nil }
func (*metricLines) Shutdown(context.Context) error   { return nil }

func labels(kvs []attribute.KeyValue) string {
	parts := make([]string, len(kvs))
	for i, kv := range kvs {
		parts[i] = string(kv.Key) + "=" + kv.Value.Emit()
	}
	return strings.Join(parts, ",")
}
