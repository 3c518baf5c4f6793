package idemkey_test

import (
	"context"
	"errors"
	"testing"
	"time"

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

// A OneTrip run that writes nothing over an abandoned claim (a ClaimFirst
// writer's, its lock expired) keeps its own answer, as a claim would take
// the key over; under a lock that holds, it is in flight.
func TestOneTripFailedRunOverAClaimInProgress(t *testing.T) {
	e := newGuardEnv(t)
	ctx := context.Background()
	s := e.store(nil)
	stuck := req("k-stuck")
	stuck.Lease = time.Minute
	_, err := s.Claim(ctx, stuck)
	require.NoError(t, err)
	g := e.guard(s, func(o *idemkey.Options) { o.Mode = idemkey.OneTrip })
	unavailable := func(context.Context) (idemkey.Response, error) { return idemkey.Response{Status: 503}, nil }

	_, err = g.Do(ctx, req("k-stuck"), unavailable)
	assert.ErrorIs(t, err, idemkey.ErrInFlight, "the lock holds")

	e.clock.Advance(2 * time.Minute)
	res, err := g.Do(ctx, req("k-stuck"), unavailable)
	require.NoError(t, err)
	assert.Equal(t, 503, res.Response.Status, "the lock expired: the run's own answer")
	assert.False(t, res.Replayed)
}
