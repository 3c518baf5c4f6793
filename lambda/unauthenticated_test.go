package lambda_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
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

// unauthenticatedEvent is one front door with an event that no
// authorization produced.
type unauthenticatedEvent struct {
	door
	raw []byte
}

// unauthenticatedEvents are aws-lambda-go's samples, edited where the
// sample carries an identity: a REST API method without authorizer, IAM
// or API key; an HTTP API route without authorizer; a Function URL with
// AuthType NONE (no authorizer section); both load balancer samples as
// they are.
func unauthenticatedEvents(t *testing.T) []unauthenticatedEvent {
	t.Helper()
	v1 := must[events.APIGatewayProxyRequest](t, sample(t, "apigw-request.json"))
	v1.RequestContext.Authorizer = nil
	v1.RequestContext.Identity = events.APIGatewayRequestIdentity{SourceIP: v1.RequestContext.Identity.SourceIP, UserAgent: v1.RequestContext.Identity.UserAgent}
	url := must[events.LambdaFunctionURLRequest](t, sample(t, "lambda-urls-request.json"))
	url.RequestContext.Authorizer = nil
	encode := func(v any) []byte {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return b
	}
	evs := []unauthenticatedEvent{
		{door: doorNamed(t, "rest-v1"), raw: encode(v1)},
		{door: doorNamed(t, "function-url"), raw: encode(url)},
	}
	for _, name := range []string{"http-v2-no-authorizer", "alb-single", "alb-multi"} {
		d := doorNamed(t, name)
		evs = append(evs, unauthenticatedEvent{door: d, raw: sample(t, d.sample)})
	}
	for i := range evs {
		evs[i].scope, evs[i].singleCaller = "", false
	}
	return evs
}

// An event that no authorization produced tells no caller from another.
// The default scope rules (EventScope) refuse it with 401 and run
// nothing, rather than put every anonymous caller in the one shared scope
// "", where one caller's key meets another's and one caller's stored
// response replays to the other. What to do about it (authorize the
// route, or state a single caller) is for the operator, in the log: the
// end user's 401 names no option of the library.
func TestUnauthenticatedEventGets401NotTheSharedScope(t *testing.T) {
	e := newEnv(t)
	for _, ev := range unauthenticatedEvents(t) {
		t.Run(ev.name, func(t *testing.T) {
			p := newPayments(e)
			key := "anonymous-" + ev.name
			var log bytes.Buffer
			withLog := func(o *idemlambda.MiddlewareOptions) {
				o.Handler.Logger = slog.New(slog.NewJSONHandler(&log, nil))
			}
			for range 2 { // two anonymous callers, one key
				r := ev.invoke(t, context.Background(), guarded(e, p, ev.door, withLog), ev.raw, call{key: key})
				assertProblem(t, r, http.StatusUnauthorized, "unauthorized")
				assert.NotContains(t, r.body, "SingleCaller", "the client is told nothing of the library's options")
				assert.NotContains(t, r.body, idemlambda.ErrNoScope.Error(), "nor what the scope rules looked for")
				assert.Empty(t, r.header.Get(handler.ReplayedHeader))
			}
			assert.Equal(t, 2, strings.Count(log.String(), idemlambda.ErrNoScope.Error()), "the operator reads each refusal's reason: %s", log.String())
			assert.Contains(t, log.String(), "SingleCaller", "and what to do about it")
			assert.Equal(t, int64(0), p.executed.Load(), "nothing runs")
			assert.Equal(t, 0, e.effectsFor(key))
			_, err := e.store.Get(context.Background(), "", key)
			assert.ErrorIs(t, err, dynamostore.ErrNotFound, "no record in the shared scope")
		})
	}
}

// A service that truly has one caller states it in code
// (handler.Options.SingleCaller in MiddlewareOptions.Handler): the same
// unauthenticated events then execute once and replay, in the one scope "".
func TestSingleCallerMiddlewareServesUnauthenticatedEvents(t *testing.T) {
	e := newEnv(t)
	for _, ev := range unauthenticatedEvents(t) {
		t.Run(ev.name, func(t *testing.T) {
			p := newPayments(e)
			h := guarded(e, p, ev.door, func(o *idemlambda.MiddlewareOptions) { o.Handler.SingleCaller = true })
			key := "single-caller-" + ev.name
			first := ev.invoke(t, context.Background(), h, ev.raw, call{key: key})
			require.Equal(t, http.StatusCreated, first.status, first.body)
			again := ev.invoke(t, context.Background(), h, ev.raw, call{key: key})
			assert.Equal(t, http.StatusCreated, again.status)
			assert.Equal(t, "true", again.header.Get(handler.ReplayedHeader))
			assert.Equal(t, first.body, again.body)
			assert.Equal(t, int64(1), p.executed.Load())
			_, err := e.store.Get(context.Background(), "", key)
			assert.NoError(t, err, "the record is in the one scope")
		})
	}
}

// A load balancer authenticates no caller, so a service behind one that
// has several callers gives the middleware a scope rule of its own, which
// reads the event with ALBEvent. Here the rule takes the user from the
// header that a listener authenticating with OIDC sets (a real rule
// verifies the signed x-amzn-oidc-data first): two users, one key, two
// executions.
func TestALBWithAScopeRuleOfItsOwnTellsCallersApart(t *testing.T) {
	e := newEnv(t)
	d := doorNamed(t, "alb-multi")
	p := newPayments(e)
	h := guarded(e, p, d, func(o *idemlambda.MiddlewareOptions) {
		o.Handler.SingleCaller = false
		o.Handler.Scope = func(r *http.Request) (string, error) {
			ev, ok := idemlambda.ALBEvent(r.Context())
			if !ok || len(ev.MultiValueHeaders["x-amzn-oidc-identity"]) != 1 {
				return "", idemlambda.ErrNoScope
			}
			return "oidc:" + ev.MultiValueHeaders["x-amzn-oidc-identity"][0], nil
		}
	})
	send := func(user string) reply {
		ev := must[events.ALBTargetGroupRequest](t, sample(t, d.sample))
		ev.MultiValueHeaders["x-amzn-oidc-identity"] = []string{user}
		raw, err := json.Marshal(ev)
		require.NoError(t, err)
		return d.invoke(t, context.Background(), h, raw, call{key: "alb-own-rule"})
	}
	alice, bob := send("alice"), send("bob")
	require.Equal(t, http.StatusCreated, alice.status, alice.body)
	require.Equal(t, http.StatusCreated, bob.status, bob.body)
	assert.Empty(t, bob.header.Get(handler.ReplayedHeader), "bob's request executes")
	assert.Equal(t, "true", send("alice").header.Get(handler.ReplayedHeader))
	assert.Equal(t, int64(2), p.executed.Load())
	for _, user := range []string{"alice", "bob"} {
		_, err := e.store.Get(context.Background(), "oidc:"+user, "alb-own-rule")
		assert.NoError(t, err, user)
	}
}

// The role session of a Cognito identity pool's credentials (every
// identity of the pool signs with it) and the pool.
const (
	cognitoRoleARN    = "arn:aws:sts::123456789012:assumed-role/app-authenticated/CognitoIdentityCredentials"
	cognitoRoleCaller = "AROA7ZJZYVRE7C3DUXHH6:CognitoIdentityCredentials"
	cognitoPool       = "us-east-1:4f291106-8703-466b-8f2b-3ecee1ca56ce"
)

// Callers that sign with a Cognito identity pool's credentials share the
// pool role's session ARN; the event names each one's Cognito identity,
// which is their scope. Two identities with the same role ARN, the same
// Idempotency-Key and the same body each get an execution, and each retry
// replays their own answer. A Function URL's event names no Cognito
// identity, so its Cognito callers get 401 rather than one shared scope.
func TestCognitoIdentitiesSharingARoleGetSeparateExecutions(t *testing.T) {
	e := newEnv(t)
	identity := func(user string) string { return "us-east-1:" + user + "-0000-0000-0000-000000000000" }
	for _, tc := range []struct {
		name string
		send func(t *testing.T, h http.Handler, user, key string) (int, string, string)
	}{
		{"REST API (v1)", func(t *testing.T, h http.Handler, user, key string) (int, string, string) {
			ev := must[events.APIGatewayProxyRequest](t, sample(t, "apigw-request.json"))
			ev.RequestContext.Authorizer = nil
			id := &ev.RequestContext.Identity
			id.UserArn, id.Caller = cognitoRoleARN, cognitoRoleCaller
			id.CognitoIdentityPoolID, id.CognitoIdentityID = cognitoPool, identity(user)
			ev.Headers[handler.HeaderName] = key
			ev.MultiValueHeaders[handler.HeaderName] = []string{key}
			resp, err := idemlambda.NewAPIGatewayV1(h)(context.Background(), ev)
			require.NoError(t, err)
			return resp.StatusCode, strings.Join(resp.MultiValueHeaders[handler.ReplayedHeader], ","), resp.Body
		}},
		{"HTTP API (v2)", func(t *testing.T, h http.Handler, user, key string) (int, string, string) {
			ev := must[events.APIGatewayV2HTTPRequest](t, sample(t, "apigw-v2-request-iam.json"))
			ev.RequestContext.HTTP.Method = http.MethodPost
			iam := ev.RequestContext.Authorizer.IAM
			iam.UserARN, iam.CallerID = cognitoRoleARN, cognitoRoleCaller
			iam.CognitoIdentity.IdentityPoolID, iam.CognitoIdentity.IdentityID = cognitoPool, identity(user)
			ev.Headers[handler.HeaderName] = key
			resp, err := idemlambda.NewAPIGatewayV2(h)(context.Background(), ev)
			require.NoError(t, err)
			return resp.StatusCode, resp.Headers[handler.ReplayedHeader], resp.Body
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPayments(e)
			h := idemlambda.Middleware(e.store)(p)
			key := "cognito-" + strings.NewReplacer(" ", "-", "(", "", ")", "").Replace(tc.name)
			aliceStatus, aliceReplayed, aliceBody := tc.send(t, h, "alice", key)
			require.Equal(t, http.StatusCreated, aliceStatus, aliceBody)
			assert.Empty(t, aliceReplayed)
			bobStatus, bobReplayed, bobBody := tc.send(t, h, "bob", key)
			require.Equal(t, http.StatusCreated, bobStatus, bobBody)
			assert.Empty(t, bobReplayed, "bob's request executes: alice's answer is not his")
			assert.NotEqual(t, aliceBody, bobBody)
			assert.Equal(t, int64(2), p.executed.Load())
			assert.Equal(t, 2, e.effectsFor(key))

			for user, first := range map[string]string{"alice": aliceBody, "bob": bobBody} {
				_, replayed, body := tc.send(t, h, user, key)
				assert.Equal(t, "true", replayed, user)
				assert.Equal(t, first, body, "%s gets their own answer", user)
				scope := "cognito:" + "46:" + cognitoPool + ":" + identity(user)
				_, err := e.store.Get(context.Background(), scope, key)
				assert.NoError(t, err, "%s's record is in the scope of their Cognito identity", user)
			}
			assert.Equal(t, int64(2), p.executed.Load())
		})
	}

	t.Run("Function URL", func(t *testing.T) {
		p := newPayments(e)
		ev := must[events.LambdaFunctionURLRequest](t, sample(t, "lambda-urls-request.json"))
		ev.RequestContext.Authorizer.IAM.UserARN, ev.RequestContext.Authorizer.IAM.CallerID = cognitoRoleARN, cognitoRoleCaller
		ev.Headers[handler.HeaderName] = "cognito-url"
		resp, err := idemlambda.NewFunctionURL(idemlambda.Middleware(e.store)(p))(context.Background(), ev)
		require.NoError(t, err)
		assertProblem(t, reply{status: resp.StatusCode, header: headerOfMap(resp.Headers), body: resp.Body}, http.StatusUnauthorized, "unauthorized")
		assert.Equal(t, int64(0), p.executed.Load(), "nothing runs")
	})
}
