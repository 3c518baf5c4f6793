package lambda_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/internal/problem/problemtest"
	idemlambda "github.com/idemkey/idemkey/lambda"
)

// guarded returns the payments handler behind Middleware over e's store.
// The v2 and ALB samples are GET requests and are used unmodified, so GET
// is guarded along with POST.
func guarded(e *env, p *payments, d door, optFns ...func(*idemlambda.MiddlewareOptions)) http.Handler {
	base := func(o *idemlambda.MiddlewareOptions) {
		o.Handler.Methods = []string{http.MethodGet, http.MethodPost}
		if d.scopeOpts != nil {
			d.scopeOpts(&o.Scope)
		}
		o.Handler.SingleCaller = d.singleCaller
	}
	return idemlambda.Middleware(e.store, append([]func(*idemlambda.MiddlewareOptions){base}, optFns...)...)(p)
}

func decodeSeen(t *testing.T, r reply) seen {
	t.Helper()
	var s seen
	require.NoError(t, json.Unmarshal([]byte(r.body), &s), r.body)
	return s
}

func assertProblem(t *testing.T, r reply, status int, kind string) {
	t.Helper()
	problemtest.Check(t, r.status, r.header, r.body, status, kind)
}

// doorRun is one front door with one sample event, serving a fresh
// payments handler guarded by Middleware.
type doorRun struct {
	door
	env *env
	p   *payments
	h   http.Handler
	raw []byte
}

// send invokes the front door with the sample and what c adds.
func (r *doorRun) send(t *testing.T, c call) reply {
	t.Helper()
	return r.invoke(t, context.Background(), r.h, r.raw, c)
}

// eachDoor runs test once per front door and sample, on one pair of
// tables; tests keep their keys apart with the door's name.
func eachDoor(t *testing.T, test func(t *testing.T, r *doorRun)) {
	e := newEnv(t)
	for _, d := range doors {
		t.Run(d.name, func(t *testing.T) {
			r := &doorRun{door: d, env: e, p: newPayments(e), raw: sample(t, d.sample)}
			defer r.p.unblock()
			r.h = guarded(e, r.p, d)
			test(t, r)
		})
	}
}

// TestEachFrontDoorExecutesOnceAndReplays runs the HTTP contract through
// every front door, on aws-lambda-go's sample events with an
// Idempotency-Key header added, against DynamoDB.
func TestEachFrontDoorExecutesOnceAndReplays(t *testing.T) {
	eachDoor(t, func(t *testing.T, r *doorRun) {
		key := r.name + "-first"
		first := r.send(t, call{key: key})
		require.Equal(t, http.StatusCreated, first.status, first.body)
		assert.Equal(t, int64(1), decodeSeen(t, first).Execution)
		assert.Empty(t, first.header.Get(handler.ReplayedHeader))
		assert.Equal(t, 1, r.env.effectsFor(key))
		rec, err := r.env.store.Get(context.Background(), r.scope, key)
		require.NoError(t, err, "the record is in the scope the event names")
		assert.Equal(t, dynamostore.StateCompleted, rec.State)

		again := r.send(t, call{key: key})
		assert.Equal(t, http.StatusCreated, again.status)
		assert.Equal(t, "true", again.header.Get(handler.ReplayedHeader))
		assert.Equal(t, first.body, again.body)
		assert.Equal(t, first.header.Get("Location"), again.header.Get("Location"))
		assert.Equal(t, int64(1), r.p.executed.Load(), "a replay does not run the handler")
		assert.Equal(t, 1, r.env.effectsFor(key), "a replay writes no effect")
	})
}

func TestEachFrontDoorAnswersAKeyReusedWithAnotherBodyWith422(t *testing.T) {
	eachDoor(t, func(t *testing.T, r *doorRun) {
		key := r.name + "-reused"
		require.Equal(t, http.StatusCreated, r.send(t, call{key: key}).status)
		// A body that differs from every sample's.
		other := r.send(t, call{key: key, body: text(`{"amount":9999}`)})
		assertProblem(t, other, http.StatusUnprocessableEntity, "key-reused")
		assert.Equal(t, int64(1), r.p.executed.Load())
		assert.Equal(t, 1, r.env.effectsFor(key))
	})
}

func TestEachFrontDoorAnswersAConcurrentDuplicateWith409(t *testing.T) {
	eachDoor(t, func(t *testing.T, r *doorRun) {
		key := "block-" + r.name
		done := make(chan reply, 1)
		go func() { done <- r.send(t, call{key: key}) }()
		await(t, r.p.entered, done)

		dup := r.send(t, call{key: key})
		assertProblem(t, dup, http.StatusConflict, "in-flight")
		assert.NotEmpty(t, dup.header.Get("Retry-After"))

		r.p.unblock()
		first := <-done
		assert.Equal(t, http.StatusCreated, first.status, first.body)
		assert.Equal(t, int64(1), r.p.executed.Load())
		assert.Equal(t, 1, r.env.effectsFor(key))
	})
}

func TestEachFrontDoorFindsTheKeyHeaderWhateverItsCase(t *testing.T) {
	eachDoor(t, func(t *testing.T, r *doorRun) {
		key := r.name + "-lower"
		first := r.send(t, call{key: key, keyName: "idempotency-key"})
		require.Equal(t, http.StatusCreated, first.status, first.body)
		again := r.send(t, call{key: key, keyName: "IDEMPOTENCY-KEY"})
		assert.Equal(t, "true", again.header.Get(handler.ReplayedHeader))
		assert.Equal(t, first.body, again.body)
		_, err := r.env.store.Get(context.Background(), r.scope, key)
		assert.NoError(t, err)

		assertProblem(t, r.send(t, call{}), http.StatusBadRequest, "missing-key")
	})
}

func TestEachFrontDoorDecodesBase64BodiesBeforeFingerprinting(t *testing.T) {
	eachDoor(t, func(t *testing.T, r *doorRun) {
		key := r.name + "-b64"
		// The test's own JSON body, with its media type, sent
		// base64-encoded and then plain with other spacing: one request.
		first := r.send(t, call{key: key, body: text(`{"amount":1250,"currency":"EUR"}`), base64: true, contentType: "application/json"})
		require.Equal(t, http.StatusCreated, first.status, first.body)
		assert.Equal(t, `{"amount":1250,"currency":"EUR"}`, decodeSeen(t, first).Body)
		again := r.send(t, call{key: key, body: text(`{ "currency": "EUR", "amount": 1250 }`), contentType: "application/json"})
		assert.Equal(t, "true", again.header.Get(handler.ReplayedHeader))
		assert.Equal(t, int64(1), r.p.executed.Load())
	})
}

func TestEachFrontDoorBase64EncodesBinaryResponses(t *testing.T) {
	eachDoor(t, func(t *testing.T, r *doorRun) {
		key := "bin-" + r.name
		first := r.send(t, call{key: key})
		require.Equal(t, http.StatusCreated, first.status, first.body)
		assert.True(t, first.base64)
		assert.Equal(t, "\x89PNG\r\n\x1a\n\x01\xff\x00", first.body)
		again := r.send(t, call{key: key})
		assert.True(t, again.base64)
		assert.Equal(t, "true", again.header.Get(handler.ReplayedHeader))
		assert.Equal(t, first.body, again.body)
	})
}

func TestCookiesTravelInTheCookiesFields(t *testing.T) {
	eachDoor(t, func(t *testing.T, r *doorRun) {
		first := r.send(t, call{key: r.name + "-cookies"})
		require.Equal(t, http.StatusCreated, first.status, first.body)
		switch r.name {
		case "alb-single":
			// One value per header in single-value mode: the first cookie.
			assert.Equal(t, []string{"a=1; Path=/"}, first.header.Values("Set-Cookie"))
		default:
			assert.Equal(t, []string{"a=1; Path=/", "b=2; Expires=Wed, 21 Oct 2026 07:28:00 GMT"}, first.header.Values("Set-Cookie"))
		}
		switch r.sample {
		case "apigw-v2-request-iam.json", "apigw-v2-request-jwt-authorizer.json", "apigw-v2-request-lambda-authorizer.json", "lambda-urls-request.json":
			assert.Equal(t, "cookie1; cookie2", decodeSeen(t, first).Cookie, "the cookies field becomes one Cookie header")
		}
	})
}

func TestMultiValueHeadersReachTheHandler(t *testing.T) {
	want := map[string][]string{
		"rest-v1":   {"a", "b"},
		"alb-multi": {"a", "b"},
		// In single-value mode the load balancer passes the last value.
		"alb-single": {"b"},
		// HTTP APIs and Function URLs join repeated headers with commas.
		"http-v2-iam": {"a,b"}, "http-v2-jwt": {"a,b"}, "http-v2-lambda-authorizer": {"a,b"},
		"http-v2-no-authorizer": {"a,b"}, "function-url": {"a,b"},
	}
	eachDoor(t, func(t *testing.T, r *doorRun) {
		got := r.send(t, call{key: r.name + "-multi", multi: []string{"a", "b"}})
		require.Equal(t, http.StatusCreated, got.status, got.body)
		assert.Equal(t, want[r.name], decodeSeen(t, got).Multi)
	})
}

func TestALBAnswersInTheHeaderModeOfItsRequest(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, d := range []door{doorNamed(t, "alb-single"), doorNamed(t, "alb-multi")} {
		t.Run(d.name, func(t *testing.T) {
			r := d.invoke(t, ctx, guarded(e, newPayments(e), d), sample(t, d.sample), call{key: d.name + "-mode"})
			require.Equal(t, http.StatusCreated, r.status)
			multi := d.name == "alb-multi"
			assert.Equal(t, multi, r.multi, "multiValueHeaders set")
			assert.Equal(t, !multi, r.single, "headers set")
		})
	}
}

// TestAuthenticatedEventWithoutCallerIdentityGets401 uses two samples as
// they are: their JWT has no "sub" claim and their authorizer context
// neither "principalId" nor "sub", so the default scope rules cannot tell
// callers apart and refuse rather than share one scope.
func TestAuthenticatedEventWithoutCallerIdentityGets401(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, d := range []door{doorNamed(t, "http-v2-jwt"), doorNamed(t, "http-v2-lambda-authorizer")} {
		t.Run(d.name, func(t *testing.T) {
			p := newPayments(e)
			d.scopeOpts = nil
			r := d.invoke(t, ctx, guarded(e, p, d), sample(t, d.sample), call{key: d.name + "-401"})
			assertProblem(t, r, http.StatusUnauthorized, "unauthorized")
			assert.Equal(t, int64(0), p.executed.Load())
		})
	}
}

// A service with one caller states it (handler.Options.SingleCaller) in
// place of a scope rule: every request shares one scope, whatever the
// event says of its caller, and a scope alongside the statement is
// refused at construction.
func TestMiddlewareOfASingleCallerServiceSharesOneScope(t *testing.T) {
	e := newEnv(t)
	d := doorNamed(t, "http-v2-iam")
	p := newPayments(e)
	h := guarded(e, p, d, func(o *idemlambda.MiddlewareOptions) { o.Handler.SingleCaller = true })
	first := d.invoke(t, context.Background(), h, sample(t, d.sample), call{key: "single-caller"})
	require.Equal(t, http.StatusCreated, first.status, first.body)
	_, err := e.store.Get(context.Background(), "", "single-caller")
	assert.NoError(t, err, "the record is in the one scope, not the IAM caller's")

	assert.Panics(t, func() {
		idemlambda.Middleware(e.store, func(o *idemlambda.MiddlewareOptions) {
			o.Handler.SingleCaller = true
			o.Handler.Scope = idemlambda.Scope
		})
	})
}

// TestMiddlewareLeaseFollowsTheInvocationDeadline holds a request in
// flight and reads its record: the lock expires at the invocation's
// deadline plus the margin. The lease is measured on the wall clock
// (handler.LeaseFromDeadline) and added to the store's clock, so the
// expected expiry is bracketed by the wall-clock instants before and after
// the claim; no duration is asserted.
func TestMiddlewareLeaseFollowsTheInvocationDeadline(t *testing.T) {
	e := newEnv(t)
	d := doorNamed(t, "http-v2-iam")
	for _, tc := range []struct {
		name   string
		margin time.Duration
		want   time.Duration
	}{
		{"default margin", 0, idemlambda.DefaultLeaseMargin},
		{"configured margin", 2 * time.Second, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPayments(e)
			defer p.unblock()
			h := guarded(e, p, d, func(o *idemlambda.MiddlewareOptions) { o.LeaseMargin = tc.margin })
			deadline := time.Now().Add(40 * time.Second)
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			defer cancel()
			key := "block-lease-" + strings.ReplaceAll(tc.name, " ", "-")
			done := make(chan reply, 1)
			before := time.Now()
			go func() { done <- d.invoke(t, ctx, h, sample(t, d.sample), call{key: key}) }()
			await(t, p.entered, done)
			after := time.Now()
			rec, err := e.store.Get(context.Background(), d.scope, key)
			require.NoError(t, err)
			assert.Equal(t, dynamostore.StateInProgress, rec.State)
			lease := rec.LockExpires.Sub(e.clock.Now())
			assert.GreaterOrEqual(t, lease, deadline.Sub(after)+tc.want-time.Millisecond, "lock_exp is stored in milliseconds")
			assert.LessOrEqual(t, lease, deadline.Sub(before)+tc.want)
			p.unblock()
			assert.Equal(t, http.StatusCreated, (<-done).status)
		})
	}
	t.Run("no deadline: the store's lease", func(t *testing.T) {
		p := newPayments(e)
		defer p.unblock()
		h := guarded(e, p, d)
		done := make(chan reply, 1)
		go func() {
			done <- d.invoke(t, context.Background(), h, sample(t, d.sample), call{key: "block-lease-none"})
		}()
		await(t, p.entered, done)
		rec, err := e.store.Get(context.Background(), d.scope, "block-lease-none")
		require.NoError(t, err)
		assert.True(t, e.clock.Now().Add(time.Minute).Equal(rec.LockExpires), "lock expires %v", rec.LockExpires)
		p.unblock()
		assert.Equal(t, http.StatusCreated, (<-done).status)
	})
}

func TestInvalidEventsAreErrorsAndRunNothing(t *testing.T) {
	ran := false
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true })
	raw := sample(t, "apigw-v2-request-no-authorizer.json")
	var ev = must[events.APIGatewayV2HTTPRequest](t, raw)
	ev.Body, ev.IsBase64Encoded = "not base64!", true
	_, err := idemlambda.NewAPIGatewayV2(h)(context.Background(), ev)
	assert.ErrorIs(t, err, idemlambda.ErrInvalidEvent)
	var ee *idemlambda.EventError
	assert.True(t, errors.As(err, &ee))

	ev = must[events.APIGatewayV2HTTPRequest](t, raw)
	ev.RequestContext.HTTP.Method = "GET /x"
	_, err = idemlambda.NewAPIGatewayV2(h)(context.Background(), ev)
	assert.ErrorIs(t, err, idemlambda.ErrInvalidEvent)
	assert.False(t, ran)
}
