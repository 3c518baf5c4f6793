package lambda

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

var (
	// ErrNoScope: the event was authenticated (it carries an authorizer
	// section) but holds no caller identity the scope rule knows. Package
	// handler answers it with 401: sharing one scope among callers an
	// authorizer tells apart would let one caller's key meet another's.
	ErrNoScope = errors.New("lambda: no caller identity in the event")
	// ErrNoEvent: the request did not come through a front door of this
	// package, so there is no event to take the scope from.
	ErrNoEvent = errors.New("lambda: no Lambda event in the request context")
)

// ScopeOptions tune the default scope rules. The zero value of each field
// selects its default.
type ScopeOptions struct {
	// JWTClaim names the claim that identifies the caller of a JWT
	// authorizer (HTTP API) or a Cognito user pool authorizer (REST API).
	// Default "sub".
	JWTClaim string
	// AuthorizerKeys are the keys of a Lambda authorizer's context that
	// identify the caller, tried in order. Default "principalId", "sub".
	AuthorizerKeys []string
}

// Scope is EventScope with the default options: a handler.Options.Scope
// for handlers served by this package's front doors.
func Scope(r *http.Request) (string, error) { return scope(r, ScopeOptions{}.withDefaults()) }

// EventScope returns a handler.Options.Scope function that takes the
// idempotency scope from the event in the request's context. The scope is
// the caller's identity, prefixed with its kind so that identities of
// different kinds never meet:
//
//	REST API (v1)     "apikey:" + requestContext.identity.apiKeyId, when set;
//	                  else, when requestContext.authorizer is not empty,
//	                  "jwt:" + authorizer.claims[JWTClaim] (Cognito) or
//	                  "authorizer:" + the first AuthorizerKeys value (Lambda
//	                  authorizer), else ErrNoScope;
//	                  else "iam:" + identity.userArn (IAM authorization);
//	                  else "" (no authorization: one shared scope).
//	HTTP API (v2)     JWT authorizer: "jwt:" + claims[JWTClaim], else ErrNoScope;
//	                  Lambda authorizer: "authorizer:" + the first
//	                  AuthorizerKeys value of its context, else ErrNoScope;
//	                  IAM: "iam:" + userArn (else callerId), else ErrNoScope;
//	                  none: "".
//	Function URL      IAM (AuthType AWS_IAM): "iam:" + userArn (else
//	                  callerId), else ErrNoScope; none: "".
//	ALB               "": a load balancer authenticates no caller. Set
//	                  handler.Options.Scope to a function of your own (it
//	                  can read the event with ALBEvent) unless the service
//	                  has a single caller.
//
// A string value is used as is, a number in its shortest decimal form;
// empty values count as absent. A request without an event fails with
// ErrNoEvent. Package handler answers an error with 401.
func EventScope(optFns ...func(*ScopeOptions)) func(*http.Request) (string, error) {
	var o ScopeOptions
	for _, fn := range optFns {
		fn(&o)
	}
	o = o.withDefaults()
	return func(r *http.Request) (string, error) { return scope(r, o) }
}

func (o ScopeOptions) withDefaults() ScopeOptions {
	if o.JWTClaim == "" {
		o.JWTClaim = "sub"
	}
	if len(o.AuthorizerKeys) == 0 {
		o.AuthorizerKeys = []string{"principalId", "sub"}
	}
	return o
}

func scope(r *http.Request, o ScopeOptions) (string, error) {
	ctx := r.Context()
	if e, ok := APIGatewayV1Event(ctx); ok {
		return scopeV1(e, o)
	}
	if e, ok := APIGatewayV2Event(ctx); ok {
		return scopeV2(e, o)
	}
	if e, ok := FunctionURLEvent(ctx); ok {
		if a := e.RequestContext.Authorizer; a != nil && a.IAM != nil {
			return iamScope(a.IAM.UserARN, a.IAM.CallerID)
		}
		return "", nil
	}
	if _, ok := ALBEvent(ctx); ok {
		return "", nil
	}
	return "", ErrNoEvent
}

func scopeV1(e *events.APIGatewayProxyRequest, o ScopeOptions) (string, error) {
	id := e.RequestContext.Identity
	if id.APIKeyID != "" {
		return "apikey:" + id.APIKeyID, nil
	}
	if auth := e.RequestContext.Authorizer; len(auth) > 0 {
		if claims, ok := auth["claims"].(map[string]any); ok {
			if v := scalar(claims[o.JWTClaim]); v != "" {
				return "jwt:" + v, nil
			}
		}
		return authorizerScope(auth, o)
	}
	if id.UserArn != "" {
		return "iam:" + id.UserArn, nil
	}
	return "", nil
}

func scopeV2(e *events.APIGatewayV2HTTPRequest, o ScopeOptions) (string, error) {
	a := e.RequestContext.Authorizer
	switch {
	case a == nil:
		return "", nil
	case a.JWT != nil:
		if v := a.JWT.Claims[o.JWTClaim]; v != "" {
			return "jwt:" + v, nil
		}
		return "", fmt.Errorf("%w: the JWT has no %q claim", ErrNoScope, o.JWTClaim)
	case len(a.Lambda) > 0:
		return authorizerScope(a.Lambda, o)
	case a.IAM != nil:
		return iamScope(a.IAM.UserARN, a.IAM.CallerID)
	}
	return "", nil
}

func authorizerScope(ctx map[string]any, o ScopeOptions) (string, error) {
	for _, k := range o.AuthorizerKeys {
		if v := scalar(ctx[k]); v != "" {
			return "authorizer:" + v, nil
		}
	}
	return "", fmt.Errorf("%w: the authorizer context has none of %s", ErrNoScope, strings.Join(o.AuthorizerKeys, ", "))
}

func iamScope(userARN, callerID string) (string, error) {
	switch {
	case userARN != "":
		return "iam:" + userARN, nil
	case callerID != "":
		return "iam:" + callerID, nil
	}
	return "", fmt.Errorf("%w: the IAM authorizer names no user ARN or caller id", ErrNoScope)
}

// scalar returns a string or number of a decoded JSON value as a string,
// and "" for anything else.
func scalar(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return ""
}
