package lambda_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/handler"
	idemlambda "github.com/idemkey/idemkey/lambda"
)

// Behind API Gateway the scope is the caller from the event (here the JWT
// subject): another caller's use of a key can never replay, block (409) or
// reveal (422) anything. The event is aws-lambda-go's JWT sample; the test
// sets the subject, the method and the body.
func TestAnotherCallersKeyNeverReplaysBlocksOrRevealsBehindAPIGateway(t *testing.T) {
	e := newEnv(t)
	p := newPayments(e)
	defer p.unblock()
	fn := idemlambda.NewAPIGatewayV2(idemlambda.Middleware(e.store)(p))
	invoke := func(sub, key, body string) events.APIGatewayV2HTTPResponse {
		var ev events.APIGatewayV2HTTPRequest
		require.NoError(t, json.Unmarshal(sample(t, "apigw-v2-request-jwt-authorizer.json"), &ev))
		ev.RequestContext.Authorizer.JWT.Claims["sub"] = sub
		ev.RequestContext.HTTP.Method = "POST"
		ev.Headers[handler.HeaderName] = key
		ev.Body, ev.IsBase64Encoded = body, false
		resp, err := fn(context.Background(), ev)
		require.NoError(t, err)
		return resp
	}

	done := make(chan events.APIGatewayV2HTTPResponse, 1)
	go func() { done <- invoke("alice", "block-shared", `{"a":1}`) }()
	await(t, p.entered, done)

	blocked := invoke("bob", "shared-other", `{"a":1}`)
	assert.Equal(t, 201, blocked.StatusCode)
	// bob's own use of alice's held key: not 409, it executes (held too).
	bobDone := make(chan events.APIGatewayV2HTTPResponse, 1)
	go func() { bobDone <- invoke("bob", "block-shared", `{"a":1}`) }()
	await(t, p.entered, bobDone)
	p.unblock()
	assert.Equal(t, 201, (<-done).StatusCode)
	bobFirst := <-bobDone
	assert.Equal(t, 201, bobFirst.StatusCode, "alice's key in flight does not block bob")
	assert.Empty(t, bobFirst.Headers[handler.ReplayedHeader])

	revealed := invoke("carol", "block-shared", `{"different":true}`)
	assert.Equal(t, 201, revealed.StatusCode, "no 422: alice's use of the key is invisible to carol")
	assert.Empty(t, revealed.Headers[handler.ReplayedHeader])
	assert.Equal(t, 3, e.effectsFor("block-shared"), "one execution per caller")

	again := invoke("alice", "block-shared", `{"a":1}`)
	assert.Equal(t, "true", again.Headers[handler.ReplayedHeader], "alice still gets her own replay")
}
