package idemotel_test

import (
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/idemotel"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/keyschema"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/txn"
)

// rig is a payments-like service guarded by package handler over a real
// DynamoDB endpoint, observed by an idemotel.Observer backed by the SDK's
// in-memory reader and span recorder. Its routes produce every outcome.
type rig struct {
	t       *testing.T
	client  *dynamodb.Client
	faulty  *ddbtest.Faulty
	clock   *ddbtest.Clock
	keys    string
	effects string
	reader  *sdkmetric.ManualReader
	spans   *tracetest.SpanRecorder
	tp      *sdktrace.TracerProvider
	obs     *idemotel.Observer

	started chan struct{} // a blocking request began
	gate    chan struct{} // a blocking request goes on
}

// secret values the hygiene test looks for everywhere.
const (
	secretToken = "Bearer tok-SECRET-0815"
	secretCard  = "4111111111111111"
)

func newRig(t *testing.T) *rig {
	t.Helper()
	ep := localstack.ForTest(t)
	r := &rig{t: t, client: ep.Client, clock: ddbtest.NewClock(time.Unix(1_800_000_000, 0)),
		reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	r.faulty = ddbtest.NewFaulty(ep.NewClient())
	r.keys, r.effects = localstack.TableName("otel-keys"), localstack.TableName("otel-effects")
	require.NoError(t, dynamostore.EnsureTable(context.Background(), ep.Client, r.keys, 0))
	ddbtest.DeleteOnCleanup(t, ep.Client, r.keys)
	ddbtest.CreateTable(t, ep.Client, r.effects, "id")
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	r.obs = idemotel.New(func(o *idemotel.Options) { o.MeterProvider, o.TracerProvider = mp, r.tp })
	return r
}

func (r *rig) store(table string) *dynamostore.Store {
	return dynamostore.New(r.faulty, table, func(o *dynamostore.Options) {
		o.Now, o.Lease, o.Retention = r.clock.Now, time.Minute, time.Hour
	})
}

// withoutUnkeyed hides the store's CommitStaged, as a store that commits
// staged writes only with a key does.
type withoutUnkeyed struct{ idemkey.Store }

// routes returns the service; mw makes the middleware of a store with the
// observer and the extra Guard options given.
func (r *rig) routes(mw func(idemkey.Store, func(*idemkey.Options)) func(http.Handler) http.Handler) http.Handler {
	main := mw(r.store(r.keys), nil)
	cached := mw(r.store(r.keys), func(g *idemkey.Options) { g.Cache = idemkey.NewCache(10, time.Minute) })
	missing := mw(r.store(localstack.TableName("absent")), nil)
	unsupported := mw(withoutUnkeyed{r.store(r.keys)}, nil)

	mux := http.NewServeMux()
	mux.Handle("POST /payments", main(r.create(true)))
	mux.Handle("POST /slow", main(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("X-Block") != "" {
			r.started <- struct{}{}
			<-r.gate
		}
		r.create(true).ServeHTTP(w, req)
	})))
	mux.Handle("POST /conflict", main(r.create(false)))
	mux.Handle("POST /fail", main(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	})))
	mux.Handle("POST /cached", cached(r.create(true)))
	mux.Handle("POST /missing", missing(r.create(true)))
	mux.Handle("GET /unkeyed", main(r.create(true)))
	mux.Handle("GET /unsupported", unsupported(r.create(true)))
	return mux
}

// create stages one effect item, which must not exist (ok) or must
// already exist (!ok: its condition fails), in a span of its own.
func (r *rig) create(ok bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, span := r.tp.Tracer("service").Start(req.Context(), "charge")
		defer span.End()
		_, _ = io.Copy(io.Discard, req.Body)
		cond := "attribute_not_exists(id)"
		if !ok {
			cond = "attribute_exists(id)"
		}
		tx, _ := txn.FromContext(req.Context())
		tx.Put(types.Put{TableName: aws.String(r.effects), Item: map[string]types.AttributeValue{
			"id": &types.AttributeValueMemberS{Value: rand.Text()},
		}, ConditionExpression: aws.String(cond)})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"ok":true}`)
	})
}

// call is one request to send.
type call struct {
	method, path, key, body string
	token                   string // Authorization, the scope
	block                   bool
}

// send delivers a call through a front door and returns the status.
type send func(ctx context.Context, c call) int

// drive sends, through snd, requests that produce every outcome, and
// returns the outcomes in the order the requests were answered, with the
// number of requests sent.
func (r *rig) drive(snd send) int {
	t := r.t
	r.started, r.gate = make(chan struct{}), make(chan struct{})
	ctx := context.Background()
	body := `{"amount":1250,"card":"` + secretCard + `"}`
	pay := func(path, key, b string) call {
		return call{method: http.MethodPost, path: path, key: key, body: b, token: secretToken}
	}
	sent := 0
	expect := func(c call, status int) {
		t.Helper()
		sent++
		require.Equal(t, status, snd(ctx, c), "%s %s key %q", c.method, c.path, c.key)
	}

	expect(pay("/payments", "key-SECRET-1", body), http.StatusCreated)                       // executed-stored
	expect(pay("/payments", "key-SECRET-1", body), http.StatusCreated)                       // replay
	expect(pay("/payments", "key-SECRET-1", `{"amount":9}`), http.StatusUnprocessableEntity) // mismatch
	expect(pay("/cached", "key-SECRET-2", body), http.StatusCreated)                         // executed-stored
	expect(pay("/cached", "key-SECRET-2", body), http.StatusCreated)                         // replay-from-cache
	expect(pay("/fail", "key-SECRET-3", body), http.StatusInternalServerError)               // executed-released
	expect(pay("/conflict", "key-SECRET-4", body), http.StatusConflict)                      // effect-condition-failed
	expect(pay("/missing", "key-SECRET-5", body), http.StatusInternalServerError)            // permanent
	long := pay("/payments", "key-SECRET-6", body)
	long.token = secretToken + strings.Repeat("x", dynamostore.MaxScopeBytes)
	expect(long, http.StatusBadRequest) // invalid

	_, err := r.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &r.keys, Item: map[string]types.AttributeValue{
		"pk":  &types.AttributeValueMemberS{Value: keyschema.PartitionKey(secretToken, "key-SECRET-7")},
		"exp": &types.AttributeValueMemberN{Value: "99999999999"},
		"fp":  &types.AttributeValueMemberS{Value: "not bytes"},
	}})
	require.NoError(t, err)
	expect(pay("/payments", "key-SECRET-7", body), http.StatusInternalServerError) // corrupt-record

	r.faulty.Plan("PutItem", ddbtest.FailBefore)
	expect(pay("/payments", "key-SECRET-8", body), http.StatusServiceUnavailable) // unavailable

	// In flight: a second copy while the first waits in the handler.
	first := pay("/slow", "key-SECRET-9", body)
	first.block = true
	done := make(chan int)
	go func() { done <- snd(ctx, first) }()
	<-r.started
	expect(pay("/slow", "key-SECRET-9", body), http.StatusConflict) // in-flight
	r.gate <- struct{}{}
	sent++
	require.Equal(t, http.StatusCreated, <-done) // executed-stored

	// Lock lost: the first copy's lease runs out and a second takes over.
	go func() { done <- snd(ctx, first.withKey("key-SECRET-10")) }()
	<-r.started
	r.clock.Advance(2 * time.Minute)
	expect(pay("/slow", "key-SECRET-10", body), http.StatusCreated) // executed-stored
	r.gate <- struct{}{}
	sent++
	require.Equal(t, http.StatusConflict, <-done) // lock-lost

	expect(call{method: http.MethodGet, path: "/unkeyed", token: secretToken}, http.StatusCreated)                 // unkeyed-committed
	expect(call{method: http.MethodGet, path: "/unsupported", token: secretToken}, http.StatusInternalServerError) // error
	return sent
}

func (c call) withKey(key string) call { c.key = key; return c }

// request builds the *http.Request of c.
func (c call) request(ctx context.Context, base string) *http.Request {
	req, err := http.NewRequestWithContext(ctx, c.method, base+c.path, strings.NewReader(c.body))
	if err != nil {
		panic(err)
	}
	if c.key != "" {
		req.Header.Set(handler.HeaderName, c.key)
	}
	if c.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", c.token)
	if c.block {
		req.Header.Set("X-Block", "1")
	}
	return req
}

// scope is the rig's scope rule: the caller's token.
func scope(r *http.Request) (string, error) { return r.Header.Get("Authorization"), nil }

// metrics collects the reader's metrics by name.
func (r *rig) metrics() map[string]metricdata.Metrics {
	var rm metricdata.ResourceMetrics
	require.NoError(r.t, r.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// serverSpan starts the span of an incoming request, as otelhttp or a
// Lambda instrumentation would.
func (r *rig) serverSpan(ctx context.Context, name string) (context.Context, trace.Span) {
	return r.tp.Tracer("server").Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer))
}
