package lambda_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	idemlambda "github.com/idemkey/idemkey/lambda"
)

// sendKeys invokes a front door with the sample of d, POST, with one
// Idempotency-Key header per value of keys, in the form the front door's
// AWS service presents repeated headers: multiValueHeaders (REST API, ALB
// in multi-value mode; the REST API's headers holds the last value) or one
// value joined with "," (HTTP API, Function URL).
func sendKeys(t *testing.T, d door, h http.Handler, keys ...string) reply {
	t.Helper()
	ctx := context.Background()
	raw := sample(t, d.sample)
	last := keys[len(keys)-1]
	switch d.name {
	case "rest-v1":
		ev := must[events.APIGatewayProxyRequest](t, raw)
		setHeader(&ev.Headers, handler.HeaderName, last)
		setMultiHeader(&ev.MultiValueHeaders, handler.HeaderName, keys...)
		resp, err := idemlambda.NewAPIGatewayV1(h)(ctx, ev)
		require.NoError(t, err)
		return newReply(t, resp.StatusCode, resp.Headers, resp.MultiValueHeaders, nil, resp.Body, resp.IsBase64Encoded)
	case "alb-multi":
		ev := must[events.ALBTargetGroupRequest](t, raw)
		ev.HTTPMethod = http.MethodPost
		setMultiHeader(&ev.MultiValueHeaders, handler.HeaderName, keys...)
		resp, err := idemlambda.NewALB(h)(ctx, ev)
		require.NoError(t, err)
		return newReply(t, resp.StatusCode, resp.Headers, resp.MultiValueHeaders, nil, resp.Body, resp.IsBase64Encoded)
	case "function-url":
		ev := must[events.LambdaFunctionURLRequest](t, raw)
		ev.RequestContext.HTTP.Method = http.MethodPost
		setHeader(&ev.Headers, strings.ToLower(handler.HeaderName), strings.Join(keys, ","))
		resp, err := idemlambda.NewFunctionURL(h)(ctx, ev)
		require.NoError(t, err)
		return newReply(t, resp.StatusCode, resp.Headers, nil, resp.Cookies, resp.Body, resp.IsBase64Encoded)
	case "alb-single":
		t.Fatalf("a load balancer in single-value mode passes only the last value of a repeated header")
	}
	ev := must[events.APIGatewayV2HTTPRequest](t, raw)
	ev.RequestContext.HTTP.Method = http.MethodPost
	setHeader(&ev.Headers, strings.ToLower(handler.HeaderName), strings.Join(keys, ","))
	resp, err := idemlambda.NewAPIGatewayV2(h)(ctx, ev)
	require.NoError(t, err)
	return newReply(t, resp.StatusCode, resp.Headers, resp.MultiValueHeaders, resp.Cookies, resp.Body, resp.IsBase64Encoded)
}

// A request that repeats the Idempotency-Key header gets net/http's
// answer on every front door that can see the repetition: 400 invalid-key,
// the same problem document, and nothing runs. HTTP APIs and Function URLs
// join the repeated header into one value, "a,b"; a key that does hold a
// comma is sent quoted, `"a,b"`, and is one key everywhere.
func TestRepeatedIdempotencyKeyGetsNetHTTPs400OnEveryFrontDoor(t *testing.T) {
	e := newEnv(t)
	viaNet := func(t *testing.T, values ...string) reply {
		p := newPayments(e)
		srv := httptest.NewServer(handler.New(e.store, func(o *handler.Options) {
			o.Scope = func(*http.Request) (string, error) { return "net", nil }
		})(p))
		defer srv.Close()
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/payments", strings.NewReader(`{"a":1}`))
		require.NoError(t, err)
		for _, v := range values {
			req.Header.Add(handler.HeaderName, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, int64(0), p.executed.Load())
		return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
	}
	want := viaNet(t, "a", "b")
	assertProblem(t, want, http.StatusBadRequest, "invalid-key")
	oneLine := viaNet(t, "a,b")
	assertProblem(t, oneLine, http.StatusBadRequest, "invalid-key")

	for _, d := range doors {
		if d.name == "alb-single" {
			continue // the load balancer passes the last value only (see NewALB)
		}
		t.Run(d.name, func(t *testing.T) {
			p := newPayments(e)
			h := guarded(e, p, d)
			got := sendKeys(t, d, h, "a-"+d.name, "b-"+d.name)
			assertProblem(t, got, http.StatusBadRequest, "invalid-key")
			assert.Equal(t, want.body, got.body, "net/http's problem document")
			assert.Equal(t, int64(0), p.executed.Load(), "nothing runs")
			for _, key := range []string{"a-" + d.name, "b-" + d.name, "a-" + d.name + ",b-" + d.name} {
				_, err := e.store.Get(context.Background(), d.scope, key)
				assert.ErrorIs(t, err, dynamostore.ErrNotFound, "no key claimed: %s", key)
			}

			quoted := `"a,` + d.name + `"`
			first := sendKeys(t, d, h, quoted)
			require.Equal(t, http.StatusCreated, first.status, "a quoted comma is part of one key: %s", first.body)
			again := sendKeys(t, d, h, quoted)
			assert.Equal(t, "true", again.header.Get(handler.ReplayedHeader))
			_, err := e.store.Get(context.Background(), d.scope, "a,"+d.name)
			assert.NoError(t, err, "the record's key holds the comma")
		})
	}
}
