package handler_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/problem/problemtest"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/txn"
)

// harness serves an inner handler guarded by the middleware, over a real
// DynamoDB endpoint. The inner handler stages one effect item per
// execution, so effects can be counted in the table afterwards.
type harness struct {
	t        *testing.T
	ep       *localstack.Endpoint
	calls    *ddbtest.Counter
	faulty   *ddbtest.Faulty
	clock    *ddbtest.Clock
	keys     string
	effects  string
	store    *dynamostore.Store
	executed atomic.Int64
	inner    atomic.Pointer[http.HandlerFunc]
	srv      *httptest.Server
}

func newHarness(t *testing.T, optFns ...func(*handler.Options)) *harness {
	t.Helper()
	h := &harness{t: t, ep: localstack.ForTest(t), calls: ddbtest.NewCounter(), clock: ddbtest.NewClock(time.Unix(1_800_000_000, 0))}
	h.faulty = ddbtest.NewFaulty(h.ep.NewClient(h.calls.Install))
	h.keys, h.effects = localstack.TableName("keys"), localstack.TableName("effects")
	require.NoError(t, dynamostore.EnsureTable(context.Background(), h.ep.Client, h.keys, 0))
	ddbtest.DeleteOnCleanup(t, h.ep.Client, h.keys)
	ddbtest.CreateTable(t, h.ep.Client, h.effects, "id")
	h.setInner(h.createEffect)
	h.store = dynamostore.New(h.faulty, h.keys, func(o *dynamostore.Options) {
		o.Now = h.clock.Now
		o.Lease = time.Minute
		o.Retention = time.Hour
	})
	mw := handler.New(h.store, append([]func(*handler.Options){func(o *handler.Options) {
		o.Guard.Now = h.clock.Now
		o.Scope = func(r *http.Request) (string, error) {
			if tenant := r.Header.Get("X-Tenant"); tenant != "" {
				return tenant, nil
			}
			return "", fmt.Errorf("no tenant")
		}
	}}, optFns...)...)
	h.srv = httptest.NewServer(mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*h.inner.Load())(w, r) })))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *harness) setInner(f http.HandlerFunc) { h.inner.Store(&f) }

// createEffect is the default inner handler: it stages an effect item named
// after a fresh execution number and answers 201 with the body it read.
func (h *harness) createEffect(w http.ResponseWriter, r *http.Request) {
	n := h.executed.Add(1)
	body, _ := io.ReadAll(r.Body)
	tx, ok := txn.FromContext(r.Context())
	if !ok {
		http.Error(w, "no tx", 500)
		return
	}
	id := fmt.Sprintf("%s#%d", r.Header.Get(handler.HeaderName), n)
	tx.Put(types.Put{TableName: &h.effects, Item: map[string]types.AttributeValue{
		"id":  &types.AttributeValueMemberS{Value: id},
		"key": &types.AttributeValueMemberS{Value: r.Header.Get(handler.HeaderName)},
	}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Set-Cookie", "session=secret")
	w.Header().Set("X-Execution", fmt.Sprint(n))
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"execution":%d,"echo":%q}`, n, body)
}

type reply struct {
	status int
	header http.Header
	body   string
}

func (h *harness) post(key, body string, hdr ...string) reply {
	h.t.Helper()
	return h.do(http.MethodPost, "/payments", key, body, hdr...)
}

func (h *harness) do(method, path, key, body string, hdr ...string) reply {
	h.t.Helper()
	req, err := http.NewRequest(method, h.srv.URL+path, strings.NewReader(body))
	require.NoError(h.t, err)
	req.Header.Set("X-Tenant", "t1")
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set(handler.HeaderName, key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// effectsFor returns the number of effect items written for key.
func (h *harness) effectsFor(key string) int {
	h.t.Helper()
	return ddbtest.CountItems(h.t, h.ep.Client, h.effects, "key", key)
}

func assertProblem(t *testing.T, r reply, status int, kind string) {
	t.Helper()
	problemtest.Check(t, r.status, r.header, r.body, status, kind)
}

func TestFirstRequestExecutesAndRetryReplaysTheStoredResponse(t *testing.T) {
	h := newHarness(t)
	first := h.post("k1", `{"amount":1}`)
	assert.Equal(t, 201, first.status)
	assert.Equal(t, "session=secret", first.header.Get("Set-Cookie"), "the first response is the handler's own")
	assert.Empty(t, first.header.Get(handler.ReplayedHeader))

	again := h.post("k1", `{ "amount" : 1 }`)
	assert.Equal(t, 201, again.status)
	assert.Equal(t, first.body, again.body)
	assert.Equal(t, "true", again.header.Get(handler.ReplayedHeader))
	assert.Equal(t, "application/json", again.header.Get("Content-Type"))
	assert.Equal(t, "1", again.header.Get("X-Execution"))
	assert.Empty(t, again.header.Get("Set-Cookie"), "Set-Cookie is not stored")
	assert.Equal(t, int64(1), h.executed.Load())
	assert.Equal(t, 1, h.effectsFor("k1"))
}

func TestDynamoDBCallsPerOutcome(t *testing.T) {
	h := newHarness(t)
	h.calls.Reset()
	require.Equal(t, 201, h.post("k1", `{}`).status)
	assert.Equal(t, "PutItem=1 TransactWriteItems=1", h.calls.String(), "first execution: claim + commit")

	h.calls.Reset()
	require.Equal(t, "true", h.post("k1", `{}`).header.Get(handler.ReplayedHeader))
	assert.Equal(t, "PutItem=1", h.calls.String(), "replay: the losing claim carries the record")

	release := make(chan struct{})
	started := make(chan struct{})
	h.setInner(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		h.createEffect(w, r)
	})
	done := make(chan reply)
	go func() { done <- h.post("k2", `{}`) }()
	<-started
	h.calls.Reset()
	assertProblem(t, h.post("k2", `{}`), 409, "in-flight")
	assert.Equal(t, "PutItem=1", h.calls.String(), "in flight: one call")
	close(release)
	assert.Equal(t, 201, (<-done).status)
}

func TestDuplicateWhileInFlightGets409WithRetryAfter(t *testing.T) {
	h := newHarness(t)
	release, started := make(chan struct{}), make(chan struct{})
	h.setInner(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		h.createEffect(w, r)
	})
	done := make(chan reply)
	go func() { done <- h.post("k1", `{"a":1}`) }()
	<-started
	dup := h.post("k1", `{"a":1}`)
	assertProblem(t, dup, 409, "in-flight")
	assert.Equal(t, "1", dup.header.Get("Retry-After"))
	close(release)
	assert.Equal(t, 201, (<-done).status)
	assert.Equal(t, 1, h.effectsFor("k1"))
}

func TestKeyReusedWithDifferentRequestGets422(t *testing.T) {
	h := newHarness(t)
	require.Equal(t, 201, h.post("k1", `{"amount":1}`).status)
	assertProblem(t, h.post("k1", `{"amount":2}`), 422, "key-reused")
	assertProblem(t, h.do(http.MethodPost, "/refunds", "k1", `{"amount":1}`), 422, "key-reused")
	assertProblem(t, h.do(http.MethodPost, "/payments?x=1", "k1", `{"amount":1}`), 422, "key-reused")
	assert.Equal(t, int64(1), h.executed.Load())
}

func TestMissingOrMalformedKeyGets400(t *testing.T) {
	h := newHarness(t)
	assertProblem(t, h.post("", `{}`), 400, "missing-key")
	assertProblem(t, h.post(`"unterminated`, `{}`), 400, "invalid-key")
	assertProblem(t, h.post(strings.Repeat("k", 256), `{}`), 400, "invalid-key")

	req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/payments", strings.NewReader("{}"))
	req.Header.Set("X-Tenant", "t1")
	req.Header.Add(handler.HeaderName, "a")
	req.Header.Add(handler.HeaderName, "b")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 400, resp.StatusCode)
	assert.Zero(t, h.executed.Load())
}

func TestOptionalKeyPassesThroughWithoutOne(t *testing.T) {
	h := newHarness(t, func(o *handler.Options) { o.Optional = true })
	h.setInner(func(w http.ResponseWriter, r *http.Request) {
		h.executed.Add(1)
		if _, ok := txn.FromContext(r.Context()); !ok {
			w.WriteHeader(http.StatusInternalServerError) // unguarded requests get a Tx too
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	assert.Equal(t, 202, h.post("", `{}`).status)
	assert.Equal(t, 202, h.post("", `{}`).status)
	assert.Equal(t, int64(2), h.executed.Load())
	assert.Zero(t, h.calls.Total(), "nothing staged: no call")
}

func TestUnguardedMethodsPassThrough(t *testing.T) {
	h := newHarness(t)
	h.setInner(func(w http.ResponseWriter, r *http.Request) { h.executed.Add(1); w.WriteHeader(204) })
	assert.Equal(t, 204, h.do(http.MethodGet, "/payments", "", "").status)
	assert.Equal(t, 204, h.do(http.MethodPut, "/payments/1", "k", "").status)
	assert.Equal(t, int64(2), h.executed.Load())
	assert.Zero(t, h.calls.Total())
}

func TestBodyOverLimitGets413AndDoesNotExecute(t *testing.T) {
	h := newHarness(t, func(o *handler.Options) { o.MaxBodyBytes = 10 })
	assertProblem(t, h.post("k1", `{"amount":12345}`), 413, "body-too-large")
	assert.Equal(t, 201, h.post("k1", `{"a":1}`).status, "the key was not consumed")
	assert.Equal(t, int64(1), h.executed.Load())
}

func TestScopeErrorGets401(t *testing.T) {
	h := newHarness(t)
	assertProblem(t, h.post("k1", `{}`, "X-Tenant", ""), 401, "unauthorized")
}

func TestSameKeyInAnotherScopeIsAnotherRecord(t *testing.T) {
	h := newHarness(t)
	a := h.post("k1", `{"amount":1}`)
	b := h.post("k1", `{"amount":2}`, "X-Tenant", "t2")
	assert.Equal(t, 201, a.status)
	assert.Equal(t, 201, b.status, "no 422: another tenant's key is invisible")
	assert.Empty(t, b.header.Get(handler.ReplayedHeader))
	assert.Equal(t, int64(2), h.executed.Load())
}

func TestStoreUnavailableGets503AndDoesNotExecute(t *testing.T) {
	h := newHarness(t)
	h.faulty.Plan("PutItem", ddbtest.FailBefore)
	r := h.post("k1", `{}`)
	assertProblem(t, r, 503, "store-unavailable")
	assert.NotEmpty(t, r.header.Get("Retry-After"))
	assert.Zero(t, h.executed.Load())
}

func TestFailedCommitNeverShowsSuccessAndRetryExecutesOnce(t *testing.T) {
	h := newHarness(t)
	h.faulty.Plan("TransactWriteItems", ddbtest.FailBefore)
	assertProblem(t, h.post("k1", `{}`), 503, "store-unavailable")
	assert.Equal(t, 0, h.effectsFor("k1"))

	r := h.post("k1", `{}`)
	assert.Equal(t, 201, r.status, "the key was released: the retry executes")
	assert.Equal(t, 1, h.effectsFor("k1"))
}

func TestCommitAppliedBeforeATimeoutIsASuccess(t *testing.T) {
	h := newHarness(t)
	h.faulty.Plan("TransactWriteItems", ddbtest.FailAfter)
	r := h.post("k1", `{}`)
	assert.Equal(t, 201, r.status, "the commit landed; the guard found it")
	assert.Equal(t, "true", h.post("k1", `{}`).header.Get(handler.ReplayedHeader))
	assert.Equal(t, 1, h.effectsFor("k1"))
}

func TestServerErrorReleasesTheKeySoARetryExecutes(t *testing.T) {
	h := newHarness(t)
	var fail atomic.Bool
	fail.Store(true)
	h.setInner(func(w http.ResponseWriter, r *http.Request) {
		if fail.Swap(false) {
			tx, _ := txn.FromContext(r.Context())
			tx.Put(types.Put{TableName: &h.effects, Item: map[string]types.AttributeValue{
				"id": &types.AttributeValueMemberS{Value: "discarded"}, "key": &types.AttributeValueMemberS{Value: "k1"},
			}})
			http.Error(w, "downstream down", http.StatusBadGateway)
			return
		}
		h.createEffect(w, r)
	})
	assert.Equal(t, 502, h.post("k1", `{}`).status)
	assert.Equal(t, 0, h.effectsFor("k1"), "a 5xx's staged effects are discarded")
	assert.Equal(t, 201, h.post("k1", `{}`).status)
	assert.Equal(t, 1, h.effectsFor("k1"))
}

func TestClientErrorsAreStoredAndReplayed(t *testing.T) {
	h := newHarness(t)
	h.setInner(func(w http.ResponseWriter, r *http.Request) {
		h.executed.Add(1)
		http.Error(w, "bad amount", http.StatusBadRequest)
	})
	assert.Equal(t, 400, h.post("k1", `{}`).status)
	r := h.post("k1", `{}`)
	assert.Equal(t, 400, r.status)
	assert.Equal(t, "true", r.header.Get(handler.ReplayedHeader))
	assert.Equal(t, int64(1), h.executed.Load())
}

func TestPanicReleasesTheKeyAndIsReraised(t *testing.T) {
	h := newHarness(t)
	var panics atomic.Bool
	panics.Store(true)
	h.setInner(func(w http.ResponseWriter, r *http.Request) {
		if panics.Swap(false) {
			panic(http.ErrAbortHandler) // re-raised: net/http aborts the connection quietly
		}
		h.createEffect(w, r)
	})
	req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/payments", strings.NewReader("{}"))
	req.Header.Set("X-Tenant", "t1")
	req.Header.Set(handler.HeaderName, "k1")
	_, err := http.DefaultClient.Do(req)
	assert.Error(t, err, "the panic reached net/http, which dropped the connection")
	assert.Equal(t, 201, h.post("k1", `{}`).status, "the key was released")
	assert.Equal(t, 1, h.effectsFor("k1"))
}

func TestExpiredKeyExecutesAgain(t *testing.T) {
	h := newHarness(t)
	require.Equal(t, 201, h.post("k1", `{}`).status)
	h.clock.Advance(time.Minute + time.Hour + time.Second) // past exp: the claim's lease's end plus the retention
	r := h.post("k1", `{"other":"body"}`)
	assert.Equal(t, 201, r.status)
	assert.Empty(t, r.header.Get(handler.ReplayedHeader))
	assert.Equal(t, 2, h.effectsFor("k1"))
}

func TestStuckLockIsReclaimedAfterLeaseOverHTTP(t *testing.T) {
	h := newHarness(t)
	// The first request hangs, as if its process had died after claiming.
	block, started := make(chan struct{}), make(chan struct{})
	h.setInner(func(w http.ResponseWriter, r *http.Request) { close(started); <-block })
	stuck := make(chan int)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/payments", strings.NewReader(`{}`))
		req.Header.Set("X-Tenant", "t1")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(handler.HeaderName, "k1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			stuck <- 0
			return
		}
		resp.Body.Close()
		stuck <- resp.StatusCode
	}()
	<-started

	h.clock.Advance(time.Minute)
	assertProblem(t, h.post("k1", `{}`), 409, "in-flight")
	h.clock.Advance(time.Millisecond)
	h.setInner(h.createEffect)
	r := h.post("k1", `{}`)
	assert.Equal(t, 201, r.status, "reclaimed after the lease")

	close(block) // the stuck request returns: its commit is fenced off
	assert.Equal(t, 409, <-stuck, "the superseded request learns it lost its lock")
	assert.Equal(t, 1, h.effectsFor("k1"))
	assert.Equal(t, "true", h.post("k1", `{}`).header.Get(handler.ReplayedHeader))
}

func TestConcurrentDuplicatesExecuteOncePerKey(t *testing.T) {
	const goroutines, keys = 16, 50
	h := newHarness(t)
	h.setInner(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Millisecond) // widen the window for duplicates
		h.createEffect(w, r)
	})
	type result struct {
		key string
		r   reply
	}
	results := make(chan result, goroutines*keys)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range keys {
				key := fmt.Sprintf("key-%03d", (k+g)%keys)
				results <- result{key, h.post(key, `{"amount":100,"key":"`+key+`"}`)}
			}
		}()
	}
	wg.Wait()
	close(results)

	originals := map[string]string{}
	var created, replayed, conflicts int
	var all []result
	for res := range results {
		all = append(all, res)
		if res.r.status == 201 && res.r.header.Get(handler.ReplayedHeader) == "" {
			created++
			_, dup := originals[res.key]
			assert.False(t, dup, "two executions answered for %s", res.key)
			originals[res.key] = res.r.body
		}
	}
	for _, res := range all {
		switch {
		case res.r.status == 409:
			conflicts++
			assert.Contains(t, res.r.body, "in-flight")
		case res.r.header.Get(handler.ReplayedHeader) == "true":
			replayed++
			assert.Equal(t, originals[res.key], res.r.body, "a replay equals the original")
		case res.r.status == 201:
		default:
			t.Errorf("unexpected answer for %s: %d %s", res.key, res.r.status, res.r.body)
		}
	}
	assert.Equal(t, keys, created)
	assert.Equal(t, goroutines*keys, created+replayed+conflicts)
	for k := range keys {
		key := fmt.Sprintf("key-%03d", k)
		assert.Equal(t, 1, h.effectsFor(key), key)
	}
	assert.Equal(t, int64(keys), h.executed.Load())
	t.Logf("requests=%d executed=%d replayed=%d conflicts=%d", goroutines*keys, created, replayed, conflicts)
}

// RFC 9110 allows header values of obs-text bytes (a Latin-1 filename in
// Content-Disposition is the classic case): the replay sends the bytes the
// first answer sent, not U+FFFD in their place.
func TestReplayOfAHeaderValueThatIsNotUTF8SendsItsBytes(t *testing.T) {
	h := newHarness(t)
	const disp = "attachment; filename=\"caf\xe9.txt\""
	h.setInner(func(w http.ResponseWriter, r *http.Request) {
		n := h.executed.Add(1)
		w.Header().Set("Content-Disposition", disp)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "execution %d", n)
	})
	first := h.post("latin1", `{}`)
	require.Equal(t, http.StatusCreated, first.status)
	require.Equal(t, disp, first.header.Get("Content-Disposition"))
	replay := h.post("latin1", `{}`)
	require.Equal(t, "true", replay.header.Get(handler.ReplayedHeader))
	assert.Equal(t, int64(1), h.executed.Load())
	assert.Equal(t, first.body, replay.body)
	assert.Equal(t, []byte(disp), []byte(replay.header.Get("Content-Disposition")))
}

func TestReplayOfAnOmittedBodySaysSo(t *testing.T) {
	h := newHarness(t)
	big := bytes.Repeat([]byte{0}, 0)
	h.setInner(func(w http.ResponseWriter, r *http.Request) {
		h.executed.Add(1)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.WriteHeader(200)
		_, _ = w.Write(big)
	})
	big = randomBytes(t, 450_000)
	first := h.post("k1", `{}`)
	assert.Equal(t, 200, first.status)
	assert.Equal(t, len(big), len(first.body), "the first response is whole")
	again := h.post("k1", `{}`)
	assert.Equal(t, 200, again.status)
	assert.Equal(t, "true", again.header.Get(handler.ReplayedHeader))
	assert.Equal(t, fmt.Sprint(len(big)), again.header.Get(handler.BodyOmittedHeader))
	assert.Empty(t, again.body)
	assert.Equal(t, int64(1), h.executed.Load())
}
