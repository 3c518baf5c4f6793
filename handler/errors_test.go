package handler_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/txn"
)

// captureDefault sends slog.Default()'s records to a JSON buffer until the
// test ends. Tests that call it must not run in parallel.
func captureDefault(t *testing.T) *bytes.Buffer {
	t.Helper()
	var out bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(old) })
	return &out
}

// records decodes the JSON records in out.
func records(t *testing.T, out *bytes.Buffer) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for line := range strings.Lines(out.String()) {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		recs = append(recs, rec)
	}
	return recs
}

// Without Options.Logger, a fault the service cannot fix by retrying is
// logged to slog.Default() at Error, with a hash of the key and the class
// of the fault, and without the key, the body or the credential.
func TestPermanentStoreFaultIsLoggedToTheDefaultLogger(t *testing.T) {
	out := captureDefault(t)
	ep := localstack.ForTest(t)
	mw := handler.New(dynamostore.New(ep.Client, localstack.TableName("absent")), func(o *handler.Options) {
		o.Scope = func(r *http.Request) (string, error) { return r.Header.Get("Authorization"), nil }
	})
	srv := httptest.NewServer(mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	})))
	defer srv.Close()

	const key, token, body = "key-SECRET-4711", "Bearer tok-SECRET-0815", `{"card":"4111111111111111"}`
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/payments", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set(handler.HeaderName, key)
	req.Header.Set("Authorization", token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)

	recs := records(t, out)
	require.Len(t, recs, 1, out.String())
	assert.Equal(t, "ERROR", recs[0]["level"])
	assert.Equal(t, "missing-table", recs[0]["outcome"])
	assert.EqualValues(t, 500, recs[0]["status"])
	assert.NotEmpty(t, recs[0]["key_hash"])
	for _, leak := range []string{"SECRET", "4111111111111111", "tok-"} {
		assert.NotContains(t, out.String(), leak)
	}
}

// Without Options.Logger, plain outcomes (a first execution, a replay, a
// key reused) write nothing; a store that cannot be reached is logged at
// Warn. A Logger that discards switches logging off.
func TestDefaultLoggerGetsOnlyWhatNeedsAttention(t *testing.T) {
	out := captureDefault(t)
	h := newHarness(t)
	require.Equal(t, 201, h.post("k1", `{}`).status)
	require.Equal(t, "true", h.post("k1", `{}`).header.Get(handler.ReplayedHeader))
	require.Equal(t, 422, h.post("k1", `{"other":1}`).status)
	assert.Empty(t, out.String(), "plain outcomes are not logged by default")

	h.faulty.Plan("PutItem", ddbtest.FailBefore)
	require.Equal(t, 503, h.post("k2", `{}`).status)
	recs := records(t, out)
	require.Len(t, recs, 1, out.String())
	assert.Equal(t, "WARN", recs[0]["level"])
	assert.Equal(t, "store-unavailable", recs[0]["outcome"])

	out.Reset()
	quiet := newHarness(t, func(o *handler.Options) { o.Logger = slog.New(slog.DiscardHandler) })
	quiet.faulty.Plan("PutItem", ddbtest.FailBefore)
	require.Equal(t, 503, quiet.post("k3", `{}`).status)
	assert.Empty(t, out.String(), "a discarding Logger logs nothing")
}

// A transaction that keeps conflicting after its retries is transient:
// 503 with Retry-After, nothing committed, the key free for the retry.
func TestTransactionConflictAfterRetriesIsUnavailable(t *testing.T) {
	h := newHarness(t, func(o *handler.Options) { o.Logger = slog.New(slog.DiscardHandler) })
	h.faulty.Plan("TransactWriteItems", ddbtest.Conflict, ddbtest.Conflict, ddbtest.Conflict, ddbtest.Conflict)
	r := h.post("k1", `{}`)
	assertProblem(t, r, http.StatusServiceUnavailable, "store-unavailable")
	assert.Equal(t, "1", r.header.Get("Retry-After"))
	assert.Equal(t, 0, h.effectsFor("k1"))

	again := h.post("k1", `{}`)
	assert.Equal(t, 201, again.status, "the key was released: the retry executes")
	assert.Equal(t, 1, h.effectsFor("k1"))
}

// A staged write DynamoDB rejects is a 500 that names the class and the
// table, without Retry-After; its key is released.
func TestInvalidStagedWriteIs500InvalidWrite(t *testing.T) {
	h := newHarness(t, func(o *handler.Options) { o.Logger = slog.New(slog.DiscardHandler) })
	h.setInner(func(w http.ResponseWriter, r *http.Request) {
		h.executed.Add(1)
		tx, _ := txn.FromContext(r.Context())
		tx.Put(types.Put{TableName: &h.effects, Item: map[string]types.AttributeValue{
			"not-id": &types.AttributeValueMemberS{Value: "x"},
		}})
		w.WriteHeader(http.StatusCreated)
	})
	r := h.post("k1", `{}`)
	assertProblem(t, r, http.StatusInternalServerError, "invalid-write")
	assert.Empty(t, r.header.Get("Retry-After"))
	assert.Contains(t, r.body, h.effects)
	h.post("k1", `{}`)
	assert.Equal(t, int64(2), h.executed.Load(), "the key was released")
}
