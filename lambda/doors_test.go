package lambda_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	idemlambda "github.com/idemkey/idemkey/lambda"
)

// reply is a front door's response in one shape: the headers of every
// field (cookies as Set-Cookie), the body decoded from base64 when it was
// encoded.
type reply struct {
	status int
	header http.Header
	body   string
	base64 bool
	// single and multi report which header fields of the response were
	// set (ALB answers in one of them).
	single, multi bool
}

// call says what a test adds to a sample event. The sample is otherwise
// used as it is.
type call struct {
	key     string // the Idempotency-Key header's value; none when empty
	keyName string // the header's name as sent (default "Idempotency-Key")
	// body, when set, replaces the sample's body (each test that sets it
	// says why); base64 sends it base64-encoded.
	body   *string
	base64 bool
	// contentType, when set, is sent as the Content-Type header, in place
	// of the sample's.
	contentType string
	// multi, when set, adds an X-Multi header with these values in the
	// event's multi-value form (or joined with ",", as API Gateway v2 and
	// Function URLs join repeated headers).
	multi []string
}

func (c call) headerName() string {
	if c.keyName != "" {
		return c.keyName
	}
	return "Idempotency-Key"
}

func (c call) encodedBody() (string, bool) {
	if c.base64 {
		return base64.StdEncoding.EncodeToString([]byte(*c.body)), true
	}
	return *c.body, false
}

func text(s string) *string { return &s }

// door is one front door with one of aws-lambda-go's sample events.
type door struct {
	name   string
	sample string
	// scope is the scope the default rules (tuned by scopeOpts) derive
	// from the sample.
	scope     string
	scopeOpts func(*idemlambda.ScopeOptions)
	// singleCaller: the sample authenticates no caller, so the default
	// scope rules refuse it (see
	// TestUnauthenticatedEventGets401NotTheSharedScope); the door's
	// middleware states that the service has one caller instead, and
	// scope is "".
	singleCaller bool
	invoke       func(t *testing.T, ctx context.Context, h http.Handler, raw []byte, c call, optFns ...func(*idemlambda.Options)) reply
}

var doors = []door{
	// The REST sample's authorizer names its principal, which comes before
	// its API key.
	{name: "rest-v1", sample: "apigw-request.json", scope: "authorizer:admin", invoke: invokeV1},
	// The IAM sample's caller signed with a Cognito identity pool's
	// credentials: its identity, not the role session, is the scope.
	{name: "http-v2-iam", sample: "apigw-v2-request-iam.json", scope: sampleCognitoScope, invoke: invokeV2},
	// The sample JWT has no "sub" claim (see TestAuthenticatedEventWithoutCallerIdentityGets401).
	{name: "http-v2-jwt", sample: "apigw-v2-request-jwt-authorizer.json", scope: "jwt:0::value1", invoke: invokeV2,
		scopeOpts: func(o *idemlambda.ScopeOptions) { o.JWTClaim = "claim1" }},
	// The sample authorizer context has neither principalId nor sub.
	{name: "http-v2-lambda-authorizer", sample: "apigw-v2-request-lambda-authorizer.json", scope: "authorizer:value", invoke: invokeV2,
		scopeOpts: func(o *idemlambda.ScopeOptions) { o.AuthorizerKeys = []string{"key"} }},
	{name: "http-v2-no-authorizer", sample: "apigw-v2-request-no-authorizer.json", singleCaller: true, invoke: invokeV2},
	{name: "alb-single", sample: "alb-lambda-target-request-headers-only.json", singleCaller: true, invoke: invokeALB},
	{name: "alb-multi", sample: "alb-lambda-target-request-multivalue-headers.json", singleCaller: true, invoke: invokeALB},
	{name: "function-url", sample: "lambda-urls-request.json", scope: "iam:arn:aws:iam::111122223333:user/example-user", invoke: invokeURL},
}

// sampleCognitoScope is the scope of the Cognito identity in
// apigw-v2-request-iam.json: the pool id's length, the pool id, the
// identity id.
const sampleCognitoScope = "cognito:46:us-east-1:4f291106-8703-466b-8f2b-3ecee1ca56ce:us-east-1:3f291106-8703-466b-8f2b-3ecee1ca56ce"

func setHeader(m *map[string]string, name, value string) {
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[name] = value
}

func setMultiHeader(m *map[string][]string, name string, values ...string) {
	if *m == nil {
		*m = map[string][]string{}
	}
	(*m)[name] = values
}

func newReply(t *testing.T, status int, single map[string]string, multi map[string][]string, cookies []string, body string, b64 bool) reply {
	t.Helper()
	r := reply{status: status, header: http.Header{}, base64: b64, single: single != nil, multi: multi != nil}
	for name, values := range multi {
		for _, v := range values {
			r.header.Add(name, v)
		}
	}
	for name, v := range single {
		r.header.Add(name, v)
	}
	for _, c := range cookies {
		r.header.Add("Set-Cookie", c)
	}
	r.body = body
	if b64 {
		b, err := base64.StdEncoding.DecodeString(body)
		require.NoError(t, err)
		r.body = string(b)
	}
	return r
}

func invokeV1(t *testing.T, ctx context.Context, h http.Handler, raw []byte, c call, optFns ...func(*idemlambda.Options)) reply {
	t.Helper()
	ev := must[events.APIGatewayProxyRequest](t, raw)
	if c.key != "" {
		setHeader(&ev.Headers, c.headerName(), c.key)
		setMultiHeader(&ev.MultiValueHeaders, c.headerName(), c.key)
	}
	if c.contentType != "" {
		setHeader(&ev.Headers, "Content-Type", c.contentType)
		setMultiHeader(&ev.MultiValueHeaders, "Content-Type", c.contentType)
	}
	if c.multi != nil {
		// API Gateway puts the last value in headers, all in multiValueHeaders.
		setHeader(&ev.Headers, "X-Multi", c.multi[len(c.multi)-1])
		setMultiHeader(&ev.MultiValueHeaders, "X-Multi", c.multi...)
	}
	if c.body != nil {
		ev.Body, ev.IsBase64Encoded = c.encodedBody()
	}
	resp, err := idemlambda.NewAPIGatewayV1(h, optFns...)(ctx, ev)
	require.NoError(t, err)
	return newReply(t, resp.StatusCode, resp.Headers, resp.MultiValueHeaders, nil, resp.Body, resp.IsBase64Encoded)
}

// addToV2 adds c to the fields of a payload format 2.0 event (HTTP API,
// Function URL). Repeated headers arrive joined with ",".
func addToV2(c call, headers *map[string]string, body *string, b64 *bool) {
	if c.key != "" {
		setHeader(headers, c.headerName(), c.key)
	}
	if c.contentType != "" {
		setHeader(headers, "content-type", c.contentType)
	}
	if c.multi != nil {
		setHeader(headers, "x-multi", strings.Join(c.multi, ","))
	}
	if c.body != nil {
		*body, *b64 = c.encodedBody()
	}
}

func invokeV2(t *testing.T, ctx context.Context, h http.Handler, raw []byte, c call, optFns ...func(*idemlambda.Options)) reply {
	t.Helper()
	ev := must[events.APIGatewayV2HTTPRequest](t, raw)
	addToV2(c, &ev.Headers, &ev.Body, &ev.IsBase64Encoded)
	resp, err := idemlambda.NewAPIGatewayV2(h, optFns...)(ctx, ev)
	require.NoError(t, err)
	return newReply(t, resp.StatusCode, resp.Headers, resp.MultiValueHeaders, resp.Cookies, resp.Body, resp.IsBase64Encoded)
}

func invokeALB(t *testing.T, ctx context.Context, h http.Handler, raw []byte, c call, optFns ...func(*idemlambda.Options)) reply {
	t.Helper()
	ev := must[events.ALBTargetGroupRequest](t, raw)
	multi := ev.MultiValueHeaders != nil // the target group's mode
	if c.key != "" {
		if multi {
			setMultiHeader(&ev.MultiValueHeaders, c.headerName(), c.key)
		} else {
			setHeader(&ev.Headers, c.headerName(), c.key)
		}
	}
	if c.contentType != "" {
		if multi {
			setMultiHeader(&ev.MultiValueHeaders, "content-type", c.contentType)
		} else {
			setHeader(&ev.Headers, "content-type", c.contentType)
		}
	}
	if c.multi != nil {
		if multi {
			setMultiHeader(&ev.MultiValueHeaders, "x-multi", c.multi...)
		} else {
			// In single-value mode the load balancer passes the last value.
			setHeader(&ev.Headers, "x-multi", c.multi[len(c.multi)-1])
		}
	}
	if c.body != nil {
		ev.Body, ev.IsBase64Encoded = c.encodedBody()
	}
	resp, err := idemlambda.NewALB(h, optFns...)(ctx, ev)
	require.NoError(t, err)
	return newReply(t, resp.StatusCode, resp.Headers, resp.MultiValueHeaders, nil, resp.Body, resp.IsBase64Encoded)
}

func invokeURL(t *testing.T, ctx context.Context, h http.Handler, raw []byte, c call, optFns ...func(*idemlambda.Options)) reply {
	t.Helper()
	ev := must[events.LambdaFunctionURLRequest](t, raw)
	addToV2(c, &ev.Headers, &ev.Body, &ev.IsBase64Encoded)
	resp, err := idemlambda.NewFunctionURL(h, optFns...)(ctx, ev)
	require.NoError(t, err)
	return newReply(t, resp.StatusCode, resp.Headers, nil, resp.Cookies, resp.Body, resp.IsBase64Encoded)
}

// doorNamed returns the door of that name.
func doorNamed(t *testing.T, name string) door {
	t.Helper()
	for _, d := range doors {
		if d.name == name {
			return d
		}
	}
	t.Fatalf("no door %q", name)
	return door{}
}
