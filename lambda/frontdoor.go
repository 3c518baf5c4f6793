package lambda

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/internal/httpcapture"
)

// Options configure a front door. The zero value of each field selects
// its default.
type Options struct {
	// IsBinary reports whether a response body travels base64-encoded
	// (default IsBinary, by Content-Encoding, UTF-8 validity and
	// Content-Type).
	IsBinary func(header http.Header, body []byte) bool
}

// frontDoor serves one http.Handler for the events of one type.
type frontDoor struct {
	h    http.Handler
	opts Options
	name string // the front door's name in idemkey's Events
}

func newFrontDoor(h http.Handler, name string, optFns []func(*Options)) *frontDoor {
	if h == nil {
		panic("lambda: a front door needs an http.Handler")
	}
	f := &frontDoor{h: h, name: name}
	for _, fn := range optFns {
		fn(&f.opts)
	}
	if f.opts.IsBinary == nil {
		f.opts.IsBinary = IsBinary
	}
	return f
}

// serve runs the handler on the request of e, into an in-memory
// http.ResponseWriter that records what net/http's server would send. A
// panic of the handler is not recovered: it reaches aws-lambda-go, which
// reports it as a function error, as net/http's server aborts the
// response of a panicking handler (and as it panics on WriteHeader with a
// code outside 100-999). The request's context names the front door
// (idemkey.WithFrontDoor) and marks one invocation for Metrics.
func (f *frontDoor) serve(ctx context.Context, e *httpEvent) (httpResponse, error) {
	ctx, end := beginInvocation(idemkey.WithFrontDoor(ctx, f.name))
	defer end()
	r, err := newRequest(ctx, e)
	if err != nil {
		return httpResponse{}, err
	}
	w := httpcapture.New()
	f.h.ServeHTTP(w, r)
	return responseOf(w.Result(), r, f.opts.IsBinary), nil
}

// eventKey is the context key of an event of type E.
type eventKey[E any] struct{}

func withEvent[E any](ctx context.Context, e *E) context.Context {
	return context.WithValue(ctx, eventKey[E]{}, e)
}

func eventFrom[E any](ctx context.Context) (*E, bool) {
	e, ok := ctx.Value(eventKey[E]{}).(*E)
	return e, ok
}

// APIGatewayV1Event returns the API Gateway REST event of a request served
// by NewAPIGatewayV1, from the request's context. The event must not be
// modified.
func APIGatewayV1Event(ctx context.Context) (*events.APIGatewayProxyRequest, bool) {
	return eventFrom[events.APIGatewayProxyRequest](ctx)
}

// APIGatewayV2Event returns the HTTP API event of a request served by
// NewAPIGatewayV2, from the request's context. The event must not be
// modified.
func APIGatewayV2Event(ctx context.Context) (*events.APIGatewayV2HTTPRequest, bool) {
	return eventFrom[events.APIGatewayV2HTTPRequest](ctx)
}

// ALBEvent returns the load balancer event of a request served by NewALB,
// from the request's context. The event must not be modified.
func ALBEvent(ctx context.Context) (*events.ALBTargetGroupRequest, bool) {
	return eventFrom[events.ALBTargetGroupRequest](ctx)
}

// FunctionURLEvent returns the Function URL event of a request served by
// NewFunctionURL, from the request's context. The event must not be
// modified.
func FunctionURLEvent(ctx context.Context) (*events.LambdaFunctionURLRequest, bool) {
	return eventFrom[events.LambdaFunctionURLRequest](ctx)
}

// NewAPIGatewayV1 returns a function for lambda.Start that serves h to API
// Gateway REST API events (Lambda proxy integration). It panics if h is
// nil.
//
// The request: method httpMethod; URL path; query from
// multiValueQueryStringParameters and queryStringParameters (which API
// Gateway decodes; they are re-encoded, names sorted); headers from
// multiValueHeaders and headers, names canonicalised so that lookups
// ignore case; Host from the Host header, else requestContext.domainName;
// RemoteAddr requestContext.identity.sourceIp; the body base64-decoded
// when isBase64Encoded; each path parameter as a path value
// (r.PathValue). The event is in the request's context
// (APIGatewayV1Event), as is aws-lambda-go's lambdacontext.
//
// The URL path is the event's path, which a REST API gives without the
// stage (requestContext.path has it), where an HTTP API's rawPath
// (NewAPIGatewayV2) begins with it: behind a REST API, one caller's key
// sent to two stages that share a key table is one request, replayed on
// the second stage. Give each stage its own key table, or a scope that
// names the stage (a handler.Options.Scope that adds
// APIGatewayV1Event's requestContext.stage), when they must not share.
//
// The response is what net/http's server would send for h, the same
// whether h is guarded by package handler or not and for a first answer
// as for a replay: the first status written (200 when none is;
// informational ones are dropped); the header map as it was when the
// header was written (WriteHeader, or the first Write or Flush; later
// changes are not sent); the Content-Type net/http sniffs from the body
// when h set none, and none when h set Header()["Content-Type"] to nil;
// the body, refused as net/http refuses it (http.ErrBodyNotAllowed on 204
// and 304, http.ErrContentLength past a declared Content-Length), and
// dropped for HEAD. Lambda responses have no trailers: the trailers h
// sends (declared with the Trailer header or named with
// http.TrailerPrefix) are dropped, and so is the Trailer header. They are
// not folded into the headers: net/http sends them after the body, as
// values the header does not carry, and a header of the same name may
// already have been sent with another value. Package handler stores them
// all the same: a replay of the key through net/http sends them as
// trailers.
//
// Every header is in multiValueHeaders (so several Set-Cookie survive),
// the body base64-encoded when Options.IsBinary says so.
//
// The returned function fails only for an event no AWS service sends
// (ErrInvalidEvent); the handler's own statuses, 5xx included, are
// responses.
func NewAPIGatewayV1(h http.Handler, optFns ...func(*Options)) func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	f := newFrontDoor(h, idemkey.FrontDoorLambdaAPIGWv1, optFns)
	return func(ctx context.Context, e events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		resp, err := f.serve(withEvent(ctx, &e), &httpEvent{
			method:     e.HTTPMethod,
			path:       e.Path,
			rawQuery:   decodedQuery(e.MultiValueQueryStringParameters, e.QueryStringParameters),
			header:     headerOf(e.MultiValueHeaders, e.Headers),
			host:       e.RequestContext.DomainName,
			remoteAddr: e.RequestContext.Identity.SourceIP,
			proto:      e.RequestContext.Protocol,
			body:       e.Body,
			base64:     e.IsBase64Encoded,
			pathParams: e.PathParameters,
		})
		if err != nil {
			return events.APIGatewayProxyResponse{}, err
		}
		return events.APIGatewayProxyResponse{
			StatusCode:        resp.status,
			MultiValueHeaders: multiValueHeaders(resp.header),
			Body:              resp.body,
			IsBase64Encoded:   resp.base64,
		}, nil
	}
}

// NewAPIGatewayV2 returns a function for lambda.Start that serves h to API
// Gateway HTTP API events (payload format 2.0). It panics if h is nil.
//
// The request: method requestContext.http.method; URL rawPath (else
// requestContext.http.path) and rawQueryString as sent; headers from
// headers (API Gateway joins repeated headers with commas), names
// canonicalised, the Idempotency-Key header split again at each comma
// outside a quoted string, so that a repeated key header is refused with
// 400 as net/http's server presents it to package handler; the cookies field as one Cookie header; Host from the
// Host header, else requestContext.domainName; RemoteAddr
// requestContext.http.sourceIp; the body base64-decoded when
// isBase64Encoded; each path parameter as a path value. The event is in
// the request's context (APIGatewayV2Event).
//
// The response is what net/http's server would send for h, trailers
// dropped, as for NewAPIGatewayV1: Set-Cookie values in the cookies
// field, every other header in headers with its values joined by ",", the
// body base64-encoded when Options.IsBinary says so. Errors as for
// NewAPIGatewayV1.
func NewAPIGatewayV2(h http.Handler, optFns ...func(*Options)) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	f := newFrontDoor(h, idemkey.FrontDoorLambdaAPIGWv2, optFns)
	return func(ctx context.Context, e events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return f.serveV2(withEvent(ctx, &e), &e)
	}
}

// serveV2 serves an event of payload format 2.0, the shape HTTP APIs and
// Function URLs share.
func (f *frontDoor) serveV2(ctx context.Context, e *events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	path := e.RawPath
	if path == "" {
		path = e.RequestContext.HTTP.Path
	}
	resp, err := f.serve(ctx, &httpEvent{
		method:     e.RequestContext.HTTP.Method,
		path:       path,
		rawQuery:   e.RawQueryString,
		header:     unjoinKeyHeader(headerOf(nil, e.Headers)),
		cookies:    e.Cookies,
		host:       e.RequestContext.DomainName,
		remoteAddr: e.RequestContext.HTTP.SourceIP,
		proto:      e.RequestContext.HTTP.Protocol,
		body:       e.Body,
		base64:     e.IsBase64Encoded,
		pathParams: e.PathParameters,
	})
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	headers, cookies := joinedHeaders(resp.header)
	return events.APIGatewayV2HTTPResponse{
		StatusCode:      resp.status,
		Headers:         headers,
		Cookies:         cookies,
		Body:            resp.body,
		IsBase64Encoded: resp.base64,
	}, nil
}

// NewALB returns a function for lambda.Start that serves h to Application
// Load Balancer target group events. It panics if h is nil.
//
// A target group sends either headers or multiValueHeaders, as its
// lambda.multi_value_headers.enabled attribute says, and reads the same
// field of the response; the response is written in the request's mode.
// In single-value mode the load balancer passes only the last value of a
// repeated request header, so a request that repeats Idempotency-Key is
// seen with its last key; enable multi-value headers to have it refused
// with 400, as on every other front door.
// In single-value mode, the values of a header are joined by ",", except
// Set-Cookie, of which only the first value can be sent: enable
// multi-value headers to set several cookies.
//
// The request: method httpMethod; URL path; the query parameters as the
// load balancer passes them, not decoded (it does not decode them), names
// sorted; headers names canonicalised; Host from the Host header; the body
// base64-decoded when isBase64Encoded. The event is in the request's
// context (ALBEvent). The response is what net/http's server would send
// for h, trailers dropped, as for NewAPIGatewayV1, and carries
// statusDescription ("201 Created"). Errors as for NewAPIGatewayV1.
func NewALB(h http.Handler, optFns ...func(*Options)) func(context.Context, events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
	f := newFrontDoor(h, idemkey.FrontDoorLambdaALB, optFns)
	return func(ctx context.Context, e events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
		multi := e.MultiValueHeaders != nil
		resp, err := f.serve(withEvent(ctx, &e), &httpEvent{
			method:   e.HTTPMethod,
			path:     e.Path,
			rawQuery: rawQuery(e.MultiValueQueryStringParameters, e.QueryStringParameters),
			header:   headerOf(e.MultiValueHeaders, e.Headers),
			body:     e.Body,
			base64:   e.IsBase64Encoded,
		})
		if err != nil {
			return events.ALBTargetGroupResponse{}, err
		}
		out := events.ALBTargetGroupResponse{
			StatusCode:        resp.status,
			StatusDescription: strings.TrimSpace(strconv.Itoa(resp.status) + " " + http.StatusText(resp.status)),
			Body:              resp.body,
			IsBase64Encoded:   resp.base64,
		}
		if multi {
			out.MultiValueHeaders = multiValueHeaders(resp.header)
		} else {
			headers, cookies := joinedHeaders(resp.header)
			if len(cookies) > 0 {
				headers["Set-Cookie"] = cookies[0]
			}
			out.Headers = headers
		}
		return out, nil
	}
}

// NewFunctionURL returns a function for lambda.Start that serves h to
// Lambda Function URL events, in the BUFFERED invoke mode. It panics if h
// is nil.
//
// Request and response are converted as for NewAPIGatewayV2 (a Function
// URL event has the same shape, without path parameters, and joins
// repeated headers with commas too). The event is in
// the request's context (FunctionURLEvent). Errors as for
// NewAPIGatewayV1.
func NewFunctionURL(h http.Handler, optFns ...func(*Options)) func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
	f := newFrontDoor(h, idemkey.FrontDoorLambdaFunctionURL, optFns)
	return func(ctx context.Context, e events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
		resp, err := f.serveV2(withEvent(ctx, &e), &events.APIGatewayV2HTTPRequest{
			RawPath:        e.RawPath,
			RawQueryString: e.RawQueryString,
			Cookies:        e.Cookies,
			Headers:        e.Headers,
			Body:           e.Body,
			RequestContext: events.APIGatewayV2HTTPRequestContext{
				DomainName: e.RequestContext.DomainName,
				HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription(e.RequestContext.HTTP),
			},
			IsBase64Encoded: e.IsBase64Encoded,
		})
		if err != nil {
			return events.LambdaFunctionURLResponse{}, err
		}
		return events.LambdaFunctionURLResponse{
			StatusCode:      resp.StatusCode,
			Headers:         resp.Headers,
			Cookies:         resp.Cookies,
			Body:            resp.Body,
			IsBase64Encoded: resp.IsBase64Encoded,
		}, nil
	}
}
