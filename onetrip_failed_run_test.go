package idemkey_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
)

// In OneTrip mode a retry of a completed request runs the function again.
// When that run writes nothing (a 5xx, which is not stored: a downstream
// that is down now; or an error), the retry is still answered from the
// stored record, not by the run's failure: one GetItem.
func TestOneTripRetryOfACompletedRequestWhoseRunFailsIsAReplay(t *testing.T) {
	e := newGuardEnv(t)
	ctx := context.Background()
	g := e.guard(e.store(nil), func(o *idemkey.Options) { o.Mode = idemkey.OneTrip })
	first, err := g.Do(ctx, req("k-after"), ok("first"))
	require.NoError(t, err)
	require.True(t, first.Stored)

	res, err := g.Do(ctx, req("k-after"), func(context.Context) (idemkey.Response, error) {
		return idemkey.Response{Status: 503, Body: []byte("downstream down")}, nil
	})
	require.NoError(t, err)
	assert.True(t, res.Replayed, "a retry after completion is answered from the stored record")
	assert.Equal(t, "first", string(res.Response.Body))
	assert.Equal(t, 200, res.Response.Status)

	res, err = g.Do(ctx, req("k-after"), func(context.Context) (idemkey.Response, error) {
		return idemkey.Response{}, errors.New("downstream timeout")
	})
	require.NoError(t, err, "the function's error does not hide the stored answer")
	assert.True(t, res.Replayed)

	_, err = g.Do(ctx, req("k-new"), func(context.Context) (idemkey.Response, error) {
		return idemkey.Response{Status: 503}, nil
	})
	require.NoError(t, err, "a first run's 5xx is its own answer: there is no record")
}

// The same for a key reused with another request: a failed run does not
// hide the mismatch.
func TestOneTripReuseOfAKeyWhoseRunFailsIsAMismatch(t *testing.T) {
	e := newGuardEnv(t)
	ctx := context.Background()
	g := e.guard(e.store(nil), func(o *idemkey.Options) { o.Mode = idemkey.OneTrip })
	_, err := g.Do(ctx, req("k-reused"), ok("first"))
	require.NoError(t, err)
	other := req("k-reused")
	other.Fingerprint = make([]byte, 32)
	_, err = g.Do(ctx, other, func(context.Context) (idemkey.Response, error) {
		return idemkey.Response{Status: 500}, nil
	})
	assert.ErrorIs(t, err, idemkey.ErrMismatch)
}
