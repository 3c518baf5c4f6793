package lambda_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/internal/httpcapture/httpcapturetest"
	idemlambda "github.com/idemkey/idemkey/lambda"
)

// answer is a response in the shape every front door can carry: status,
// headers with their values joined by "," (as API Gateway v2, Function
// URLs and single-value load balancers join them), body. Framing
// (Content-Length) is left out: net/http chooses it from how the body was
// written, and API Gateway sets its own.
type answer struct {
	status int
	header map[string]string
	body   string
}

func answerOf(status int, h http.Header, body string, drop ...string) answer {
	a := answer{status: status, header: map[string]string{}, body: body}
	for name, values := range h {
		if name != "Content-Length" && !slices.Contains(drop, name) {
			a.header[name] = strings.Join(values, ",")
		}
	}
	return a
}

// netHTTPAnswer is what a client of net/http's server receives from h,
// translated to a Lambda response, which has no trailers: the trailers
// and the Trailer header that declares them are left out (the documented
// choice of the front doors).
func netHTTPAnswer(t *testing.T, h http.Handler) answer {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answerOf(resp.StatusCode, resp.Header, string(b), "Date", "Trailer")
}

// Behind every Lambda front door, a handler's answer is what net/http's
// server sends for it, translated to the event's response: unguarded, and
// guarded by package handler, its first answer and its replay alike. The
// header is the one written at WriteHeader or the first Write (later
// changes are not sent), the Content-Type is sniffed as net/http sniffs it
// or absent when the handler suppressed it, the body is what net/http
// accepted, and trailers (which a Lambda response cannot carry) are
// dropped with their declaration: no trailer, and no key package handler
// stores trailers under, ever appears as a header.
func TestFrontDoorAnswerIsWhatNetHTTPWouldHaveSent(t *testing.T) {
	e := newEnv(t)
	cases := httpcapturetest.Handlers()
	names := make([]string, 0, len(cases))
	for name := range cases {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, doorName := range []string{"rest-v1", "http-v2-no-authorizer", "alb-single", "alb-multi", "function-url"} {
		d := doorNamed(t, doorName)
		guard := idemlambda.Middleware(e.store, func(o *idemlambda.MiddlewareOptions) {
			o.Handler.Scope = func(*http.Request) (string, error) { return "parity", nil }
			o.Handler.Methods = []string{http.MethodGet, http.MethodPost}
		})
		for i, name := range names {
			t.Run(doorName+"/"+name, func(t *testing.T) {
				handle := cases[name]
				want := netHTTPAnswer(t, handle)
				c := call{key: fmt.Sprintf("parity-%s-%d", doorName, i), body: text(`{}`)}
				ctx := context.Background()
				raw := sample(t, d.sample)

				plain := d.invoke(t, ctx, handle, raw, call{body: c.body})
				assert.Equal(t, want, answerOf(plain.status, plain.header, plain.body), "unguarded")

				h := guard(handle)
				first := d.invoke(t, ctx, h, raw, c)
				replay := d.invoke(t, ctx, h, raw, c)
				assert.Empty(t, first.header.Get(handler.ReplayedHeader), "the first answer is no replay")
				require.Equal(t, "true", replay.header.Get(handler.ReplayedHeader), "the second answer is a replay")
				assert.Equal(t, want, answerOf(first.status, first.header, first.body), "first answer")
				assert.Equal(t, want, answerOf(replay.status, replay.header, replay.body, handler.ReplayedHeader), "replay")

				for _, r := range []reply{plain, first, replay} {
					for name := range r.header {
						assert.NotContains(t, name, ":", "a key package handler stores trailers under")
						assert.NotEqual(t, "Trailer", name)
					}
				}
			})
		}
	}
}
