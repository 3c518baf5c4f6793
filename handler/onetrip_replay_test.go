package handler_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
)

// A nil *dynamostore.Store is refused at construction, as a nil store is:
// accepted, every request panicked inside the library.
func TestNewRefusesANilStorePointer(t *testing.T) {
	var store *dynamostore.Store
	assert.PanicsWithValue(t, "idemkey: New needs a store", func() {
		handler.New(store, func(o *handler.Options) { o.SingleCaller = true })
	})
}

// OneTrip over HTTP: a retry of a completed request runs the handler
// again, and when that run answers 5xx (a dependency down now) the client
// still gets the stored response, marked replayed, as the README's
// contract says of a retry after completion.
func TestOneTripRetryAfterCompletionWhoseRunFailsGetsTheStoredResponse(t *testing.T) {
	h := newHarness(t, oneTrip)
	first := h.post("k-after", `{}`)
	require.Equal(t, 201, first.status, first.body)
	h.setInner(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "processor unavailable", http.StatusServiceUnavailable)
	})
	again := h.post("k-after", `{}`)
	assert.Equal(t, 201, again.status, "the stored status")
	assert.Equal(t, "true", again.header.Get(handler.ReplayedHeader))
	assert.Equal(t, first.body, again.body)
}
