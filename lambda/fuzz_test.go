package lambda_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	idemlambda "github.com/idemkey/idemkey/lambda"
)

// echo is the fuzz targets' inner handler: it touches what a handler
// reads of a request (the body, headers, cookies, query, path values,
// the scope rules) and writes headers, cookies and the body back.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	_, _ = idemlambda.Scope(r)
	_ = r.Cookies()
	_ = r.URL.Query()
	_ = r.PathValue("proxy")
	for name, values := range r.Header {
		for _, v := range values {
			w.Header().Add("X-Echo-"+name, v)
		}
	}
	w.Header().Add("Set-Cookie", "a=1")
	w.Header().Add("Set-Cookie", "b=2")
	w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
	_, _ = w.Write(body)
})

// checkResponse fails t unless a front door's answer is well formed: an
// error only for an invalid event, a status, and a body that decodes when
// flagged base64.
func checkResponse(t *testing.T, err error, status int, body string, b64 bool) {
	t.Helper()
	if err != nil {
		if !errors.Is(err, idemlambda.ErrInvalidEvent) {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if status < 200 || status > 999 {
		t.Fatalf("status %d", status)
	}
	if b64 {
		if _, err := base64.StdEncoding.DecodeString(body); err != nil {
			t.Fatalf("body flagged base64 does not decode: %v", err)
		}
	}
}

// fuzzDoor feeds a front door arbitrary events: the samples named, a few
// malformed seeds, and whatever the fuzzer derives from them. Bytes that
// do not decode as an E are skipped; every event that does must get a
// well-formed answer (check) and no panic.
func fuzzDoor[E, R any](f *testing.F, door func(context.Context, E) (R, error), check func(*testing.T, R, error), samples ...string) {
	for _, name := range samples {
		b, err := readSample(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"isBase64Encoded":true,"body":"!!"}`))
	f.Add([]byte(`{"httpMethod":"G T","path":"%zz","headers":{"Host":""},"rawPath":"no-slash"}`))
	f.Add([]byte(`{"requestContext":{"authorizer":{"jwt":{"claims":null},"lambda":{"principalId":[1]}}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var ev E
		if json.Unmarshal(raw, &ev) != nil {
			return
		}
		resp, err := door(context.Background(), ev)
		check(t, resp, err)
	})
}

func FuzzAPIGatewayV1Event(f *testing.F) {
	fuzzDoor(f, idemlambda.NewAPIGatewayV1(echo), func(t *testing.T, r events.APIGatewayProxyResponse, err error) {
		checkResponse(t, err, r.StatusCode, r.Body, r.IsBase64Encoded)
	}, "apigw-request.json")
}

func FuzzAPIGatewayV2Event(f *testing.F) {
	fuzzDoor(f, idemlambda.NewAPIGatewayV2(echo), func(t *testing.T, r events.APIGatewayV2HTTPResponse, err error) {
		checkResponse(t, err, r.StatusCode, r.Body, r.IsBase64Encoded)
	}, "apigw-v2-request-iam.json", "apigw-v2-request-jwt-authorizer.json",
		"apigw-v2-request-lambda-authorizer.json", "apigw-v2-request-no-authorizer.json")
}

func FuzzALBEvent(f *testing.F) {
	fuzzDoor(f, idemlambda.NewALB(echo), func(t *testing.T, r events.ALBTargetGroupResponse, err error) {
		checkResponse(t, err, r.StatusCode, r.Body, r.IsBase64Encoded)
		if err == nil && (r.Headers == nil) == (r.MultiValueHeaders == nil) {
			t.Fatalf("exactly one header field must be set: %v / %v", r.Headers, r.MultiValueHeaders)
		}
	}, "alb-lambda-target-request-headers-only.json", "alb-lambda-target-request-multivalue-headers.json")
}

func FuzzFunctionURLEvent(f *testing.F) {
	fuzzDoor(f, idemlambda.NewFunctionURL(echo), func(t *testing.T, r events.LambdaFunctionURLResponse, err error) {
		checkResponse(t, err, r.StatusCode, r.Body, r.IsBase64Encoded)
	}, "lambda-urls-request.json")
}
