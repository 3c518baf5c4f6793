package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/examples/payments/paymentsapi"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/deploytest"
	"github.com/idemkey/idemkey/localstack"
)

// jwtEvent is aws-lambda-go's HTTP API sample with a JWT authorizer: a
// call whose bearer token API Gateway verified, with the token's sub claim.
func jwtEvent(t *testing.T, token, sub, method, path, key, body string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "apigw-v2-request-jwt-authorizer.json"))
	require.NoError(t, err)
	var ev events.APIGatewayV2HTTPRequest
	require.NoError(t, json.Unmarshal(raw, &ev))
	require.NotNil(t, ev.RequestContext.Authorizer)
	require.NotNil(t, ev.RequestContext.Authorizer.JWT)
	ev.RequestContext.Authorizer.JWT.Claims["sub"] = sub
	ev.RequestContext.HTTP.Method, ev.RawPath, ev.Body = method, path, body
	ev.Headers["authorization"] = "Bearer " + token
	if body != "" {
		ev.Headers["content-type"] = "application/json"
	}
	if key != "" {
		ev.Headers["idempotency-key"] = key
	}
	return ev
}

// Behind the template's JWT authorizer a client refreshes its token every
// hour or so: its retries, payments and keys must follow its subject, not
// the token of the moment.
func TestBehindAJWTAuthorizerTheCallerIsTheTokensSubjectNotTheToken(t *testing.T) {
	ep, cfg := paymentTables(t)
	ctx := context.Background()
	fn := newFunction(ep.Client, cfg)
	call := func(ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
		t.Helper()
		resp, err := fn(ctx, ev)
		require.NoError(t, err)
		return resp
	}
	count := func(token, sub string) int {
		t.Helper()
		resp := call(jwtEvent(t, token, sub, "GET", "/payments", "", ""))
		require.Equal(t, 200, resp.StatusCode, resp.Body)
		var list struct{ Count int }
		require.NoError(t, json.Unmarshal([]byte(resp.Body), &list))
		return list.Count
	}
	body := `{"amount":1250,"currency":"EUR"}`

	first := call(jwtEvent(t, "token-1", "user-1", "POST", "/payments", "order-42", body))
	require.Equal(t, 201, first.StatusCode, first.Body)
	retry := call(jwtEvent(t, "token-2", "user-1", "POST", "/payments", "order-42", body))
	assert.Equal(t, 201, retry.StatusCode)
	assert.Equal(t, "true", retry.Headers["Idempotent-Replayed"], "a retry with a refreshed token is the same caller's")
	assert.JSONEq(t, first.Body, retry.Body)
	assert.Equal(t, 1, count("token-3", "user-1"))

	other := call(jwtEvent(t, "token-1", "user-2", "POST", "/payments", "order-42", body))
	assert.Equal(t, 201, other.StatusCode)
	assert.Empty(t, other.Headers["Idempotent-Replayed"], "another subject's key of the same name is its own")
	assert.NotEqual(t, first.Body, other.Body)
	assert.Equal(t, 1, count("token-1", "user-2"))
}

// TestTheTemplatesEnvironmentIsOneTheFunctionStartsWith resolves the
// PaymentsFunction's environment in template.yaml for parameter values at
// the edges of what the stack accepts, and builds the function from it as
// main does: every variable the template sets is one the function reads,
// and none makes it refuse to start.
func TestTheTemplatesEnvironmentIsOneTheFunctionStartsWith(t *testing.T) {
	tpl, err := deploytest.Load()
	require.NoError(t, err)
	ep := localstack.ForTest(t)
	for _, p := range []deploytest.Params{
		nil,
		{"RetentionHours": "1", "LeaseSeconds": "3600"},
		{"RetentionHours": "168", "LeaseSeconds": "30"},
	} {
		require.NoError(t, tpl.Check(p), "%v", p)
		env, err := tpl.Environment(p, "PaymentsFunction")
		require.NoError(t, err)
		vars := deploytest.NewEnv(env)
		cfg, err := configFrom(vars.Getenv)
		require.NoError(t, err, "%v: %v", p, env)
		assert.Empty(t, vars.Unread(), "variables the template sets and the function does not read")
		assert.Equal(t, "KeyTable", cfg.KeyTable)
		assert.Equal(t, "PaymentsTable", cfg.PaymentTable)
		assert.NotPanics(t, func() { newFunction(ep.Client, cfg) }, "%v", p)
	}
}

// A route whose authorizer names no identity the function reads (a Lambda
// authorizer's context without principalId or sub) is refused: the
// client's own Authorization header would otherwise choose the caller.
func TestARouteWithAnAuthorizerButNoIdentityIsUnauthorized(t *testing.T) {
	ep, cfg := paymentTables(t)
	ctx := context.Background()
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "apigw-v2-request-lambda-authorizer.json"))
	require.NoError(t, err)
	var ev events.APIGatewayV2HTTPRequest
	require.NoError(t, json.Unmarshal(raw, &ev))
	ev.RequestContext.Authorizer.Lambda = map[string]any{"tenant": "chosen-by-nobody"}
	ev.RequestContext.HTTP.Method, ev.RawPath = "POST", "/payments"
	ev.Body, ev.IsBase64Encoded = `{"amount":1250,"currency":"EUR"}`, false
	ev.Headers = map[string]string{"authorization": "Bearer someone-else", "content-type": "application/json", "idempotency-key": "order-1"}
	resp, err := newFunction(ep.Client, cfg)(ctx, ev)
	require.NoError(t, err)
	assert.Equal(t, 401, resp.StatusCode, resp.Body)
	assert.Contains(t, resp.Body, "principalId")
	out, err := ep.Client.Scan(ctx, &dynamodb.ScanInput{TableName: &cfg.PaymentTable})
	require.NoError(t, err)
	assert.Zero(t, out.Count, "no payment written")
}

// paymentTables creates the payments API's two tables on the test's
// endpoint, deleted when the test ends.
func paymentTables(t *testing.T) (*localstack.Endpoint, paymentsapi.Config) {
	t.Helper()
	ep := localstack.ForTest(t)
	cfg := paymentsapi.Config{KeyTable: localstack.TableName("keys"), PaymentTable: localstack.TableName("payments"), Retention: time.Hour}
	require.NoError(t, paymentsapi.EnsureTables(context.Background(), ep.Client, cfg))
	for _, name := range []string{cfg.KeyTable, cfg.PaymentTable} {
		ddbtest.DeleteOnCleanup(t, ep.Client, name)
	}
	return ep, cfg
}
