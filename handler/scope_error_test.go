package handler_test

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/handler"
)

// A Scope function's error describes how the service authenticates
// (which key id failed, which issuer it trusts): the client's 401 must
// carry a fixed detail, and the operator must find the error in the log.
func TestScopeErrorIsLoggedAndNotSentToTheClient(t *testing.T) {
	const secret = "token signed by kid-7 is not trusted by https://idp.internal.example"
	var log bytes.Buffer
	ran := false
	h := handler.New(offlineStore(), func(o *handler.Options) {
		o.Scope = func(*http.Request) (string, error) { return "", errors.New(secret) }
		o.Logger = slog.New(slog.NewJSONHandler(&log, nil))
	})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true }))

	req := httptest.NewRequest(http.MethodPost, "/payments", strings.NewReader(`{}`))
	req.Header.Set(handler.HeaderName, "k-1")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)

	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	assert.False(t, ran, "the handler does not run")
	assert.Contains(t, string(body), `"type":"`)
	assert.NotContains(t, string(body), "kid-7")
	assert.NotContains(t, string(body), "idp.internal")
	assert.Contains(t, log.String(), secret, "the operator reads the Scope error")
	assert.Contains(t, log.String(), `"level":"WARN"`)
	assert.Contains(t, log.String(), `"status":401`)
	assert.NotContains(t, log.String(), "k-1", "the log never holds the key")
}
