package paymentsapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/localstack"
)

type api struct {
	t   *testing.T
	srv *httptest.Server
}

func newAPI(t *testing.T, latency time.Duration) *api {
	t.Helper()
	ep := localstack.ForTest(t)
	cfg := Config{
		KeyTable: localstack.TableName("keys"), PaymentTable: localstack.TableName("payments"),
		Retention: time.Hour, Lease: time.Minute, Latency: latency,
	}
	require.NoError(t, EnsureTables(context.Background(), ep.Client, cfg))
	t.Cleanup(func() {
		for _, table := range []string{cfg.KeyTable, cfg.PaymentTable} {
			if _, err := ep.Client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &table}); err != nil {
				t.Errorf("deleting %s: %v", table, err)
			}
		}
	})
	srv := httptest.NewServer(NewHandler(ep.Client, cfg))
	t.Cleanup(srv.Close)
	return &api{t: t, srv: srv}
}

type answer struct {
	status int
	header http.Header
	body   string
}

func (a *api) call(method, path, token, key, body string) answer {
	a.t.Helper()
	req, err := http.NewRequest(method, a.srv.URL+path, strings.NewReader(body))
	require.NoError(a.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(a.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

func TestCreateReplayAndRead(t *testing.T) {
	a := newAPI(t, 0)
	first := a.call("POST", "/payments", "alice", "k1", `{"amount":1250,"currency":"EUR","description":"rent"}`)
	require.Equal(t, 201, first.status, first.body)
	var p Payment
	require.NoError(t, json.Unmarshal([]byte(first.body), &p))
	assert.Equal(t, int64(1250), p.Amount)
	assert.Equal(t, "EUR", p.Currency)
	assert.Equal(t, "rent", p.Description)
	assert.Equal(t, "/payments/"+p.ID, first.header.Get("Location"))

	again := a.call("POST", "/payments", "alice", "k1", `{"currency":"EUR","amount":1250,"description":"rent"}`)
	assert.Equal(t, 201, again.status)
	assert.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	assert.JSONEq(t, first.body, again.body)
	assert.Equal(t, first.header.Get("Location"), again.header.Get("Location"))

	got := a.call("GET", "/payments/"+p.ID, "alice", "", "")
	assert.Equal(t, 200, got.status)
	assert.JSONEq(t, first.body, got.body)
	assert.Equal(t, 404, a.call("GET", "/payments/"+p.ID, "mallory", "", "").status, "another token's payment is not found")

	list := a.call("GET", "/payments", "alice", "", "")
	assert.JSONEq(t, `{"payments":[`+strings.TrimSpace(first.body)+`],"count":1}`, list.body)
	assert.JSONEq(t, `{"payments":[],"count":0}`, a.call("GET", "/payments", "mallory", "", "").body)
}

func TestSameKeyFromAnotherTokenIsAnotherPayment(t *testing.T) {
	a := newAPI(t, 0)
	assert.Equal(t, 201, a.call("POST", "/payments", "alice", "k1", `{"amount":1,"currency":"EUR"}`).status)
	r := a.call("POST", "/payments", "bob", "k1", `{"amount":2,"currency":"EUR"}`)
	assert.Equal(t, 201, r.status, "no 422 across tokens")
	assert.Empty(t, r.header.Get("Idempotent-Replayed"))
}

func TestInvalidPaymentsGet400AndTheAnswerIsStored(t *testing.T) {
	a := newAPI(t, 0)
	for i, body := range []string{
		`{"amount":0,"currency":"EUR"}`, `{"amount":-5,"currency":"EUR"}`, `{"amount":1.5,"currency":"EUR"}`,
		`{"amount":"10","currency":"EUR"}`, `{"amount":10,"currency":"eur"}`, `{"amount":10,"currency":"EURO"}`,
		`{"amount":10}`, `{"currency":"EUR"}`, `{"amount":10,"currency":"EUR","extra":1}`, `[1]`, `not json`,
		`{"amount":10,"currency":"EUR"} {}`, ``,
	} {
		key := "bad-" + string(rune('a'+i))
		r := a.call("POST", "/payments", "alice", key, body)
		assert.Equal(t, 400, r.status, body)
		assert.Equal(t, "application/problem+json", r.header.Get("Content-Type"), body)
		again := a.call("POST", "/payments", "alice", key, body)
		assert.Equal(t, "true", again.header.Get("Idempotent-Replayed"), body)
	}
	assert.JSONEq(t, `{"payments":[],"count":0}`, a.call("GET", "/payments", "alice", "", "").body)
}

func TestMissingTokenGets401(t *testing.T) {
	a := newAPI(t, 0)
	r := a.call("POST", "/payments", "", "k1", `{"amount":1,"currency":"EUR"}`)
	assert.Equal(t, 401, r.status)
	assert.Equal(t, "application/problem+json", r.header.Get("Content-Type"))
	assert.Equal(t, 401, a.call("GET", "/payments", "", "", "").status)
}

func TestConflictAndMismatchAnswers(t *testing.T) {
	a := newAPI(t, 500*time.Millisecond)
	statuses := make(chan int, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- a.call("POST", "/payments", "alice", "k1", `{"amount":1,"currency":"EUR"}`).status
		}()
	}
	wg.Wait()
	close(statuses)
	got := map[int]int{}
	for s := range statuses {
		got[s]++
	}
	assert.Equal(t, map[int]int{201: 1, 409: 1}, got, "one executes, its concurrent twin gets 409")
	assert.Equal(t, 422, a.call("POST", "/payments", "alice", "k1", `{"amount":2,"currency":"EUR"}`).status)
	assert.Contains(t, a.call("GET", "/payments", "alice", "", "").body, `"count":1`)
}
