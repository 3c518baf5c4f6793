package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/client"
	"github.com/idemkey/idemkey/examples/payments/paymentsapi"
	"github.com/idemkey/idemkey/localstack"
)

// The tests below run the client against the real payments API, guarded by
// idemkey over DynamoDB, with a faulty network in between.

// fault is what the network does to one request.
type fault int

const (
	deliver     fault = iota // forward the request and its response
	lose                     // forward; the server executes; the response is lost (the ambiguous outcome)
	hold                     // forward; the server executes; the response never arrives before the attempt times out
	unavailable              // answer 503 from the proxy without forwarding
	detach                   // forward in the background and fail at once, while the server still runs it
)

func (f fault) String() string {
	return [...]string{"deliver", "lose", "hold", "unavailable", "detach"}[f]
}

// exchange is a response the server sent.
type exchange struct {
	status int
	header http.Header
	body   []byte
}

// network sits between the client's Transport and the server: the n-th
// request that crosses it (from 1) suffers plan(n).
type network struct {
	base http.RoundTripper
	plan func(n int) fault

	mu       sync.Mutex
	n        int
	lost     []exchange // responses the server sent and the client never saw
	detached sync.WaitGroup
}

func (nw *network) RoundTrip(req *http.Request) (*http.Response, error) {
	nw.mu.Lock()
	nw.n++
	n := nw.n
	nw.mu.Unlock()
	f := nw.plan(n)
	switch f {
	case lose, hold:
		// The server's work is not bound to the attempt's timeout: it
		// completes, and then the response goes missing.
		ex, err := nw.forward(req.Clone(context.WithoutCancel(req.Context())))
		if err != nil {
			return nil, err
		}
		nw.keep(ex)
		if f == hold {
			<-req.Context().Done()
			return nil, req.Context().Err()
		}
		return nil, errors.New("network: connection reset after the request was delivered")
	case unavailable:
		if req.Body != nil {
			_ = req.Body.Close()
		}
		body := `{"title":"proxy overloaded","status":503}`
		return &http.Response{
			Status: "503 Service Unavailable", StatusCode: 503, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header:        http.Header{"Retry-After": {"1"}, "Content-Type": {"application/problem+json"}},
			Body:          io.NopCloser(strings.NewReader(body)),
			ContentLength: int64(len(body)), Request: req,
		}, nil
	case detach:
		nw.detached.Add(1)
		started := make(chan struct{})
		go func() {
			defer nw.detached.Done()
			close(started)
			if ex, err := nw.forward(req.Clone(context.WithoutCancel(req.Context()))); err == nil {
				nw.keep(ex)
			}
		}()
		<-started
		return nil, errors.New("network: connection reset while the request is in flight")
	default:
		return nw.base.RoundTrip(req)
	}
}

func (nw *network) forward(req *http.Request) (exchange, error) {
	resp, err := nw.base.RoundTrip(req)
	if err != nil {
		return exchange{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return exchange{}, err
	}
	return exchange{status: resp.StatusCode, header: resp.Header, body: body}, nil
}

func (nw *network) keep(ex exchange) {
	nw.mu.Lock()
	nw.lost = append(nw.lost, ex)
	nw.mu.Unlock()
}

// requests returns how many requests entered the network.
func (nw *network) requests() int {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	return nw.n
}

func (nw *network) lostResponses() []exchange {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	return append([]exchange(nil), nw.lost...)
}

// commitGate holds the payments API's first commit (its first
// TransactWriteItems) until opened: SDK middleware on the real client.
type commitGate struct {
	reached, release chan struct{}
	first            atomic.Bool
	opened           sync.Once
}

func newCommitGate() *commitGate {
	return &commitGate{reached: make(chan struct{}), release: make(chan struct{})}
}

// open lets the held commit proceed; it may be called more than once.
func (g *commitGate) open() { g.opened.Do(func() { close(g.release) }) }

func (g *commitGate) install(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("testCommitGate",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if awsmiddleware.GetOperationName(ctx) == "TransactWriteItems" && g.first.CompareAndSwap(false, true) {
					close(g.reached)
					<-g.release
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	})
}

// paymentsServer serves the payments API over the test DynamoDB endpoint;
// optFns configure the API's DynamoDB client.
func paymentsServer(t *testing.T, optFns ...func(*dynamodb.Options)) *httptest.Server {
	t.Helper()
	ep := localstack.ForTest(t)
	cfg := paymentsapi.Config{
		KeyTable: localstack.TableName("keys"), PaymentTable: localstack.TableName("payments"),
		Retention: time.Hour, Lease: time.Minute,
	}
	require.NoError(t, paymentsapi.EnsureTables(context.Background(), ep.Client, cfg))
	srv := httptest.NewServer(paymentsapi.NewHandler(ep.NewClient(optFns...), cfg))
	t.Cleanup(srv.Close)
	return srv
}

// faultyClient is a client.New client whose attempts cross nw, with the
// probe's Sleep unless optFns replace it.
func faultyClient(t *testing.T, nw *network, optFns ...func(*client.Options)) (*http.Client, *probe) {
	t.Helper()
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	nw.base = base
	p := &probe{}
	fns := append([]func(*client.Options){func(o *client.Options) {
		o.Sleep = p.sleep
		o.OnAttempt = p.onAttempt
	}}, optFns...)
	return client.New(&http.Client{Transport: nw}, fns...), p
}

func createPayment(t *testing.T, ctx context.Context, c *http.Client, url, token, body string) (exchange, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/payments", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return exchange{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return exchange{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// payments lists a token's payments straight from the API.
func payments(t *testing.T, url, token string) []paymentsapi.Payment {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url+"/payments", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var list struct {
		Payments []paymentsapi.Payment `json:"payments"`
		Count    int                   `json:"count"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	require.Len(t, list.Payments, list.Count)
	return list.Payments
}

// assertReplayOf checks that got is the replay of the response the server
// sent first.
func assertReplayOf(t *testing.T, original, got exchange) {
	t.Helper()
	assert.Equal(t, http.StatusCreated, original.status)
	assert.Equal(t, original.status, got.status)
	assert.Equal(t, string(original.body), string(got.body))
	assert.Equal(t, original.header.Get("Location"), got.header.Get("Location"))
	assert.Equal(t, "true", got.header.Get("Idempotent-Replayed"))
}

func TestLostResponseIsReplayedNotExecutedAgain(t *testing.T) {
	srv := paymentsServer(t)
	nw := &network{plan: func(n int) fault { return map[int]fault{1: lose}[n] }}
	c, p := faultyClient(t, nw)

	got, err := createPayment(t, context.Background(), c, srv.URL, "alice", `{"amount":1250,"currency":"EUR"}`)
	require.NoError(t, err)
	lost := nw.lostResponses()
	require.Len(t, lost, 1, "the server answered the first attempt")
	assertReplayOf(t, lost[0], got)

	list := payments(t, srv.URL, "alice")
	require.Len(t, list, 1, "one logical operation, one payment")
	assert.Contains(t, string(got.body), list[0].ID)
	assert.Len(t, p.reports(), 2)
}

func TestResponseLateBeyondTheAttemptTimeoutIsReplayed(t *testing.T) {
	srv := paymentsServer(t)
	nw := &network{plan: func(n int) fault { return map[int]fault{1: hold}[n] }}
	c, p := faultyClient(t, nw, func(o *client.Options) { o.AttemptTimeout = 300 * time.Millisecond })

	got, err := createPayment(t, context.Background(), c, srv.URL, "alice", `{"amount":99,"currency":"USD"}`)
	require.NoError(t, err)
	lost := nw.lostResponses()
	require.Len(t, lost, 1)
	assertReplayOf(t, lost[0], got)
	assert.Len(t, payments(t, srv.URL, "alice"), 1)
	reports := p.reports()
	require.Len(t, reports, 2)
	assert.ErrorIs(t, reports[0].err, context.DeadlineExceeded)
}

func Test503FromAProxyIsRetriedAndExecutesOnce(t *testing.T) {
	srv := paymentsServer(t)
	nw := &network{plan: func(n int) fault { return map[int]fault{1: unavailable, 2: unavailable}[n] }}
	c, p := faultyClient(t, nw)

	got, err := createPayment(t, context.Background(), c, srv.URL, "alice", `{"amount":5,"currency":"EUR"}`)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, got.status)
	assert.Empty(t, got.header.Get("Idempotent-Replayed"), "the proxy never forwarded: the third attempt is the execution")
	assert.Len(t, payments(t, srv.URL, "alice"), 1)
	assert.Equal(t, []time.Duration{time.Second, time.Second}, p.delays(), "the proxy's Retry-After")
}

func TestRetryWhileTheFirstAttemptIsInFlightGets409ThenTheReplay(t *testing.T) {
	gate := newCommitGate()
	srv := paymentsServer(t, gate.install)
	t.Cleanup(gate.open) // before the server closes, whatever the test did
	nw := &network{plan: func(n int) fault {
		if n == 1 {
			return detach
		}
		// The detached first attempt holds the key (claimed, about to
		// commit) before the second attempt goes out.
		<-gate.reached
		return deliver
	}}
	var slept []time.Duration
	c, p := faultyClient(t, nw, func(o *client.Options) {
		o.Sleep = func(ctx context.Context, d time.Duration) error {
			slept = append(slept, d)
			if len(slept) == 2 { // after the 409: let the first attempt commit
				gate.open()
				nw.detached.Wait()
			}
			return ctx.Err()
		}
	})

	got, err := createPayment(t, context.Background(), c, srv.URL, "alice", `{"amount":700,"currency":"EUR"}`)
	require.NoError(t, err)
	var statuses []int
	for _, a := range p.reports() {
		statuses = append(statuses, a.status)
	}
	assert.Equal(t, []int{0, http.StatusConflict, http.StatusCreated}, statuses, "lost, in flight, replayed")
	require.Len(t, slept, 2)
	assert.Equal(t, time.Second, slept[1], "the 409's Retry-After")
	lost := nw.lostResponses()
	require.Len(t, lost, 1)
	assertReplayOf(t, lost[0], got)
	assert.Len(t, payments(t, srv.URL, "alice"), 1)
}

func TestKeyReusedForAnotherPaymentGets422WithoutRetry(t *testing.T) {
	srv := paymentsServer(t)
	nw := &network{plan: func(int) fault { return deliver }}
	c, p := faultyClient(t, nw)
	ctx := client.WithKey(context.Background(), "order-42")

	first, err := createPayment(t, ctx, c, srv.URL, "alice", `{"amount":1,"currency":"EUR"}`)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, first.status)
	other, err := createPayment(t, ctx, c, srv.URL, "alice", `{"amount":2,"currency":"EUR"}`)
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnprocessableEntity, other.status)
	assert.Contains(t, string(other.body), "key-reused")
	assert.Len(t, p.reports(), 2, "one attempt each")
	assert.Len(t, payments(t, srv.URL, "alice"), 1)
}

func TestAHigherLevelRetryWithTheSameKeyGetsTheReplay(t *testing.T) {
	srv := paymentsServer(t)
	nw := &network{plan: func(n int) fault { return map[int]fault{1: lose, 2: lose}[n] }}
	c, _ := faultyClient(t, nw, func(o *client.Options) { o.MaxAttempts = 2 })

	_, err := createPayment(t, context.Background(), c, srv.URL, "alice", `{"amount":3,"currency":"EUR"}`)
	var re *client.RetryError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, 2, re.Attempts)

	// Later, the caller's own retry (a job queue) reuses the key.
	got, err := createPayment(t, client.WithKey(context.Background(), re.Key), c, srv.URL, "alice", `{"amount":3,"currency":"EUR"}`)
	require.NoError(t, err)
	lost := nw.lostResponses()
	require.Len(t, lost, 2)
	assertReplayOf(t, lost[0], got)
	assert.Len(t, payments(t, srv.URL, "alice"), 1)
}

func TestManyOperationsThroughFaultsExecuteOnceEach(t *testing.T) {
	srv := paymentsServer(t)
	kinds := []fault{deliver, lose, unavailable, lose, hold}
	const ops = 15
	// Operation i suffers kinds[i%len(kinds)] on its first attempt and,
	// for every third operation, a second fault on its second attempt.
	var mu sync.Mutex
	var firstOf []int // request number of each operation's first attempt
	nw := &network{}
	nw.plan = func(n int) fault {
		mu.Lock()
		defer mu.Unlock()
		op := len(firstOf) - 1
		switch n - firstOf[op] {
		case 0:
			return kinds[op%len(kinds)]
		case 1:
			if op%3 == 0 {
				return lose
			}
		}
		return deliver
	}
	c, _ := faultyClient(t, nw, func(o *client.Options) { o.AttemptTimeout = 300 * time.Millisecond })

	ids := map[string]bool{}
	for i := range ops {
		mu.Lock()
		firstOf = append(firstOf, nw.requests()+1)
		mu.Unlock()
		before := len(nw.lostResponses())
		token := fmt.Sprintf("op-%d", i)
		body := fmt.Sprintf(`{"amount":%d,"currency":"EUR"}`, 100+i)
		got, err := createPayment(t, context.Background(), c, srv.URL, token, body)
		require.NoError(t, err, "operation %d", i)
		require.Equal(t, http.StatusCreated, got.status, "operation %d", i)
		if lost := nw.lostResponses(); len(lost) > before {
			assertReplayOf(t, lost[before], got)
		}
		var p paymentsapi.Payment
		require.NoError(t, json.Unmarshal(bytes.TrimSpace(got.body), &p))
		assert.False(t, ids[p.ID], "operation %d got a fresh payment", i)
		ids[p.ID] = true

		list := payments(t, srv.URL, token)
		require.Len(t, list, 1, "operation %d executed once", i)
		assert.Equal(t, p, list[0])
	}
	assert.NotEmpty(t, nw.lostResponses())
}
