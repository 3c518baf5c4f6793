package lambda_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	idemlambda "github.com/idemkey/idemkey/lambda"
)

// Alice and Bob use one client application, so API Gateway sees the same
// usage-plan API key (the REST sample's apiKeyId) on both their requests;
// what tells them apart is their identity: the authorizer's principal,
// their Cognito sub, or their IAM user. With the same Idempotency-Key and
// the same body, each gets an execution of their own, and each retry
// replays their own answer.
func TestAliceAndBobSharingAnAPIKeyGetSeparateExecutionsBehindRESTAPI(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name string
		as   func(ev *events.APIGatewayProxyRequest, user string)
	}{
		{"Lambda authorizer", func(ev *events.APIGatewayProxyRequest, user string) {
			ev.RequestContext.Authorizer["principalId"] = user
		}},
		{"Cognito user pool", func(ev *events.APIGatewayProxyRequest, user string) {
			ev.RequestContext.Authorizer = map[string]any{"claims": map[string]any{"sub": user}}
		}},
		{"IAM", func(ev *events.APIGatewayProxyRequest, user string) {
			ev.RequestContext.Authorizer = nil
			noCognito(&ev.RequestContext.Identity)
			ev.RequestContext.Identity.UserArn = "arn:aws:iam::123456789012:user/" + user
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPayments(e)
			fn := idemlambda.NewAPIGatewayV1(idemlambda.Middleware(e.store)(p))
			key := "shared-app-" + strings.ReplaceAll(tc.name, " ", "-")
			send := func(user string) events.APIGatewayProxyResponse {
				ev := must[events.APIGatewayProxyRequest](t, sample(t, "apigw-request.json"))
				require.Equal(t, "theApiKeyId", ev.RequestContext.Identity.APIKeyID, "the sample's API key, on every request")
				tc.as(&ev, user)
				ev.Headers[handler.HeaderName] = key
				ev.MultiValueHeaders[handler.HeaderName] = []string{key}
				resp, err := fn(context.Background(), ev)
				require.NoError(t, err)
				return resp
			}
			alice := send("alice")
			require.Equal(t, http.StatusCreated, alice.StatusCode, alice.Body)
			bob := send("bob")
			require.Equal(t, http.StatusCreated, bob.StatusCode, bob.Body)
			assert.Empty(t, bob.MultiValueHeaders[handler.ReplayedHeader], "bob's request executes: alice's answer is not his")
			assert.NotEqual(t, alice.Body, bob.Body)
			assert.Equal(t, int64(2), p.executed.Load())
			assert.Equal(t, 2, e.effectsFor(key))

			for user, first := range map[string]events.APIGatewayProxyResponse{"alice": alice, "bob": bob} {
				again := send(user)
				assert.Equal(t, []string{"true"}, again.MultiValueHeaders[handler.ReplayedHeader], user)
				assert.Equal(t, first.Body, again.Body, "%s gets their own answer", user)
			}
			assert.Equal(t, int64(2), p.executed.Load())
		})
	}
}

// An HTTP API (v2) or Function URL event with an authorizer section that
// names no caller is authenticated, but by nobody the scope rules know:
// the request gets 401 and runs nothing, rather than sharing the scope ""
// with every other caller.
func TestAuthorizerSectionWithoutIdentityGets401NotTheSharedScope(t *testing.T) {
	e := newEnv(t)
	// Each case sends its own key, so that none meets another's record.
	keyOf := func(t *testing.T) string { return "no-identity-" + strings.ReplaceAll(t.Name(), "/", "-") }
	v2 := func(name string, edit func(*events.APIGatewayV2HTTPRequestContextAuthorizerDescription) *events.APIGatewayV2HTTPRequestContextAuthorizerDescription) func(t *testing.T, h http.Handler) events.APIGatewayV2HTTPResponse {
		return func(t *testing.T, h http.Handler) events.APIGatewayV2HTTPResponse {
			ev := must[events.APIGatewayV2HTTPRequest](t, sample(t, name))
			ev.RequestContext.Authorizer = edit(ev.RequestContext.Authorizer)
			ev.RequestContext.HTTP.Method = http.MethodPost
			ev.Headers[handler.HeaderName] = keyOf(t)
			resp, err := idemlambda.NewAPIGatewayV2(h)(context.Background(), ev)
			require.NoError(t, err)
			return resp
		}
	}
	for _, tc := range []struct {
		name string
		send func(t *testing.T, h http.Handler) events.APIGatewayV2HTTPResponse
	}{
		{"v2 empty authorizer section", v2("apigw-v2-request-no-authorizer.json",
			func(*events.APIGatewayV2HTTPRequestContextAuthorizerDescription) *events.APIGatewayV2HTTPRequestContextAuthorizerDescription {
				return &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{}
			})},
		{"v2 Lambda authorizer with an empty context", v2("apigw-v2-request-lambda-authorizer.json",
			func(a *events.APIGatewayV2HTTPRequestContextAuthorizerDescription) *events.APIGatewayV2HTTPRequestContextAuthorizerDescription {
				a.Lambda = map[string]any{}
				return a
			})},
		{"Function URL authorizer section without IAM", func(t *testing.T, h http.Handler) events.APIGatewayV2HTTPResponse {
			ev := must[events.LambdaFunctionURLRequest](t, sample(t, "lambda-urls-request.json"))
			ev.RequestContext.Authorizer.IAM = nil
			ev.Headers[handler.HeaderName] = keyOf(t)
			resp, err := idemlambda.NewFunctionURL(h)(context.Background(), ev)
			require.NoError(t, err)
			return events.APIGatewayV2HTTPResponse{StatusCode: resp.StatusCode, Headers: resp.Headers, Body: resp.Body}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPayments(e)
			resp := tc.send(t, idemlambda.Middleware(e.store)(p))
			assertProblem(t, reply{status: resp.StatusCode, header: headerOfMap(resp.Headers), body: resp.Body}, http.StatusUnauthorized, "unauthorized")
			assert.Equal(t, int64(0), p.executed.Load(), "nothing runs")
			_, err := e.store.Get(context.Background(), "", keyOf(t))
			assert.ErrorIs(t, err, dynamostore.ErrNotFound, "no record in the shared scope")
		})
	}
}

func headerOfMap(m map[string]string) http.Header {
	h := http.Header{}
	for k, v := range m {
		h.Set(k, v)
	}
	return h
}
