package lambda_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	idemlambda "github.com/idemkey/idemkey/lambda"
)

// scopeOf serves ev through its front door to a handler that applies
// scopeFn, and returns what it returned.
func scopeOf(t *testing.T, ev any, scopeFn func(*http.Request) (string, error)) (string, error) {
	t.Helper()
	var scope string
	var err error
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { scope, err = scopeFn(r) })
	ctx := context.Background()
	var callErr error
	switch ev := ev.(type) {
	case events.APIGatewayProxyRequest:
		_, callErr = idemlambda.NewAPIGatewayV1(h)(ctx, ev)
	case events.APIGatewayV2HTTPRequest:
		_, callErr = idemlambda.NewAPIGatewayV2(h)(ctx, ev)
	case events.ALBTargetGroupRequest:
		_, callErr = idemlambda.NewALB(h)(ctx, ev)
	case events.LambdaFunctionURLRequest:
		_, callErr = idemlambda.NewFunctionURL(h)(ctx, ev)
	default:
		t.Fatalf("no front door for %T", ev)
	}
	require.NoError(t, callErr)
	return scope, err
}

func TestDefaultScopesOfTheSamples(t *testing.T) {
	for _, tc := range []struct {
		sample string
		ev     any
		want   string
		noID   bool
	}{
		{"apigw-request.json", must[events.APIGatewayProxyRequest](t, sample(t, "apigw-request.json")), "apikey:theApiKeyId", false},
		{"apigw-v2-request-iam.json", must[events.APIGatewayV2HTTPRequest](t, sample(t, "apigw-v2-request-iam.json")), "iam:arn:aws:iam::1234567890:user/Admin", false},
		{"apigw-v2-request-no-authorizer.json", must[events.APIGatewayV2HTTPRequest](t, sample(t, "apigw-v2-request-no-authorizer.json")), "", false},
		{"apigw-v2-request-jwt-authorizer.json", must[events.APIGatewayV2HTTPRequest](t, sample(t, "apigw-v2-request-jwt-authorizer.json")), "", true},
		{"apigw-v2-request-lambda-authorizer.json", must[events.APIGatewayV2HTTPRequest](t, sample(t, "apigw-v2-request-lambda-authorizer.json")), "", true},
		{"alb-lambda-target-request-headers-only.json", must[events.ALBTargetGroupRequest](t, sample(t, "alb-lambda-target-request-headers-only.json")), "", false},
		{"alb-lambda-target-request-multivalue-headers.json", must[events.ALBTargetGroupRequest](t, sample(t, "alb-lambda-target-request-multivalue-headers.json")), "", false},
		{"lambda-urls-request.json", must[events.LambdaFunctionURLRequest](t, sample(t, "lambda-urls-request.json")), "iam:arn:aws:iam::111122223333:user/example-user", false},
	} {
		t.Run(tc.sample, func(t *testing.T) {
			got, err := scopeOf(t, tc.ev, idemlambda.Scope)
			if tc.noID {
				assert.ErrorIs(t, err, idemlambda.ErrNoScope)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestScopeRulesFallBackInTheirDocumentedOrder edits loaded samples to
// reach each branch of the rules.
func TestScopeRulesFallBackInTheirDocumentedOrder(t *testing.T) {
	v1 := func(edit func(*events.APIGatewayProxyRequest)) events.APIGatewayProxyRequest {
		ev := must[events.APIGatewayProxyRequest](t, sample(t, "apigw-request.json"))
		edit(&ev)
		return ev
	}
	v2 := func(name string, edit func(*events.APIGatewayV2HTTPRequest)) events.APIGatewayV2HTTPRequest {
		ev := must[events.APIGatewayV2HTTPRequest](t, sample(t, name))
		edit(&ev)
		return ev
	}
	url := func(edit func(*events.LambdaFunctionURLRequest)) events.LambdaFunctionURLRequest {
		ev := must[events.LambdaFunctionURLRequest](t, sample(t, "lambda-urls-request.json"))
		edit(&ev)
		return ev
	}
	for _, tc := range []struct {
		name string
		ev   any
		want string
		err  error
	}{
		{"v1 without API key: the authorizer's principal", v1(func(e *events.APIGatewayProxyRequest) {
			e.RequestContext.Identity.APIKeyID = ""
		}), "authorizer:admin", nil},
		{"v1 Cognito authorizer: the sub claim", v1(func(e *events.APIGatewayProxyRequest) {
			e.RequestContext.Identity.APIKeyID = ""
			e.RequestContext.Authorizer = map[string]any{"claims": map[string]any{"sub": "u-1"}}
		}), "jwt:u-1", nil},
		{"v1 authorizer without identity", v1(func(e *events.APIGatewayProxyRequest) {
			e.RequestContext.Identity.APIKeyID = ""
			e.RequestContext.Authorizer = map[string]any{"clientId": "x"}
		}), "", idemlambda.ErrNoScope},
		{"v1 numeric principal", v1(func(e *events.APIGatewayProxyRequest) {
			e.RequestContext.Identity.APIKeyID = ""
			e.RequestContext.Authorizer = map[string]any{"principalId": float64(42)}
		}), "authorizer:42", nil},
		{"v1 IAM authorization", v1(func(e *events.APIGatewayProxyRequest) {
			e.RequestContext.Identity.APIKeyID = ""
			e.RequestContext.Authorizer = nil
		}), "iam:theUserArn", nil},
		{"v1 no authorization", v1(func(e *events.APIGatewayProxyRequest) {
			e.RequestContext.Identity = events.APIGatewayRequestIdentity{}
			e.RequestContext.Authorizer = nil
		}), "", nil},
		{"v2 JWT with sub", v2("apigw-v2-request-jwt-authorizer.json", func(e *events.APIGatewayV2HTTPRequest) {
			e.RequestContext.Authorizer.JWT.Claims["sub"] = "user-7"
		}), "jwt:user-7", nil},
		{"v2 Lambda authorizer with principalId", v2("apigw-v2-request-lambda-authorizer.json", func(e *events.APIGatewayV2HTTPRequest) {
			e.RequestContext.Authorizer.Lambda["principalId"] = "p-1"
		}), "authorizer:p-1", nil},
		{"v2 Lambda authorizer with sub", v2("apigw-v2-request-lambda-authorizer.json", func(e *events.APIGatewayV2HTTPRequest) {
			e.RequestContext.Authorizer.Lambda["sub"] = "s-1"
		}), "authorizer:s-1", nil},
		{"v2 IAM without user ARN: the caller id", v2("apigw-v2-request-iam.json", func(e *events.APIGatewayV2HTTPRequest) {
			e.RequestContext.Authorizer.IAM.UserARN = ""
		}), "iam:AROA7ZJZYVRE7C3DUXHH6:CognitoIdentityCredentials", nil},
		{"v2 IAM without identity", v2("apigw-v2-request-iam.json", func(e *events.APIGatewayV2HTTPRequest) {
			e.RequestContext.Authorizer.IAM = &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{}
		}), "", idemlambda.ErrNoScope},
		{"URL without authorizer", url(func(e *events.LambdaFunctionURLRequest) {
			e.RequestContext.Authorizer = nil
		}), "", nil},
		{"URL IAM caller id", url(func(e *events.LambdaFunctionURLRequest) {
			e.RequestContext.Authorizer.IAM.UserARN = ""
		}), "iam:AIDA...", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := scopeOf(t, tc.ev, idemlambda.Scope)
			if tc.err != nil {
				assert.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestScopeOptionsNameTheClaimAndTheAuthorizerKeys(t *testing.T) {
	got, err := scopeOf(t, must[events.APIGatewayV2HTTPRequest](t, sample(t, "apigw-v2-request-jwt-authorizer.json")),
		idemlambda.EventScope(func(o *idemlambda.ScopeOptions) { o.JWTClaim = "claim2" }))
	require.NoError(t, err)
	assert.Equal(t, "jwt:value2", got)

	got, err = scopeOf(t, must[events.APIGatewayV2HTTPRequest](t, sample(t, "apigw-v2-request-lambda-authorizer.json")),
		idemlambda.EventScope(func(o *idemlambda.ScopeOptions) { o.AuthorizerKeys = []string{"missing", "key"} }))
	require.NoError(t, err)
	assert.Equal(t, "authorizer:value", got)
}

func TestScopeOutsideAFrontDoorIsAnError(t *testing.T) {
	_, err := idemlambda.Scope(httptest.NewRequest("POST", "/", nil))
	assert.ErrorIs(t, err, idemlambda.ErrNoEvent)
}
