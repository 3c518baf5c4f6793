package handler_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/handler"
)

func TestNewWithScopeAndSingleCallerIsRefused(t *testing.T) {
	v := recoverPanic(func() {
		handler.New(offlineStore(), func(o *handler.Options) {
			o.Scope = func(*http.Request) (string, error) { return "t", nil }
			o.SingleCaller = true
		})
	})
	assert.NotNil(t, v, "Scope and SingleCaller together are contradictory")
}

// A service that states it has a single caller guards its requests in one
// scope: the retry replays, whoever sends it.
func TestSingleCallerGuardsEveryRequestInOneScope(t *testing.T) {
	h := newHarness(t)
	guarded := handler.New(h.store, func(o *handler.Options) {
		o.SingleCaller = true
		o.Guard.Now = h.clock.Now
	})(http.HandlerFunc(h.createEffect))
	first := serveDirect(t, guarded, "k1", `{"a":1}`)
	require.Equal(t, http.StatusCreated, first.Code)
	again := serveDirect(t, guarded, "k1", `{"a":1}`)
	assert.Equal(t, http.StatusCreated, again.Code)
	assert.Equal(t, "true", again.Header().Get(handler.ReplayedHeader))
	assert.Equal(t, first.Body.String(), again.Body.String())
	assert.Equal(t, int64(1), h.executed.Load())
	assert.Equal(t, 1, h.effectsFor("k1"))
}
