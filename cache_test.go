package idemkey_test

import (
	"context"
	"crypto/sha256"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
)

func mustNotRun(t *testing.T) idemkey.Func {
	return func(context.Context) (idemkey.Response, error) {
		t.Error("the function ran")
		return idemkey.Response{}, nil
	}
}

// The cache compares a copy of the fingerprint it stored: a caller reusing
// its fingerprint buffer after Do cannot turn a mismatch into a replay.
func TestCacheKeepsItsOwnCopyOfTheFingerprint(t *testing.T) {
	e := newGuardEnv(t)
	ctx := context.Background()
	g := e.guard(e.store(nil), func(o *idemkey.Options) { o.Cache = idemkey.NewCache(10, time.Hour) })
	buf := make([]byte, 32)
	first := sha256.Sum256([]byte("pay 10 EUR"))
	copy(buf, first[:])
	r := req("fp-buffer")
	r.Fingerprint = buf
	_, err := g.Do(ctx, r, ok("paid 10"))
	require.NoError(t, err)

	other := sha256.Sum256([]byte("pay 9999 EUR"))
	copy(buf, other[:]) // the caller's buffer, reused for the next request
	r2 := req("fp-buffer")
	r2.Fingerprint = other[:]
	_, err = g.Do(ctx, r2, mustNotRun(t))
	assert.ErrorIs(t, err, idemkey.ErrMismatch, "as the store answers")
}

// A hit returns a copy: neither the function's buffers nor a caller's
// changes to its replayed response reach another replay.
func TestCacheHitsDoNotShareTheResponse(t *testing.T) {
	e := newGuardEnv(t)
	ctx := context.Background()
	g := e.guard(e.store(nil), func(o *idemkey.Options) { o.Cache = idemkey.NewCache(10, time.Hour) })
	body := []byte("original")
	_, err := g.Do(ctx, req("shared"), func(context.Context) (idemkey.Response, error) {
		return idemkey.Response{Status: 200, Header: http.Header{"X-A": {"1"}}, Body: body}, nil
	})
	require.NoError(t, err)
	copy(body, "MUTATED!") // the function's buffer, reused after Do

	res, err := g.Do(ctx, req("shared"), mustNotRun(t))
	require.NoError(t, err)
	require.True(t, res.Replayed)
	assert.Equal(t, "original", string(res.Response.Body))
	res.Response.Header.Set("X-Caller", "yes")
	res.Response.Body[0] = 'X'

	again, err := g.Do(ctx, req("shared"), mustNotRun(t))
	require.NoError(t, err)
	assert.Equal(t, http.Header{"X-A": {"1"}}, again.Response.Header)
	assert.Equal(t, "original", string(again.Response.Body))
}

// A request the store refuses gets the store's answer, not the cache's.
func TestCacheLeavesAnInvalidRequestToTheStore(t *testing.T) {
	e := newGuardEnv(t)
	ctx := context.Background()
	g := e.guard(e.store(nil), func(o *idemkey.Options) { o.Cache = idemkey.NewCache(10, time.Hour) })
	_, err := g.Do(ctx, req("short-fp"), ok("x"))
	require.NoError(t, err)
	bad := req("short-fp")
	bad.Fingerprint = bad.Fingerprint[:5]
	_, err = g.Do(ctx, bad, mustNotRun(t))
	assert.ErrorIs(t, err, dynamostore.ErrInvalidRequest)
}

// A cache names records by scope and key alone: Guards over two stores
// cannot share one, while Guards over one store can.
func TestACacheServesTheGuardsOfOneStore(t *testing.T) {
	e := newGuardEnv(t)
	c := idemkey.NewCache(10, time.Hour)
	s := e.store(nil)
	idemkey.New(s, func(o *idemkey.Options) { o.Cache = c })
	assert.NotPanics(t, func() { idemkey.New(s, func(o *idemkey.Options) { o.Cache = c }) })
	other := dynamostore.New(e.ep.Client, "another-table")
	assert.PanicsWithValue(t,
		"idemkey: New: the Cache serves a Guard over another store; a Cache names records by scope and key alone, so give each store its own",
		func() { idemkey.New(other, func(o *idemkey.Options) { o.Cache = c }) })
}
