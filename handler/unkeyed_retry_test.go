package handler_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/client"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/internal/ddbtest"
)

// TestUnkeyedCommitOfUnknownOutcomeIsNotRetriedByTheClient is an
// unguarded route behind the package's own retrying client: its write
// lands, DynamoDB's answer is lost, and the client must not send it again.
func TestUnkeyedCommitOfUnknownOutcomeIsNotRetriedByTheClient(t *testing.T) {
	h := newHarness(t, func(o *handler.Options) { o.Methods = []string{http.MethodPatch} }) // POST is not guarded
	h.faulty.Plan("TransactWriteItems", ddbtest.FailAfter)
	attempts := 0
	c := client.New(nil, func(o *client.Options) {
		o.Sleep = func(ctx context.Context, d time.Duration) error { return nil }
		o.OnAttempt = func(int, *http.Response, error, time.Duration) { attempts++ }
	})
	resp, err := c.Post(h.srv.URL+"/payments", "application/json", strings.NewReader(`{"amount":1}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)

	assert.Equal(t, 1, attempts, "an answer that may hide a committed write is not retried")
	assert.Equal(t, int64(1), h.executed.Load())
	assert.Equal(t, 1, ddbtest.CountItems(t, h.ep.Client, h.effects, "key", resp.Request.Header.Get(handler.HeaderName)), "written once")
	assertProblem(t, reply{status: resp.StatusCode, header: resp.Header, body: string(body)}, http.StatusInternalServerError, "outcome-unknown")
	assert.Empty(t, resp.Header.Get("Retry-After"))
}

func TestUnkeyedCommitThatStoreRefusedIs503WithRetryAfter(t *testing.T) {
	h := newHarness(t)
	h.faulty.Plan("TransactWriteItems", ddbtest.Conflict, ddbtest.Conflict, ddbtest.Conflict, ddbtest.Conflict, ddbtest.Conflict)
	h.setInner(func(w http.ResponseWriter, r *http.Request) {
		h.stageEffect(r, "refused", "")
		w.WriteHeader(http.StatusOK)
	})
	r := h.do(http.MethodPut, "/things/1", "", "")
	assertProblem(t, r, http.StatusServiceUnavailable, "store-unavailable")
	assert.NotEmpty(t, r.header.Get("Retry-After"), "nothing was written: a retry is safe")
	assert.Contains(t, r.body, "nothing was written")
	assert.Zero(t, h.effectsFor("unkeyed"))
}
