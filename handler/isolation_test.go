package handler_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/internal/ddbtest"
)

// Another scope's key can never replay, block (409) or reveal (422) a
// record: every outcome for tenant t2 is the one it would get if t1 had
// never used the key.
func TestAnotherScopesKeyNeverReplaysBlocksOrReveals(t *testing.T) {
	h := newHarness(t)
	release, started := make(chan struct{}), make(chan struct{})
	h.setInner(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Tenant") == "t1" {
			close(started)
			<-release
		}
		h.createEffect(w, r)
	})
	done := make(chan reply)
	go func() { done <- h.post("shared", `{"a":1}`) }()
	<-started

	blocked := h.post("shared", `{"a":1}`, "X-Tenant", "t2")
	assert.Equal(t, 201, blocked.status, "t1's key in flight does not block t2")
	assert.Empty(t, blocked.header.Get(handler.ReplayedHeader))
	close(release)
	require.Equal(t, 201, (<-done).status)

	revealed := h.post("shared", `{"different":true}`, "X-Tenant", "t3")
	assert.Equal(t, 201, revealed.status, "no 422: t1's use of the key is invisible to t3")
	replayed := h.post("shared", `{"a":1}`, "X-Tenant", "t4")
	assert.Empty(t, replayed.header.Get(handler.ReplayedHeader), "t1's response is never replayed to t4")
	assert.NotContains(t, replayed.body, `"execution":1`)
}

// The middleware's log records carry a hash of the key, never the key, the
// body or the Authorization header.
func TestLogsNeverCarryKeysBodiesOrCredentials(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := newHarness(t, func(o *handler.Options) { o.Logger = logger })
	const key, secret, body = "key-SECRET-4711", "Bearer tok-SECRET-0815", `{"card":"4111111111111111"}`
	auth := []string{"Authorization", secret}

	require.Equal(t, 201, h.post(key, body, auth...).status)              // first
	require.Equal(t, 201, h.post(key, body, auth...).status)              // replay
	require.Equal(t, 422, h.post(key, `{"card":"5500"}`, auth...).status) // mismatch
	h.faulty.Plan("PutItem", ddbtest.FailBefore)
	require.Equal(t, 503, h.post(key+"-2", body, auth...).status) // store error

	out := logs.String()
	require.NotEmpty(t, out)
	for _, leak := range []string{"SECRET", "4111111111111111", "5500", "tok-"} {
		assert.NotContains(t, out, leak)
	}
	assert.Equal(t, 3, strings.Count(out, `"key_hash"`), "replay, mismatch and store error are logged")
}
