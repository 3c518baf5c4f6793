package handler_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/txn"
)

// The latency benchmark's network: every DynamoDB call takes
// latencyBase ± latencyJitter (uniform, seeded), the emulator's time to
// answer included, as DynamoDB's own service time is part of a real round
// trip.
const (
	latencyBase    = 4 * time.Millisecond
	latencyJitter  = time.Millisecond
	latencySeed    = 16
	latencyClients = 16
)

// BenchmarkLatency is the load run of the round-trip benchmark:
// latencyClients goroutines send b.N requests in all (a fresh
// Idempotency-Key each, or for the replays the key of an earlier
// execution) to one handler, over the embedded emulator behind a seeded
// per-call latency (localstack.Latency). It reports the p50 and p99
// end-to-end latency (ServeHTTP, in process) divided by the configured
// per-call latency: p50_rtt and p99_rtt.
//
// Cases: floor, an unguarded handler that writes its effect with one
// PutItem (one round trip, the physical limit of a write); claim_first and
// one_trip, first executions staging that effect; replay, a repeat of an
// executed key (no cache); replay_cached, the same from the Guard's cache.
//
// The clients call the embedded emulator in process (no loopback socket:
// localstack.Options.InProcess), and what remains of each call's
// round-trip time once the emulator has answered is spent in the client,
// outside the emulator's lock, so calls of different clients overlap as
// they would on the network. The emulator's CPU time still shares the
// machine's cores with the clients'. The endpoint is always the embedded
// emulator: the clients of a loopback external endpoint send one request
// at a time, which would queue the latency itself. Run with -benchtime Nx
// (N requests per case).
func BenchmarkLatency(b *testing.B) {
	cases := []struct {
		name   string
		guard  bool
		mode   idemkey.Mode
		replay bool
		cache  bool
	}{
		{name: "floor"},
		{name: "claim_first", guard: true, mode: idemkey.ClaimFirst},
		{name: "one_trip", guard: true, mode: idemkey.OneTrip},
		{name: "replay", guard: true, mode: idemkey.ClaimFirst, replay: true},
		{name: "replay_cached", guard: true, mode: idemkey.ClaimFirst, replay: true, cache: true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ep := localstack.ForTest(b, func(o *localstack.Options) {
				o.Embedded = true
				o.InProcess = true
				o.Latency = &localstack.Latency{Base: latencyBase, Jitter: latencyJitter, Seed: latencySeed}
			})
			keys, payments := localstack.TableName("keys"), localstack.TableName("payments")
			if err := dynamostore.EnsureTable(context.Background(), ep.Client, keys, 0); err != nil {
				b.Fatal(err)
			}
			ddbtest.DeleteOnCleanup(b, ep.Client, keys)
			ddbtest.CreateTable(b, ep.Client, payments, "id")

			var h http.Handler
			if !c.guard {
				h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, err := ep.Client.PutItem(r.Context(), &dynamodb.PutItemInput{
						TableName: &payments, Item: paymentItem(r), ConditionExpression: aws.String("attribute_not_exists(id)"),
					})
					if err != nil {
						http.Error(w, err.Error(), http.StatusServiceUnavailable)
						return
					}
					writePayment(w)
				})
			} else {
				var cache *idemkey.Cache
				if c.cache {
					cache = idemkey.NewCache(2*b.N+16, time.Hour)
				}
				h = handler.New(dynamostore.New(ep.Client, keys), func(o *handler.Options) {
					o.SingleCaller = true // one benchmark client
					o.Guard.Mode = c.mode
					o.Guard.Cache = cache
				})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					tx, _ := txn.FromContext(r.Context())
					tx.Put(types.Put{TableName: &payments, Item: paymentItem(r), ConditionExpression: aws.String("attribute_not_exists(id)")})
					writePayment(w)
				}))
			}
			if c.replay {
				loadRun(b, h, b.N) // the executions to replay, untimed
			}
			b.ResetTimer()
			lat := loadRun(b, h, b.N)
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(percentile(lat, 0.50))/float64(latencyBase), "p50_rtt")
			b.ReportMetric(float64(percentile(lat, 0.99))/float64(latencyBase), "p99_rtt")
		})
	}
}

// loadRun sends requests with keys lk0 … lk(n-1) to h from latencyClients
// goroutines and returns each request's latency. Any answer but 201 fails
// b.
func loadRun(b *testing.B, h http.Handler, n int) []time.Duration {
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range latencyClients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				req := serverRequest(paymentsURL, fmt.Sprint("lk", i))
				rec := httptest.NewRecorder()
				start := time.Now()
				h.ServeHTTP(rec, req)
				lat[i] = time.Since(start)
				if rec.Code != http.StatusCreated {
					b.Errorf("request %d: status %d: %s", i, rec.Code, rec.Body)
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return lat
}

// paymentsURL is the URL of the requests loadRun sends.
var paymentsURL = &url.URL{Path: "/payments"}

// serverRequest returns a POST of benchBody to u with Idempotency-Key
// key, as net/http's server hands it to a handler. httptest.NewRequest
// would parse it from text with a fresh 4 KiB bufio.Reader each time,
// garbage that a server, which reuses its readers, does not make.
func serverRequest(u *url.URL, key string) *http.Request {
	return &http.Request{
		Method: http.MethodPost, URL: u, RequestURI: u.Path, Host: "example.com",
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, RemoteAddr: "192.0.2.1:1234",
		Header:        http.Header{handler.HeaderName: {key}, "Content-Type": {"application/json"}},
		Body:          io.NopCloser(strings.NewReader(benchBody)),
		ContentLength: int64(len(benchBody)),
	}
}

// percentile returns the q-quantile of sorted (nearest rank).
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*q+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// paymentItem is the effect of the latency benchmark's handler: one item
// named after the request's key.
func paymentItem(r *http.Request) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"id":     &types.AttributeValueMemberS{Value: "pay_" + r.Header.Get(handler.HeaderName)},
		"amount": &types.AttributeValueMemberN{Value: "1250"},
	}
}

func writePayment(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte(`{"id":"pay_1","amount":1250,"currency":"EUR"}`))
}
