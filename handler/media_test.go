package handler_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// "1.0" and "1.00" are the same JSON number but different text: as
// text/plain they are different requests, and the key's reuse is refused.
func TestTextPlainBodiesDifferingOnlyAsJSONNumbersGet422(t *testing.T) {
	h := newHarness(t)
	require.Equal(t, http.StatusCreated, h.post("k1", "1.0", "Content-Type", "text/plain").status)
	assertProblem(t, h.post("k1", "1.00", "Content-Type", "text/plain"), http.StatusUnprocessableEntity, "key-reused")
	assert.Equal(t, int64(1), h.executed.Load())
	assert.Equal(t, 1, h.effectsFor("k1"))
}

// The same bytes declared as JSON and as a form are different requests.
func TestSameBytesAsJSONAndAsFormGet422(t *testing.T) {
	h := newHarness(t)
	body := `{"amount":1}`
	require.Equal(t, http.StatusCreated, h.post("k1", body, "Content-Type", "application/json").status)
	assertProblem(t, h.post("k1", body, "Content-Type", "application/x-www-form-urlencoded"), http.StatusUnprocessableEntity, "key-reused")
	assert.Equal(t, int64(1), h.executed.Load())
}

// JSON bodies are still compared by meaning: member order, spacing and
// number spelling do not matter, for application/json and for +json
// types, and "charset=utf-8" (which RFC 8259 gives no meaning) neither.
func TestJSONRetriesReplayWhateverTheSpellingAndCharset(t *testing.T) {
	h := newHarness(t)
	first := h.post("k1", `{"amount":1,"currency":"EUR"}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusCreated, first.status)
	for _, retry := range [][2]string{
		{"application/json", `{ "currency" : "EUR", "amount" : 1.0 }`},
		{"application/json; charset=utf-8", `{"currency":"EUR","amount":1}`},
		{"Application/JSON;charset=\"UTF-8\"", `{"amount":10e-1,"currency":"EUR"}`},
	} {
		again := h.post("k1", retry[1], "Content-Type", retry[0])
		assert.Equal(t, http.StatusCreated, again.status, retry)
		assert.Equal(t, "true", again.header.Get("Idempotent-Replayed"), retry)
		assert.Equal(t, first.body, again.body, retry)
	}
	assertProblem(t, h.post("k1", `{"amount":1,"currency":"EUR"}`, "Content-Type", "application/merge-patch+json"),
		http.StatusUnprocessableEntity, "key-reused")

	require.Equal(t, http.StatusCreated, h.post("k2", `{"b":1,"a":2}`, "Content-Type", "application/merge-patch+json").status)
	assert.Equal(t, "true", h.post("k2", `{"a":2,"b":1}`, "Content-Type", "application/merge-patch+json").header.Get("Idempotent-Replayed"))
	assert.Equal(t, int64(2), h.executed.Load())
}
