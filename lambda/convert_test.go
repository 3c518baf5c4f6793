package lambda_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	idemlambda "github.com/idemkey/idemkey/lambda"
)

// must decodes a sample event.
func must[E any](t *testing.T, raw []byte) E {
	t.Helper()
	var ev E
	require.NoError(t, json.Unmarshal(raw, &ev))
	return ev
}

// capture records the request a front door builds, with its body read.
type capture struct {
	r    *http.Request
	body string
}

func (c *capture) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.r, c.body = r, string(b)
	})
}

func TestRESTRequestAsTheHandlerSeesIt(t *testing.T) {
	var c capture
	_, err := idemlambda.NewAPIGatewayV1(c.handler())(context.Background(), must[events.APIGatewayProxyRequest](t, sample(t, "apigw-request.json")))
	require.NoError(t, err)
	r := c.r
	assert.Equal(t, "POST", r.Method)
	assert.Equal(t, "/hello/world", r.URL.Path)
	assert.Equal(t, "/hello/world?name=me", r.RequestURI)
	assert.Equal(t, "name=me", r.URL.RawQuery)
	assert.Equal(t, "gy415nuibc.execute-api.us-east-1.amazonaws.com", r.Host)
	assert.Empty(t, r.Header.Values("Host"), "Host moves out of the header, as in net/http")
	assert.Equal(t, "headerValue", r.Header.Get("headername"), "lookups ignore case")
	assert.Equal(t, "no-cache", r.Header.Get("Cache-Control"))
	assert.Equal(t, "192.168.196.186", r.RemoteAddr)
	assert.Equal(t, "hello/world", r.PathValue("proxy"))
	assert.Equal(t, "{\r\n\t\"a\": 1\r\n}", c.body)
	assert.Equal(t, int64(len(c.body)), r.ContentLength)
	ev, ok := idemlambda.APIGatewayV1Event(r.Context())
	require.True(t, ok)
	assert.Equal(t, "deef4878-7910-11e6-8f14-25afc3e9ae33", ev.RequestContext.RequestID)
	_, ok = idemlambda.APIGatewayV2Event(r.Context())
	assert.False(t, ok)
}

func TestHTTPAPIRequestAsTheHandlerSeesIt(t *testing.T) {
	var c capture
	_, err := idemlambda.NewAPIGatewayV2(c.handler())(context.Background(), must[events.APIGatewayV2HTTPRequest](t, sample(t, "apigw-v2-request-iam.json")))
	require.NoError(t, err)
	r := c.r
	assert.Equal(t, "GET", r.Method)
	assert.Equal(t, "/my/path", r.URL.Path)
	assert.Equal(t, "parameter1=value1&parameter1=value2&parameter2=value", r.URL.RawQuery, "the raw query as sent")
	assert.Equal(t, []string{"value1", "value2"}, r.URL.Query()["parameter1"])
	assert.Equal(t, "id.execute-api.us-east-1.amazonaws.com", r.Host, "no Host header: the domain name")
	assert.Equal(t, "value1", r.Header.Get("HEADER1"))
	assert.Equal(t, "cookie1; cookie2", r.Header.Get("Cookie"))
	cookies := r.Cookies()
	require.Len(t, cookies, 2)
	assert.Equal(t, "IP", r.RemoteAddr)
	assert.Equal(t, "hello/world", r.PathValue("proxy"))
	assert.Equal(t, "{\r\n\t\"a\": 1\r\n}", c.body)
	ev, ok := idemlambda.APIGatewayV2Event(r.Context())
	require.True(t, ok)
	assert.Equal(t, "arn:aws:iam::1234567890:user/Admin", ev.RequestContext.Authorizer.IAM.UserARN)

	_, err = idemlambda.NewAPIGatewayV2(c.handler())(context.Background(), must[events.APIGatewayV2HTTPRequest](t, sample(t, "apigw-v2-request-no-authorizer.json")))
	require.NoError(t, err)
	assert.Equal(t, "/", c.r.URL.Path)
	assert.Equal(t, "aaaaaaaaaa.execute-api.us-west-2.amazonaws.com", c.r.Host)
	assert.Equal(t, http.NoBody, c.r.Body)
	assert.Equal(t, int64(0), c.r.ContentLength)
	assert.Empty(t, c.r.Header.Values("Cookie"))
}

func TestALBRequestAsTheHandlerSeesIt(t *testing.T) {
	for _, name := range []string{"alb-lambda-target-request-headers-only.json", "alb-lambda-target-request-multivalue-headers.json"} {
		t.Run(name, func(t *testing.T) {
			var c capture
			_, err := idemlambda.NewALB(c.handler())(context.Background(), must[events.ALBTargetGroupRequest](t, sample(t, name)))
			require.NoError(t, err)
			assert.Equal(t, "GET", c.r.Method)
			assert.Equal(t, "/", c.r.URL.Path)
			assert.Equal(t, "key=hello", c.r.URL.RawQuery)
			assert.Contains(t, c.r.Host, ".us-east-1.elb.amazonaws.com")
			assert.Equal(t, "123", c.r.Header.Get("X-MyHeader"))
			ev, ok := idemlambda.ALBEvent(c.r.Context())
			require.True(t, ok)
			assert.Contains(t, ev.RequestContext.ELB.TargetGroupArn, "targetgroup/lambda-target/")
		})
	}
}

func TestFunctionURLRequestAsTheHandlerSeesIt(t *testing.T) {
	var c capture
	_, err := idemlambda.NewFunctionURL(c.handler())(context.Background(), must[events.LambdaFunctionURLRequest](t, sample(t, "lambda-urls-request.json")))
	require.NoError(t, err)
	r := c.r
	assert.Equal(t, "POST", r.Method)
	assert.Equal(t, "/my/path", r.URL.Path)
	assert.Equal(t, "parameter1=value1&parameter1=value2&parameter2=value", r.URL.RawQuery)
	assert.Equal(t, "<url-id>.lambda-url.us-west-2.on.aws", r.Host)
	assert.Equal(t, "value1,value2", r.Header.Get("Header2"))
	assert.Equal(t, "cookie1; cookie2", r.Header.Get("Cookie"))
	assert.Equal(t, "123.123.123.123", r.RemoteAddr)
	assert.Equal(t, "Hello from client!", c.body)
	ev, ok := idemlambda.FunctionURLEvent(r.Context())
	require.True(t, ok)
	assert.Equal(t, "id", ev.RequestContext.RequestID)
}

// TestQueriesKeepTheirMeaning: API Gateway REST decodes query parameters
// (they are encoded again), a load balancer does not (they pass as sent).
func TestQueriesKeepTheirMeaning(t *testing.T) {
	var c capture
	v1 := must[events.APIGatewayProxyRequest](t, sample(t, "apigw-request.json"))
	v1.MultiValueQueryStringParameters = map[string][]string{"q": {"a b", "c&d"}}
	v1.QueryStringParameters = map[string]string{"q": "c&d"}
	_, err := idemlambda.NewAPIGatewayV1(c.handler())(context.Background(), v1)
	require.NoError(t, err)
	assert.Equal(t, []string{"a b", "c&d"}, c.r.URL.Query()["q"])

	alb := must[events.ALBTargetGroupRequest](t, sample(t, "alb-lambda-target-request-headers-only.json"))
	alb.QueryStringParameters = map[string]string{"q": "a%20b", "z": "1"}
	_, err = idemlambda.NewALB(c.handler())(context.Background(), alb)
	require.NoError(t, err)
	assert.Equal(t, "q=a%20b&z=1", c.r.URL.RawQuery)
	assert.Equal(t, "a b", c.r.URL.Query().Get("q"))
}

func TestEncodedPathKeepsItsEscapedForm(t *testing.T) {
	var c capture
	ev := must[events.APIGatewayV2HTTPRequest](t, sample(t, "apigw-v2-request-no-authorizer.json"))
	ev.RawPath = "/files/a%2Fb"
	_, err := idemlambda.NewAPIGatewayV2(c.handler())(context.Background(), ev)
	require.NoError(t, err)
	assert.Equal(t, "/files/a/b", c.r.URL.Path)
	assert.Equal(t, "/files/a%2Fb", c.r.URL.EscapedPath())
}

func TestResponsesAreCompletedAsNetHTTPCompletesThem(t *testing.T) {
	ev := must[events.APIGatewayV2HTTPRequest](t, sample(t, "apigw-v2-request-no-authorizer.json"))
	sniffed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "<html><body>hi</body></html>")
	})
	resp, err := idemlambda.NewAPIGatewayV2(sniffed)(context.Background(), ev)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "no WriteHeader: 200")
	assert.Equal(t, "text/html; charset=utf-8", resp.Headers["Content-Type"], "a missing Content-Type is sniffed")
	assert.False(t, resp.IsBase64Encoded)
	assert.Equal(t, "<html><body>hi</body></html>", resp.Body)

	ev.RequestContext.HTTP.Method = http.MethodHead
	resp, err = idemlambda.NewAPIGatewayV2(sniffed)(context.Background(), ev)
	require.NoError(t, err)
	assert.Empty(t, resp.Body, "a HEAD response has no body")

	twice := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusContinue)
		w.WriteHeader(http.StatusAccepted)
		w.WriteHeader(http.StatusTeapot)
	})
	resp, err = idemlambda.NewAPIGatewayV2(twice)(context.Background(), must[events.APIGatewayV2HTTPRequest](t, sample(t, "apigw-v2-request-no-authorizer.json")))
	require.NoError(t, err)
	assert.Equal(t, http.StatusAccepted, resp.StatusCode, "1xx skipped, then the first status wins")
}

func TestALBStatusDescription(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) })
	resp, err := idemlambda.NewALB(h)(context.Background(), must[events.ALBTargetGroupRequest](t, sample(t, "alb-lambda-target-request-headers-only.json")))
	require.NoError(t, err)
	assert.Equal(t, "201 Created", resp.StatusDescription)
}

func TestIsBinary(t *testing.T) {
	for _, tc := range []struct {
		contentType, encoding string
		body                  string
		want                  bool
	}{
		{"application/json", "", `{"a":1}`, false},
		{"application/problem+json", "", `{}`, false},
		{"text/plain; charset=utf-8", "", "hello", false},
		{"image/svg+xml", "", "<svg/>", false},
		{"Application/JSON", "", "{}", false},
		{"", "", "plain", false},
		{"image/png", "", "\x89PNG", true},
		{"application/octet-stream", "", "abc", true},
		{"application/json", "gzip", "\x1f\x8b", true},
		{"application/json", "identity", "{}", false},
		{"text/plain", "", "\xff\xfe", true},
		{"", "", "\xff", true},
		{"image/png", "", "", false},
	} {
		h := http.Header{}
		if tc.contentType != "" {
			h.Set("Content-Type", tc.contentType)
		}
		if tc.encoding != "" {
			h.Set("Content-Encoding", tc.encoding)
		}
		assert.Equal(t, tc.want, idemlambda.IsBinary(h, []byte(tc.body)), "%q %q %q", tc.contentType, tc.encoding, tc.body)
	}
}

func TestFrontDoorsRefuseANilHandler(t *testing.T) {
	assert.Panics(t, func() { idemlambda.NewAPIGatewayV1(nil) })
	assert.Panics(t, func() { idemlambda.NewAPIGatewayV2(nil) })
	assert.Panics(t, func() { idemlambda.NewALB(nil) })
	assert.Panics(t, func() { idemlambda.NewFunctionURL(nil) })
}
