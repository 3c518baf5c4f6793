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
		err    error
	}{
		{"apigw-request.json", must[events.APIGatewayProxyRequest](t, sample(t, "apigw-request.json")), "authorizer:admin", nil},
		{"apigw-v2-request-iam.json", must[events.APIGatewayV2HTTPRequest](t, sample(t, "apigw-v2-request-iam.json")), sampleCognitoScope, nil},
		// No authorization: nothing tells callers apart.
		{"apigw-v2-request-no-authorizer.json", must[events.APIGatewayV2HTTPRequest](t, sample(t, "apigw-v2-request-no-authorizer.json")), "", idemlambda.ErrNoScope},
		// No "sub" claim, no "principalId" or "sub" in the context.
		{"apigw-v2-request-jwt-authorizer.json", must[events.APIGatewayV2HTTPRequest](t, sample(t, "apigw-v2-request-jwt-authorizer.json")), "", idemlambda.ErrNoScope},
		{"apigw-v2-request-lambda-authorizer.json", must[events.APIGatewayV2HTTPRequest](t, sample(t, "apigw-v2-request-lambda-authorizer.json")), "", idemlambda.ErrNoScope},
		// A load balancer authenticates no caller.
		{"alb-lambda-target-request-headers-only.json", must[events.ALBTargetGroupRequest](t, sample(t, "alb-lambda-target-request-headers-only.json")), "", idemlambda.ErrNoScope},
		{"alb-lambda-target-request-multivalue-headers.json", must[events.ALBTargetGroupRequest](t, sample(t, "alb-lambda-target-request-multivalue-headers.json")), "", idemlambda.ErrNoScope},
		{"lambda-urls-request.json", must[events.LambdaFunctionURLRequest](t, sample(t, "lambda-urls-request.json")), "iam:arn:aws:iam::111122223333:user/example-user", nil},
	} {
		t.Run(tc.sample, func(t *testing.T) {
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
		{"v1 authorizer and API key: the authorizer's principal", v1(func(e *events.APIGatewayProxyRequest) {}), "authorizer:admin", nil},
		{"v1 without API key: the authorizer's principal", v1(func(e *events.APIGatewayProxyRequest) {
			e.RequestContext.Identity.APIKeyID = ""
		}), "authorizer:admin", nil},
		{"v1 Cognito authorizer and API key: the sub claim", v1(func(e *events.APIGatewayProxyRequest) {
			e.RequestContext.Authorizer = map[string]any{"claims": map[string]any{"sub": "u-2"}}
		}), "jwt:0::u-2", nil},
		{"v1 authorizer without identity, with an API key", v1(func(e *events.APIGatewayProxyRequest) {
			e.RequestContext.Authorizer = map[string]any{"clientId": "x"}
		}), "", idemlambda.ErrNoScope},
		{"v1 Cognito identity pool caller and API key: the Cognito identity", v1(func(e *events.APIGatewayProxyRequest) {
			e.RequestContext.Authorizer = nil
		}), "cognito:24:theCognitoIdentityPoolId:theCognitoIdentityId", nil},
		{"v1 IAM authorization and API key: the IAM caller", v1(func(e *events.APIGatewayProxyRequest) {
			e.RequestContext.Authorizer = nil
			noCognito(&e.RequestContext.Identity)
		}), "iam:theUserArn", nil},
		{"v1 IAM caller without user ARN", v1(func(e *events.APIGatewayProxyRequest) {
			e.RequestContext.Authorizer = nil
			noCognito(&e.RequestContext.Identity)
			e.RequestContext.Identity.UserArn = ""
		}), "iam:theCaller", nil},
		{"v1 Cognito role session without identity id", v1(func(e *events.APIGatewayProxyRequest) {
			e.RequestContext.Authorizer = nil
			noCognito(&e.RequestContext.Identity)
			e.RequestContext.Identity.UserArn = "arn:aws:sts::123456789012:assumed-role/app-auth/CognitoIdentityCredentials"
		}), "", idemlambda.ErrNoScope},
		{"v1 API key alone", v1(func(e *events.APIGatewayProxyRequest) {
			e.RequestContext.Authorizer = nil
			e.RequestContext.Identity = events.APIGatewayRequestIdentity{APIKeyID: "theApiKeyId", SourceIP: "192.168.196.186"}
		}), "apikey:theApiKeyId", nil},
		{"v1 Cognito authorizer: the sub claim", v1(func(e *events.APIGatewayProxyRequest) {
			e.RequestContext.Identity.APIKeyID = ""
			e.RequestContext.Authorizer = map[string]any{"claims": map[string]any{"sub": "u-1"}}
		}), "jwt:0::u-1", nil},
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
			noCognito(&e.RequestContext.Identity)
		}), "iam:theUserArn", nil},
		{"v1 no authorization", v1(func(e *events.APIGatewayProxyRequest) {
			e.RequestContext.Identity = events.APIGatewayRequestIdentity{SourceIP: "192.168.196.186"}
			e.RequestContext.Authorizer = nil
		}), "", idemlambda.ErrNoScope},
		{"v2 JWT with sub", v2("apigw-v2-request-jwt-authorizer.json", func(e *events.APIGatewayV2HTTPRequest) {
			e.RequestContext.Authorizer.JWT.Claims["sub"] = "user-7"
		}), "jwt:0::user-7", nil},
		{"v2 Lambda authorizer with principalId", v2("apigw-v2-request-lambda-authorizer.json", func(e *events.APIGatewayV2HTTPRequest) {
			e.RequestContext.Authorizer.Lambda["principalId"] = "p-1"
		}), "authorizer:p-1", nil},
		{"v2 Lambda authorizer with sub", v2("apigw-v2-request-lambda-authorizer.json", func(e *events.APIGatewayV2HTTPRequest) {
			e.RequestContext.Authorizer.Lambda["sub"] = "s-1"
		}), "authorizer:s-1", nil},
		{"v2 IAM Cognito identity before the user ARN", v2("apigw-v2-request-iam.json", func(e *events.APIGatewayV2HTTPRequest) {}),
			sampleCognitoScope, nil},
		{"v2 IAM user", v2("apigw-v2-request-iam.json", func(e *events.APIGatewayV2HTTPRequest) {
			e.RequestContext.Authorizer.IAM.CognitoIdentity = events.APIGatewayV2HTTPRequestContextAuthorizerCognitoIdentity{}
			e.RequestContext.Authorizer.IAM.CallerID = "AIDAEXAMPLE"
		}), "iam:arn:aws:iam::1234567890:user/Admin", nil},
		{"v2 IAM without user ARN: the caller id", v2("apigw-v2-request-iam.json", func(e *events.APIGatewayV2HTTPRequest) {
			e.RequestContext.Authorizer.IAM.CognitoIdentity = events.APIGatewayV2HTTPRequestContextAuthorizerCognitoIdentity{}
			e.RequestContext.Authorizer.IAM.CallerID = "AIDAEXAMPLE"
			e.RequestContext.Authorizer.IAM.UserARN = ""
		}), "iam:AIDAEXAMPLE", nil},
		{"v2 Cognito role session without identity", v2("apigw-v2-request-iam.json", func(e *events.APIGatewayV2HTTPRequest) {
			e.RequestContext.Authorizer.IAM.CognitoIdentity = events.APIGatewayV2HTTPRequestContextAuthorizerCognitoIdentity{}
		}), "", idemlambda.ErrNoScope},
		{"v2 no authorizer section", v2("apigw-v2-request-no-authorizer.json", func(e *events.APIGatewayV2HTTPRequest) {}),
			"", idemlambda.ErrNoScope},
		{"v2 IAM without identity", v2("apigw-v2-request-iam.json", func(e *events.APIGatewayV2HTTPRequest) {
			e.RequestContext.Authorizer.IAM = &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{}
		}), "", idemlambda.ErrNoScope},
		{"v2 empty authorizer section", v2("apigw-v2-request-no-authorizer.json", func(e *events.APIGatewayV2HTTPRequest) {
			e.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{}
		}), "", idemlambda.ErrNoScope},
		{"v2 Lambda authorizer with an empty context", v2("apigw-v2-request-lambda-authorizer.json", func(e *events.APIGatewayV2HTTPRequest) {
			e.RequestContext.Authorizer.Lambda = map[string]any{}
		}), "", idemlambda.ErrNoScope},
		{"URL authorizer section without IAM", url(func(e *events.LambdaFunctionURLRequest) {
			e.RequestContext.Authorizer.IAM = nil
		}), "", idemlambda.ErrNoScope},
		{"URL without authorizer", url(func(e *events.LambdaFunctionURLRequest) {
			e.RequestContext.Authorizer = nil
		}), "", idemlambda.ErrNoScope},
		{"URL Cognito role session: no identity in the event", url(func(e *events.LambdaFunctionURLRequest) {
			e.RequestContext.Authorizer.IAM.UserARN = "arn:aws:sts::111122223333:assumed-role/app-auth/CognitoIdentityCredentials"
		}), "", idemlambda.ErrNoScope},
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

// noCognito removes the Cognito identity pool fields of the REST sample's
// identity: an IAM caller that signed with credentials of its own.
func noCognito(id *events.APIGatewayRequestIdentity) {
	id.CognitoIdentityPoolID, id.CognitoIdentityID = "", ""
	id.CognitoAuthenticationType, id.CognitoAuthenticationProvider = "", ""
}

func TestScopeOptionsNameTheClaimAndTheAuthorizerKeys(t *testing.T) {
	got, err := scopeOf(t, must[events.APIGatewayV2HTTPRequest](t, sample(t, "apigw-v2-request-jwt-authorizer.json")),
		idemlambda.EventScope(func(o *idemlambda.ScopeOptions) { o.JWTClaim = "claim2" }))
	require.NoError(t, err)
	assert.Equal(t, "jwt:0::value2", got)

	got, err = scopeOf(t, must[events.APIGatewayV2HTTPRequest](t, sample(t, "apigw-v2-request-lambda-authorizer.json")),
		idemlambda.EventScope(func(o *idemlambda.ScopeOptions) { o.AuthorizerKeys = []string{"missing", "key"} }))
	require.NoError(t, err)
	assert.Equal(t, "authorizer:value", got)
}

func TestScopeOutsideAFrontDoorIsAnError(t *testing.T) {
	_, err := idemlambda.Scope(httptest.NewRequest("POST", "/", nil))
	assert.ErrorIs(t, err, idemlambda.ErrNoEvent)
}

// A sub is unique only within its issuer: behind two authorizers that trust
// two issuers, one sub is two callers, and never one scope.
func TestJWTCallersOfTwoIssuersWithOneSubHaveTwoScopes(t *testing.T) {
	v2 := func(iss string) events.APIGatewayV2HTTPRequest {
		ev := must[events.APIGatewayV2HTTPRequest](t, sample(t, "apigw-v2-request-jwt-authorizer.json"))
		ev.RequestContext.Authorizer.JWT.Claims["sub"] = "user-7"
		ev.RequestContext.Authorizer.JWT.Claims["iss"] = iss
		return ev
	}
	v1 := func(iss string) events.APIGatewayProxyRequest {
		ev := must[events.APIGatewayProxyRequest](t, sample(t, "apigw-request.json"))
		ev.RequestContext.Authorizer = map[string]any{"claims": map[string]any{"sub": "user-7", "iss": iss}}
		return ev
	}
	const a, b = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_A", "https://issuer.example.com"
	for name, ev := range map[string][2]any{"HTTP API": {v2(a), v2(b)}, "REST API": {v1(a), v1(b)}} {
		first, err := scopeOf(t, ev[0], idemlambda.Scope)
		require.NoError(t, err, name)
		second, err := scopeOf(t, ev[1], idemlambda.Scope)
		require.NoError(t, err, name)
		assert.Equal(t, "jwt:55:"+a+":user-7", first, name)
		assert.Equal(t, "jwt:26:"+b+":user-7", second, name)
	}
	// The issuer's length keeps the pair unambiguous: issuer "x:1" with
	// sub "2" is not issuer "x" with sub "1:2".
	s1, err := scopeOf(t, func() events.APIGatewayV2HTTPRequest {
		ev := v2("x:1")
		ev.RequestContext.Authorizer.JWT.Claims["sub"] = "2"
		return ev
	}(), idemlambda.Scope)
	require.NoError(t, err)
	s2, err := scopeOf(t, func() events.APIGatewayV2HTTPRequest {
		ev := v2("x")
		ev.RequestContext.Authorizer.JWT.Claims["sub"] = "1:2"
		return ev
	}(), idemlambda.Scope)
	require.NoError(t, err)
	assert.NotEqual(t, s1, s2)
}
