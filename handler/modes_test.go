package handler_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/handler"
)

func oneTrip(o *handler.Options) { o.Guard.Mode = idemkey.OneTrip }

func TestOneTripFirstExecutionCostsOneCall(t *testing.T) {
	h := newHarness(t, oneTrip)
	h.calls.Reset()
	first := h.post("k1", `{}`)
	require.Equal(t, 201, first.status)
	assert.Equal(t, "TransactWriteItems=1", h.calls.String(), "no claim: the commit is the claim")

	h.calls.Reset()
	again := h.post("k1", `{}`)
	assert.Equal(t, "true", again.header.Get(handler.ReplayedHeader))
	assert.Equal(t, first.body, again.body)
	assert.Equal(t, "TransactWriteItems=1", h.calls.String(), "a replay loses the commit and reads the winner's record from it")
	assert.Equal(t, 1, h.effectsFor("k1"))

	assertProblem(t, h.post("k1", `{"other":1}`), 422, "key-reused")
	assert.Equal(t, 1, h.effectsFor("k1"))
}

func TestOneTripWithoutEffectsCostsOnePutItem(t *testing.T) {
	h := newHarness(t, oneTrip)
	h.setInner(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) })
	h.calls.Reset()
	require.Equal(t, 202, h.post("k1", `{}`).status)
	assert.Equal(t, "PutItem=1", h.calls.String())
}

func TestOneTripConcurrentDuplicatesCommitOnce(t *testing.T) {
	const goroutines, keys = 8, 20
	h := newHarness(t, oneTrip)
	var wg sync.WaitGroup
	answers := make(chan reply, goroutines*keys)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range keys {
				answers <- h.post(fmt.Sprintf("key-%02d", (k+g)%keys), `{"n":1}`)
			}
		}()
	}
	wg.Wait()
	close(answers)
	fresh := 0
	for a := range answers {
		require.Equal(t, 201, a.status, a.body)
		if a.header.Get(handler.ReplayedHeader) == "" {
			fresh++
		}
	}
	assert.Equal(t, keys, fresh, "one committed execution per key")
	for k := range keys {
		assert.Equal(t, 1, h.effectsFor(fmt.Sprintf("key-%02d", k)))
	}
}

func TestCachedReplayCostsNoCall(t *testing.T) {
	cache := idemkey.NewCache(100, time.Minute)
	h := newHarness(t, func(o *handler.Options) { o.Guard.Cache = cache })

	first := h.post("k1", `{}`)
	require.Equal(t, 201, first.status)
	h.calls.Reset()
	again := h.post("k1", `{}`)
	assert.Equal(t, "true", again.header.Get(handler.ReplayedHeader))
	assert.Equal(t, first.body, again.body)
	assert.Zero(t, h.calls.Total(), "served from the cache")

	assertProblem(t, h.post("k1", `{"x":2}`), 422, "key-reused")
	assert.Zero(t, h.calls.Total(), "the fingerprint is checked on every hit")

	h.clock.Advance(time.Minute)
	h.calls.Reset()
	assert.Equal(t, "true", h.post("k1", `{}`).header.Get(handler.ReplayedHeader))
	assert.Equal(t, "PutItem=1", h.calls.String(), "past the cache TTL, DynamoDB answers")
	assert.Equal(t, int64(1), h.executed.Load())
}

func TestCacheNeverOutlivesTheRecord(t *testing.T) {
	cache := idemkey.NewCache(100, 24*time.Hour) // longer than the harness's 1 h retention
	h := newHarness(t, func(o *handler.Options) { o.Guard.Cache = cache })
	require.Equal(t, 201, h.post("k1", `{}`).status)
	h.clock.Advance(time.Minute + time.Hour + time.Second) // past exp: the claim's lease's end plus the retention
	r := h.post("k1", `{}`)
	assert.Empty(t, r.header.Get(handler.ReplayedHeader), "the record expired: the key is absent again")
	assert.Equal(t, int64(2), h.executed.Load())
}

func TestCacheHoldsNoInProgressRecord(t *testing.T) {
	cache := idemkey.NewCache(100, time.Minute)
	h := newHarness(t, func(o *handler.Options) { o.Guard.Cache = cache })
	release, started := make(chan struct{}), make(chan struct{})
	h.setInner(func(w http.ResponseWriter, r *http.Request) { close(started); <-release; h.createEffect(w, r) })
	done := make(chan reply)
	go func() { done <- h.post("k1", `{}`) }()
	<-started
	assertProblem(t, h.post("k1", `{}`), 409, "in-flight")
	assert.Zero(t, cache.Len())
	close(release)
	<-done
	assert.Equal(t, 1, cache.Len())
}
