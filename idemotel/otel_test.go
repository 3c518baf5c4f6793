package idemotel_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/internal/emf"
	idemlambda "github.com/idemkey/idemkey/lambda"
)

// wantOutcomes is what rig.drive produces: requests by outcome and mode.
var wantOutcomes = map[string]int64{
	"executed-stored/claim-first":         4,
	"replay/claim-first":                  1,
	"mismatch/claim-first":                1,
	"replay-from-cache/claim-first":       1,
	"executed-released/claim-first":       1,
	"effect-condition-failed/claim-first": 1,
	"permanent/claim-first":               1,
	"invalid/claim-first":                 1,
	"corrupt-record/claim-first":          1,
	"unavailable/claim-first":             1,
	"in-flight/claim-first":               1,
	"lock-lost/claim-first":               1,
	"unkeyed-committed/unkeyed":           1,
	"error/unkeyed":                       1,
}

// wantEvents are the span events of each outcome's idemkey.guard span.
var wantEvents = map[string][]string{
	"executed-stored": {"claim", "commit"}, "replay": {"claim"}, "mismatch": {"claim"},
	"replay-from-cache": {"claim"}, "executed-released": {"claim"}, "effect-condition-failed": {"claim", "commit"},
	"permanent": {"claim"}, "invalid": {"claim"}, "corrupt-record": {"claim"}, "unavailable": {"claim"},
	"in-flight": {"claim"}, "lock-lost": {"claim", "commit"}, "unkeyed-committed": {"commit"}, "error": nil,
}

// wantError are the outcomes whose span has an Error status.
var wantError = []string{"effect-condition-failed", "permanent", "corrupt-record", "unavailable", "lock-lost", "error"}

func attr(set attribute.Set, name string) string {
	v, _ := set.Value(attribute.Key(name))
	return v.Emit()
}

// assertObserved checks the metrics and spans of one rig.drive through
// frontDoor, which sent sent requests.
func assertObserved(t *testing.T, r *rig, frontDoor string, sent int) {
	t.Helper()
	m := r.metrics()

	requests := m["idemkey.requests"].Data.(metricdata.Sum[int64])
	assert.True(t, requests.IsMonotonic)
	got := map[string]int64{}
	var total int64
	for _, dp := range requests.DataPoints {
		assert.Equal(t, frontDoor, attr(dp.Attributes, "front_door"))
		key := attr(dp.Attributes, "outcome") + "/" + attr(dp.Attributes, "mode")
		got[key] += dp.Value
		total += dp.Value
		wantLen := 3
		if attr(dp.Attributes, "outcome") == "permanent" {
			assert.Equal(t, "missing-table", attr(dp.Attributes, "class"))
			wantLen = 4
		}
		assert.Equal(t, wantLen, dp.Attributes.Len(), "attributes of %s", key)
	}
	assert.Equal(t, wantOutcomes, got)
	assert.EqualValues(t, sent, total, "one count per request")

	histCount := func(name string) uint64 {
		var n uint64
		for _, dp := range m[name].Data.(metricdata.Histogram[float64]).DataPoints {
			n += dp.Count
		}
		assert.Equal(t, "s", m[name].Unit, name)
		return n
	}
	assert.EqualValues(t, sent-2, histCount("idemkey.claim.duration"), "every keyed request claims (or looks in the cache)")
	assert.EqualValues(t, 7, histCount("idemkey.run.duration"), "4 stored, 1 released, 1 condition failed, 1 lock lost")
	assert.EqualValues(t, 7, histCount("idemkey.commit.duration"), "4 stored, 1 condition failed, 1 lock lost, 1 unkeyed")

	spans := r.spans.Ended()
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
	}
	guards, childrenOfGuards, charges := 0, 0, 0
	for _, s := range spans {
		switch s.Name() {
		case "idemkey.guard":
			guards++
			parent, ok := byID[s.Parent().SpanID()]
			require.True(t, ok, "the guard span's parent was recorded")
			assert.Equal(t, trace.SpanKindServer, parent.SpanKind(), "child of the incoming request's span")
			assert.Equal(t, parent.SpanContext().TraceID(), s.SpanContext().TraceID())
			assert.Equal(t, trace.SpanKindInternal, s.SpanKind())
			attrs := attribute.NewSet(s.Attributes()...)
			outcome := attr(attrs, "idemkey.outcome")
			assert.Equal(t, frontDoor, attr(attrs, "idemkey.front_door"))
			var names []string
			for _, e := range s.Events() {
				names = append(names, e.Name)
				assert.False(t, e.Time.Before(s.StartTime()) || e.Time.After(s.EndTime()), "event %s within the span", e.Name)
			}
			assert.Equal(t, wantEvents[outcome], names, "events of %s", outcome)
			if slices.Contains(wantError, outcome) {
				assert.Equal(t, codes.Error, s.Status().Code, outcome)
				assert.NotEmpty(t, attr(attrs, "error.type"), outcome)
			} else {
				assert.Equal(t, codes.Unset, s.Status().Code, outcome)
			}
			switch outcome {
			case "executed-stored":
				assert.Equal(t, "2", attr(attrs, "idemkey.store_calls"), "claim and commit")
				assert.Equal(t, "1", attr(attrs, "idemkey.staged_actions"))
				assert.Equal(t, "201", attr(attrs, "idemkey.status"))
				assert.Len(t, attr(attrs, "idemkey.key_hash"), 16)
			case "replay":
				assert.Equal(t, "1", attr(attrs, "idemkey.store_calls"))
			case "replay-from-cache":
				assert.Equal(t, "0", attr(attrs, "idemkey.store_calls"))
			case "permanent":
				assert.Equal(t, "missing-table", attr(attrs, "error.type"))
			}
		case "charge":
			charges++
			if p, ok := byID[s.Parent().SpanID()]; ok && p.Name() == "idemkey.guard" {
				childrenOfGuards++
			}
		}
	}
	assert.Equal(t, sent, guards, "one idemkey.guard span per request")
	assert.Equal(t, 8, charges)
	assert.Equal(t, 6, childrenOfGuards, "a guarded handler's spans nest under idemkey.guard; an unkeyed one's do not")
	assertNoSecrets(t, r)
}

// assertNoSecrets looks for the key, the body, the scope and the
// Authorization value in every metric attribute, span attribute, span
// event and status.
func assertNoSecrets(t *testing.T, r *rig) {
	t.Helper()
	var seen []string
	addSet := func(set attribute.Set) {
		for _, kv := range set.ToSlice() {
			seen = append(seen, string(kv.Key)+"="+kv.Value.Emit())
		}
	}
	for _, m := range r.metrics() {
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, dp := range d.DataPoints {
				addSet(dp.Attributes)
			}
		case metricdata.Histogram[float64]:
			for _, dp := range d.DataPoints {
				addSet(dp.Attributes)
			}
		case metricdata.Gauge[float64]:
			for _, dp := range d.DataPoints {
				addSet(dp.Attributes)
			}
		}
	}
	for _, s := range r.spans.Ended() {
		seen = append(seen, s.Name(), s.Status().Description)
		addSet(attribute.NewSet(s.Attributes()...))
		for _, e := range s.Events() {
			seen = append(seen, e.Name)
			addSet(attribute.NewSet(e.Attributes...))
		}
	}
	require.NotEmpty(t, seen)
	all := strings.Join(seen, "\n")
	for _, secret := range []string{"SECRET", secretCard, "tok-", "amount"} {
		assert.NotContains(t, all, secret)
	}
}

// Every outcome through package handler's middleware behind net/http:
// exact counts by outcome and mode, a span per request under the
// incoming request's span, with its events and status.
func TestEveryOutcomeIsCountedAndTracedThroughTheHTTPMiddleware(t *testing.T) {
	r := newRig(t)
	mux := r.routes(func(s idemkey.Store, extra func(*idemkey.Options)) func(http.Handler) http.Handler {
		return handler.New(s, func(o *handler.Options) {
			o.Scope = scope
			o.Guard.Observer = r.obs
			if extra != nil {
				extra(&o.Guard)
			}
		})
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx, span := r.serverSpan(req.Context(), req.Method+" "+req.URL.Path)
		defer span.End()
		mux.ServeHTTP(w, req.WithContext(ctx))
	}))
	defer srv.Close()
	sent := r.drive(func(ctx context.Context, c call) int {
		resp, err := http.DefaultClient.Do(c.request(ctx, srv.URL))
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	})
	assertObserved(t, r, idemkey.FrontDoorHTTP, sent)
}

// Every outcome through the API Gateway HTTP API front door, with
// idemlambda.Metrics beside the OpenTelemetry observer: the same counts
// and spans, and one valid EMF line per invocation.
func TestEveryOutcomeIsCountedAndTracedThroughTheLambdaFrontDoor(t *testing.T) {
	r := newRig(t)
	var lines bytes.Buffer
	metrics := idemlambda.NewMetrics(&lines, func(o *idemlambda.MetricsOptions) { o.FunctionName = "payments" })
	mux := r.routes(func(s idemkey.Store, extra func(*idemkey.Options)) func(http.Handler) http.Handler {
		return idemlambda.Middleware(s, func(o *idemlambda.MiddlewareOptions) {
			o.Handler.Scope = scope
			o.Handler.Guard.Observer = idemkey.Observers(r.obs, metrics)
			if extra != nil {
				extra(&o.Handler.Guard)
			}
		})
	})
	fn := idemlambda.NewAPIGatewayV2(mux)
	sent := r.drive(func(ctx context.Context, c call) int {
		req := c.request(ctx, "")
		headers := map[string]string{}
		for name := range req.Header {
			headers[strings.ToLower(name)] = req.Header.Get(name)
		}
		ctx, span := r.serverSpan(ctx, "lambda invoke")
		defer span.End()
		resp, err := fn(ctx, events.APIGatewayV2HTTPRequest{
			RawPath: c.path, Headers: headers, Body: c.body,
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: c.method, Path: c.path}},
		})
		require.NoError(t, err)
		return resp.StatusCode
	})
	assertObserved(t, r, idemkey.FrontDoorLambdaAPIGWv2, sent)

	var n int
	sums := map[string]float64{}
	sc := bufio.NewScanner(&lines)
	for sc.Scan() {
		n++
		require.NoError(t, emf.Validate(sc.Bytes()), sc.Text())
		var doc map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &doc))
		assert.Equal(t, "payments", doc["FunctionName"])
		assert.Equal(t, idemkey.FrontDoorLambdaAPIGWv2, doc["FrontDoor"])
		assert.EqualValues(t, 1, doc["Requests"], "one request per HTTP invocation")
		for _, name := range []string{"ExecutedStored", "Replay", "InFlight", "Mismatch", "LockLost", "Unavailable", "Permanent", "UnkeyedCommitted", "Error"} {
			sums[name] += doc[name].(float64)
		}
		assert.NotContains(t, sc.Text(), "SECRET")
	}
	assert.Equal(t, sent, n, "one EMF line per invocation")
	assert.Equal(t, map[string]float64{"ExecutedStored": 4, "Replay": 1, "InFlight": 1, "Mismatch": 1, "LockLost": 1,
		"Unavailable": 1, "Permanent": 1, "UnkeyedCommitted": 1, "Error": 1}, sums)
}
