package lambda

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

var (
	// ErrNoScope: the event names no caller identity the scope rules know.
	// Either nothing authenticated the caller (a route without
	// authorization, a Function URL with AuthType NONE, any load
	// balancer), or an authorizer did but the event holds no identity the
	// rules read. Package handler answers it with 401 and runs nothing:
	// one scope shared by callers would let one caller's key meet
	// another's, and one caller's stored response replay to another. A
	// service that truly has one caller says so with
	// handler.Options.SingleCaller; one that authenticates its callers
	// itself gives handler.Options.Scope a rule of its own.
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
// different kinds never meet. Whoever authenticated the caller comes
// first; an API key counts only when nothing else identifies the caller;
// an event that identifies no caller gets ErrNoScope, never a scope
// shared by all callers:
//
//	REST API (v1)     when requestContext.authorizer is not empty:
//	                  the JWT caller of authorizer.claims (Cognito user
//	                  pool) or "authorizer:" + the first AuthorizerKeys
//	                  value (Lambda authorizer), else ErrNoScope;
//	                  else the IAM caller (IAM authorization) of
//	                  identity: cognitoIdentityPoolId, cognitoIdentityId,
//	                  userArn, caller, as below;
//	                  else "apikey:" + identity.apiKeyId, when set;
//	                  else ErrNoScope (no authorization).
//	HTTP API (v2)     JWT authorizer: the JWT caller of its claims;
//	                  Lambda authorizer: "authorizer:" + the first
//	                  AuthorizerKeys value of its context;
//	                  IAM: the IAM caller of authorizer.iam:
//	                  cognitoIdentity.identityPoolId and .identityId,
//	                  userArn, callerId, as below;
//	                  no authorizer section, an authorizer section
//	                  without any of them, or without that identity:
//	                  ErrNoScope.
//	Function URL      IAM (AuthType AWS_IAM): the IAM caller of
//	                  authorizer.iam: userArn, callerId, as below;
//	                  no authorizer section (AuthType NONE), or one
//	                  without IAM: ErrNoScope.
//	ALB               ErrNoScope: a load balancer authenticates no
//	                  caller. Set handler.Options.Scope to a function of
//	                  your own (it can read the event with ALBEvent: behind
//	                  a listener that authenticates users, the user of the
//	                  x-amzn-oidc-data header, once its signature is
//	                  verified).
//
// The JWT caller is "jwt:" + the length of the iss claim in decimal + ":"
// + the iss claim + ":" + claims[JWTClaim]: the claim that names a caller
// (sub by default) is unique only within its issuer, and one API can
// trust several issuers. A token without an iss claim counts as the issuer
// of length 0.
//
// The IAM caller is, in this order: a Cognito identity pool's identity,
// "cognito:" + the length of the pool id in decimal + ":" + the pool id +
// ":" + the identity id (the length keeps the pair unambiguous), since
// every identity of a pool signs with one role session
// (assumed-role/<role>/CognitoIdentityCredentials); else, when the user
// ARN or caller id is such a Cognito role session, ErrNoScope (a Function
// URL's event carries no Cognito identity, so its Cognito callers cannot
// be told apart); else "iam:" + the user ARN, else "iam:" + the caller id.
// An assumed-role session is one scope for every caller that assumes the
// role with the same session name.
//
// The API key rule has a risk to weigh: a usage-plan API key identifies a
// client application, not a user, and every user of that application
// shares its key, so they share one scope, and one user's stored response
// replays to another who sends the same Idempotency-Key. It is right only
// when each caller has an API key of its own; otherwise authorize the
// method (Cognito, a Lambda authorizer or IAM), and the key is no longer
// the scope.
//
// A service behind a route without authorization that truly has one
// caller, or that is public and accepts that its callers share keys,
// states it with handler.Options.SingleCaller (in
// MiddlewareOptions.Handler) in place of EventScope.
//
// A string value is used as is, and so is the text of a json.Number
// (events decoded with aws-lambda-go's lambda.WithUseNumber). A number
// decoded as a float64, the default, is used in its decimal form only when
// it is an integer of magnitude below 2^53: a larger or fractional one may
// be another caller's id rounded (9007199254740993 decodes as
// 9007199254740992), so it counts as absent, and such ids are to be sent
// as strings or decoded as json.Number. Empty values count as absent. A
// request without an event fails with ErrNoEvent. Package handler answers
// an error with 401.
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
		switch a := e.RequestContext.Authorizer; {
		case a == nil:
			return "", unauthenticated("the Function URL's AuthType is NONE")
		case a.IAM != nil:
			return iamCaller{arn: a.IAM.UserARN, callerID: a.IAM.CallerID}.scope()
		}
		return "", fmt.Errorf("%w: the authorizer section names no IAM caller", ErrNoScope)
	}
	if _, ok := ALBEvent(ctx); ok {
		return "", fmt.Errorf("%w: a load balancer authenticates no caller; "+
			"set handler.Options.Scope to a rule of your own (ALBEvent reads the event), "+
			"or handler.Options.SingleCaller only if the service has exactly one caller", ErrNoScope)
	}
	return "", ErrNoEvent
}

// unauthenticated is the error of an event that no authorization
// produced, saying what is missing and what to do.
func unauthenticated(what string) error {
	return fmt.Errorf("%w: %s, so nothing tells callers apart; "+
		"authorize the route, or set handler.Options.SingleCaller only if the service has exactly one caller", ErrNoScope, what)
}

func scopeV1(e *events.APIGatewayProxyRequest, o ScopeOptions) (string, error) {
	if auth := e.RequestContext.Authorizer; len(auth) > 0 {
		if claims, ok := auth["claims"].(map[string]any); ok {
			if v := scalar(claims[o.JWTClaim]); v != "" {
				return jwtScope(scalar(claims["iss"]), v), nil
			}
		}
		return authorizerScope(auth, o)
	}
	id := e.RequestContext.Identity
	switch {
	case id.CognitoIdentityID != "" || id.UserArn != "" || id.Caller != "":
		return iamCaller{poolID: id.CognitoIdentityPoolID, identityID: id.CognitoIdentityID, arn: id.UserArn, callerID: id.Caller}.scope()
	case id.APIKeyID != "":
		return "apikey:" + id.APIKeyID, nil
	}
	return "", unauthenticated("the REST API method has no authorizer, IAM authorization or API key")
}

func scopeV2(e *events.APIGatewayV2HTTPRequest, o ScopeOptions) (string, error) {
	a := e.RequestContext.Authorizer
	switch {
	case a == nil:
		return "", unauthenticated("the HTTP API route has no authorizer")
	case a.JWT != nil:
		if v := a.JWT.Claims[o.JWTClaim]; v != "" {
			return jwtScope(a.JWT.Claims["iss"], v), nil
		}
		return "", fmt.Errorf("%w: the JWT has no %q claim", ErrNoScope, o.JWTClaim)
	case a.Lambda != nil:
		return authorizerScope(a.Lambda, o)
	case a.IAM != nil:
		cog := a.IAM.CognitoIdentity
		return iamCaller{poolID: cog.IdentityPoolID, identityID: cog.IdentityID, arn: a.IAM.UserARN, callerID: a.IAM.CallerID}.scope()
	}
	return "", fmt.Errorf("%w: the authorizer section names no JWT, Lambda authorizer or IAM caller", ErrNoScope)
}

// jwtScope is the scope of a token's caller: its issuer and the claim
// that identifies it, which is unique only within its issuer (two
// authorizers of one API may trust two issuers). The issuer's length
// keeps the pair unambiguous.
func jwtScope(iss, id string) string {
	return "jwt:" + strconv.Itoa(len(iss)) + ":" + iss + ":" + id
}

func authorizerScope(ctx map[string]any, o ScopeOptions) (string, error) {
	for _, k := range o.AuthorizerKeys {
		if v := scalar(ctx[k]); v != "" {
			return "authorizer:" + v, nil
		}
	}
	return "", fmt.Errorf("%w: the authorizer context has none of %s", ErrNoScope, strings.Join(o.AuthorizerKeys, ", "))
}

// iamCaller is what an event says of a caller authorized by IAM.
type iamCaller struct {
	poolID, identityID string // Cognito identity pool, when the event has it
	arn, callerID      string
}

// cognitoSession is the role session name of the credentials a Cognito
// identity pool hands out (GetCredentialsForIdentity): the same for every
// identity of the pool.
const cognitoSession = "CognitoIdentityCredentials"

func (c iamCaller) scope() (string, error) {
	switch {
	case c.identityID != "":
		return "cognito:" + strconv.Itoa(len(c.poolID)) + ":" + c.poolID + ":" + c.identityID, nil
	case strings.HasSuffix(c.arn, "/"+cognitoSession), strings.HasSuffix(c.callerID, ":"+cognitoSession):
		return "", fmt.Errorf("%w: the IAM caller is a Cognito identity pool's role session, "+
			"which all of the pool's identities share, and the event names no Cognito identity", ErrNoScope)
	case c.arn != "":
		return "iam:" + c.arn, nil
	case c.callerID != "":
		return "iam:" + c.callerID, nil
	}
	return "", fmt.Errorf("%w: the IAM authorizer names no user ARN or caller id", ErrNoScope)
}

// scalar returns a string or number of a decoded JSON value as a string,
// and "" for anything else, and for a float64 that may be another number
// rounded: one that is not an integer of magnitude below 2^53.
func scalar(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case float64:
		if v != math.Trunc(v) || math.Abs(v) >= 1<<53 {
			return ""
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return ""
}
