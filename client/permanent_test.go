package client_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/client"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/problem/problemtest"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/txn"
)

// tables returns an endpoint with a new key table and a new effect table
// (partition key "id"), deleted when the test ends.
func tables(t *testing.T) (ep *localstack.Endpoint, keys, effects string) {
	t.Helper()
	ep = localstack.ForTest(t)
	keys, effects = localstack.TableName("keys"), localstack.TableName("effects")
	require.NoError(t, dynamostore.EnsureTable(context.Background(), ep.Client, keys, 0))
	ddbtest.DeleteOnCleanup(t, ep.Client, keys)
	ddbtest.CreateTable(t, ep.Client, effects, "id")
	return ep, keys, effects
}

// discard is a Logger that writes nothing.
var discard = slog.New(slog.DiscardHandler)

// A mistake in the service's setup or in what a handler stages gets the
// same answer on every attempt. The guarded server answers it with a 500
// problem that names the class of fault and carries no Retry-After, and
// the retrying client returns it after one attempt: the handler runs once
// per call, not once per attempt.
func TestPermanentStoreFaultsAreAnsweredOnceAndNotRetried(t *testing.T) {
	ep, keys, effects := tables(t)

	item := func(id string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}}
	}
	put := func(table string, it map[string]types.AttributeValue) types.Put {
		return types.Put{TableName: aws.String(table), Item: it}
	}
	typo := effects + "-typo"
	cases := []struct {
		name     string
		keyTable string
		stage    func(tx *txn.Tx)
		kind     string
		runs     int64  // executions of the handler per call
		named    string // a table the detail names
	}{
		{name: "missing key table", keyTable: keys + "-missing", stage: func(tx *txn.Tx) { tx.Put(put(effects, item("a"))) },
			kind: "missing-table", runs: 0, named: keys + "-missing"},
		{name: "typo in a staged table", keyTable: keys, stage: func(tx *txn.Tx) { tx.Put(put(typo, item("b"))) },
			kind: "missing-table", runs: 1, named: typo},
		{name: "staged write without its key attribute", keyTable: keys, stage: func(tx *txn.Tx) {
			tx.Put(put(effects, map[string]types.AttributeValue{"other": &types.AttributeValueMemberS{Value: "c"}}))
		}, kind: "invalid-write", runs: 1, named: effects},
		{name: "two actions on one item", keyTable: keys, stage: func(tx *txn.Tx) {
			tx.Put(put(effects, item("d")))
			tx.Put(put(effects, item("d")))
		}, kind: "invalid-write", runs: 1, named: effects},
		{name: "100 staged actions", keyTable: keys, stage: func(tx *txn.Tx) {
			for i := range txn.MaxActions {
				tx.Put(put(effects, item(fmt.Sprintf("e%d", i))))
			}
		}, kind: "too-many-actions", runs: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int64
			store := dynamostore.New(ep.Client, tc.keyTable)
			mw := handler.New(store, func(o *handler.Options) {
				o.SingleCaller = true
				o.Logger = discard
			})
			srv := httptest.NewServer(mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs.Add(1)
				tx, ok := txn.FromContext(r.Context())
				if !ok {
					http.Error(w, "no tx", http.StatusInternalServerError)
					return
				}
				tc.stage(tx)
				w.WriteHeader(http.StatusCreated)
			})))
			defer srv.Close()

			var attempts int
			c := client.New(nil, func(o *client.Options) {
				o.OnAttempt = func(int, *http.Response, error, time.Duration) { attempts++ }
				o.Sleep = func(context.Context, time.Duration) error { return nil }
			})
			const key = "order-secret-42"
			for call := 1; call <= 2; call++ {
				req, err := http.NewRequest(http.MethodPost, srv.URL+"/payments", strings.NewReader(`{"amount":1}`))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(handler.HeaderName, `"`+key+`"`)
				resp, err := c.Do(req)
				require.NoError(t, err, "a permanent fault is an answer, not a RetryError")
				body, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				resp.Body.Close()

				problemtest.Check(t, resp.StatusCode, resp.Header, string(body), http.StatusInternalServerError, tc.kind)
				assert.Empty(t, resp.Header.Get("Retry-After"), "never Retry-After: a retry fails the same way")
				assert.Contains(t, string(body), tc.named, "the detail names the table at fault")
				assert.NotContains(t, string(body), key)
				assert.Equal(t, call, attempts, "one attempt per call")
				assert.Equal(t, tc.runs*int64(call), runs.Load(), "the handler runs once per call at most")
			}
		})
	}
}

// A staged condition that fails is a 409 without Retry-After, whose detail
// does not promise that a retry with the same key succeeds; the client
// returns it after one attempt.
func TestFailedStagedConditionIsNotRetried(t *testing.T) {
	ep, keys, effects := tables(t)

	var runs atomic.Int64
	mw := handler.New(dynamostore.New(ep.Client, keys), func(o *handler.Options) {
		o.SingleCaller = true
		o.Logger = discard
	})
	srv := httptest.NewServer(mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		tx, _ := txn.FromContext(r.Context())
		tx.Put(types.Put{TableName: aws.String(effects),
			Item:                map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "never"}},
			ConditionExpression: aws.String("attribute_exists(id)")})
		w.WriteHeader(http.StatusCreated)
	})))
	defer srv.Close()

	var attempts int
	c := client.New(nil, func(o *client.Options) {
		o.OnAttempt = func(int, *http.Response, error, time.Duration) { attempts++ }
		o.Sleep = func(context.Context, time.Duration) error { return nil }
	})
	resp, err := c.Post(srv.URL+"/payments", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	problemtest.Check(t, resp.StatusCode, resp.Header, string(body), http.StatusConflict, "effect-condition-failed")
	assert.Empty(t, resp.Header.Get("Retry-After"))
	assert.NotContains(t, string(body), "Retry with the same key")
	assert.Equal(t, 1, attempts)
	assert.Equal(t, int64(1), runs.Load())
}
