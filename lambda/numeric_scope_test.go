package lambda_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	idemlambda "github.com/idemkey/idemkey/lambda"
)

// v2LambdaAuthorizerEvent returns an HTTP API event whose Lambda
// authorizer context is ctxJSON, decoded as aws-lambda-go decodes an
// event (encoding/json, numbers as float64 unless useNumber).
func v2LambdaAuthorizerEvent(t *testing.T, ctxJSON string, useNumber bool) events.APIGatewayV2HTTPRequest {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(sample(t, "apigw-v2-request-lambda-authorizer.json"), &m))
	var lctx any
	dec := json.NewDecoder(bytes.NewReader([]byte(ctxJSON)))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&lctx))
	m["requestContext"].(map[string]any)["authorizer"] = map[string]any{"lambda": lctx}
	raw, err := json.Marshal(m)
	require.NoError(t, err)
	var ev events.APIGatewayV2HTTPRequest
	dec = json.NewDecoder(bytes.NewReader(raw))
	if useNumber {
		dec.UseNumber() // lambda.WithUseNumber(true)
	}
	require.NoError(t, dec.Decode(&ev))
	return ev
}

// Two callers that a Lambda authorizer names by distinct numeric ids above
// 2^53 (64-bit ids) decode to one float64: the ids count as absent (401),
// never as one scope for both.
func TestNumericAuthorizerIdsThatFloat64RoundsAreNoScope(t *testing.T) {
	for _, id := range []string{"9007199254740993", "9007199254740992", "1.5", "-9007199254740993"} {
		_, err := scopeOf(t, v2LambdaAuthorizerEvent(t, `{"principalId": `+id+`}`, false), idemlambda.Scope)
		assert.ErrorIs(t, err, idemlambda.ErrNoScope, id)
	}
	s, err := scopeOf(t, v2LambdaAuthorizerEvent(t, `{"principalId": 9007199254740991}`, false), idemlambda.Scope)
	require.NoError(t, err)
	assert.Equal(t, "authorizer:9007199254740991", s, "below 2^53 a float64 holds every integer")
}

// End to end: the second caller is not replayed the first's response.
func TestNumericAuthorizerIdsAbove2to53NeverShareAStoredResponse(t *testing.T) {
	e := newEnv(t)
	p := newPayments(e)
	defer p.unblock()
	fn := idemlambda.NewAPIGatewayV2(idemlambda.Middleware(e.store)(p))
	for _, id := range []string{"9007199254740993", "9007199254740992"} {
		ev := v2LambdaAuthorizerEvent(t, `{"principalId": `+id+`}`, false)
		ev.RequestContext.HTTP.Method = http.MethodPost
		ev.Headers = map[string]string{"idempotency-key": "order-1", "content-type": "application/json"}
		ev.Body, ev.IsBase64Encoded = `{"amount":1}`, false
		resp, err := fn(context.Background(), ev)
		require.NoError(t, err)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, id)
	}
	assert.Zero(t, p.executed.Load())
}

// With lambda.WithUseNumber(true) a numeric id is a json.Number, used as
// its text: exact at any size.
func TestNumericAuthorizerIdAsJSONNumberIsItsText(t *testing.T) {
	for _, id := range []string{"42", "9007199254740993"} {
		s, err := scopeOf(t, v2LambdaAuthorizerEvent(t, `{"principalId": `+id+`}`, true), idemlambda.Scope)
		require.NoError(t, err)
		assert.Equal(t, "authorizer:"+id, s)
	}
}
