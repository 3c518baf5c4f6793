package handler_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/handler"
)

// TestCallsPerOutcomeSummary counts the DynamoDB calls of each outcome in
// one run, asserts them, and prints the line scripts/bench.sh reports.
func TestCallsPerOutcomeSummary(t *testing.T) {
	count := func(h *harness, send func()) int {
		h.calls.Reset()
		send()
		return h.calls.Total()
	}
	claimFirst := newHarness(t, func(o *handler.Options) { o.Guard.Cache = idemkey.NewCache(16, time.Minute) })
	first := count(claimFirst, func() { require.Equal(t, 201, claimFirst.post("a", `{}`).status) })

	uncached := handler.New(claimFirst.store, func(o *handler.Options) {
		o.Scope = func(*http.Request) (string, error) { return "t1", nil }
	})(http.HandlerFunc(claimFirst.createEffect))
	replay := count(claimFirst, func() {
		r := serveDirect(t, uncached, "a", `{}`)
		require.Equal(t, "true", r.Header().Get(handler.ReplayedHeader))
	})
	cached := count(claimFirst, func() { require.Equal(t, "true", claimFirst.post("a", `{}`).header.Get(handler.ReplayedHeader)) })

	release, started := make(chan struct{}), make(chan struct{})
	claimFirst.setInner(func(w http.ResponseWriter, r *http.Request) { close(started); <-release; claimFirst.createEffect(w, r) })
	done := make(chan reply)
	go func() { done <- claimFirst.post("b", `{}`) }()
	<-started
	inFlight := count(claimFirst, func() { require.Equal(t, 409, claimFirst.post("b", `{}`).status) })
	close(release)
	<-done

	oneTrip := newHarness(t, func(o *handler.Options) { o.Guard.Mode = idemkey.OneTrip })
	firstOneTrip := count(oneTrip, func() { require.Equal(t, 201, oneTrip.post("a", `{}`).status) })

	assert.Equal(t, 2, first, "first execution: claim + commit")
	assert.Equal(t, 1, firstOneTrip, "one-trip first execution")
	assert.Equal(t, 1, replay, "replay: the losing claim carries the record")
	assert.Equal(t, 0, cached, "replay from the cache")
	assert.Equal(t, 1, inFlight, "in flight")
	fmt.Printf("calls first=%d first_one_trip=%d replay=%d replay_cached=%d in_flight=%d\n", first, firstOneTrip, replay, cached, inFlight)
}
