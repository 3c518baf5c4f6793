package idemkey_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/localstack"
)

func newGuard(t *testing.T, optFns ...func(*idemkey.Options)) *idemkey.Guard {
	t.Helper()
	ep := localstack.ForTest(t)
	table := localstack.TableName("guard")
	require.NoError(t, dynamostore.EnsureTable(context.Background(), ep.Client, table, 0))
	return idemkey.New(dynamostore.New(ep.Client, table), optFns...)
}

func req(key string) idemkey.Request {
	sum := sha256.Sum256([]byte("body"))
	return idemkey.Request{Scope: "s", Key: key, Method: "Invoke", Path: "fn", Fingerprint: sum[:]}
}

func ok(body string) idemkey.Func {
	return func(context.Context) (idemkey.Response, error) {
		return idemkey.Response{Status: 200, Body: []byte(body)}, nil
	}
}

func TestDoExecutesOnceThenReplays(t *testing.T) {
	g := newGuard(t)
	ctx := context.Background()
	res, err := g.Do(ctx, req("k"), ok("first"))
	require.NoError(t, err)
	assert.False(t, res.Replayed)
	assert.True(t, res.Stored)
	res, err = g.Do(ctx, req("k"), ok("second"))
	require.NoError(t, err)
	assert.True(t, res.Replayed)
	assert.Equal(t, "first", string(res.Response.Body))
}

func TestDoReleasesTheKeyWhenTheFunctionFails(t *testing.T) {
	g := newGuard(t)
	ctx := context.Background()
	boom := errors.New("boom")
	_, err := g.Do(ctx, req("k"), func(context.Context) (idemkey.Response, error) { return idemkey.Response{}, boom })
	assert.ErrorIs(t, err, boom)
	res, err := g.Do(ctx, req("k"), ok("retry"))
	require.NoError(t, err)
	assert.False(t, res.Replayed, "the retry executed")
}

func TestDoReleasesTheKeyAndReraisesAPanic(t *testing.T) {
	g := newGuard(t)
	ctx := context.Background()
	assert.PanicsWithValue(t, "bug", func() {
		_, _ = g.Do(ctx, req("k"), func(context.Context) (idemkey.Response, error) { panic("bug") })
	})
	res, err := g.Do(ctx, req("k"), ok("retry"))
	require.NoError(t, err)
	assert.False(t, res.Replayed)
}

func TestDoReleasesResponsesThatShouldNotBeStored(t *testing.T) {
	g := newGuard(t, func(o *idemkey.Options) {
		o.ShouldStore = func(r idemkey.Response) bool { return r.Status < 400 }
	})
	ctx := context.Background()
	res, err := g.Do(ctx, req("k"), func(context.Context) (idemkey.Response, error) { return idemkey.Response{Status: 429}, nil })
	require.NoError(t, err)
	assert.False(t, res.Stored)
	res, err = g.Do(ctx, req("k"), ok("now"))
	require.NoError(t, err)
	assert.False(t, res.Replayed)
	assert.True(t, res.Stored)
}

func TestDoReportsInFlightAndMismatchAsTypedErrors(t *testing.T) {
	g := newGuard(t)
	ctx := context.Background()
	inside := make(chan error, 2)
	_, err := g.Do(ctx, req("k"), func(context.Context) (idemkey.Response, error) {
		_, err := g.Do(ctx, req("k"), ok("nested"))
		inside <- err
		other := req("k")
		other.Fingerprint = make([]byte, 32)
		_, err = g.Do(ctx, other, ok("nested"))
		inside <- err
		return idemkey.Response{Status: 200}, nil
	})
	require.NoError(t, err)
	var inFlight *idemkey.InFlightError
	first := <-inside
	assert.ErrorAs(t, first, &inFlight)
	assert.ErrorIs(t, first, idemkey.ErrInFlight)
	assert.Positive(t, inFlight.RetryAfter)
	assert.ErrorIs(t, <-inside, idemkey.ErrMismatch)
}

// A Guard runs in one of its two modes. Unkeyed names CommitUnkeyed's
// events and is no mode of a Guard; any other value was ClaimFirst in
// disguise.
func TestNewRefusesAModeThatIsNeitherClaimFirstNorOneTrip(t *testing.T) {
	for _, m := range []idemkey.Mode{idemkey.Unkeyed, idemkey.Mode(7)} {
		assert.PanicsWithValue(t, "idemkey: New: Options.Mode "+m.String()+": a Guard runs in ClaimFirst or OneTrip mode", func() {
			newGuard(t, func(o *idemkey.Options) { o.Mode = m })
		}, "Mode %d", int(m))
	}
	assert.Equal(t, "unkeyed", idemkey.Unkeyed.String())
	assert.Equal(t, "Mode(7)", idemkey.Mode(7).String())
}
