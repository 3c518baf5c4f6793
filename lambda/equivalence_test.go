package lambda_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/handler"
)

// TestGuardedHandlerAnswersAlikeBehindAPIGatewayAndNetHTTP serves one
// handler guarded by package handler twice, behind net/http and behind
// the REST front door, and sends both the same sequence of requests: the
// answers match in status, body and the headers of the HTTP contract.
func TestGuardedHandlerAnswersAlikeBehindAPIGatewayAndNetHTTP(t *testing.T) {
	e := newEnv(t)
	build := func(scope string) (http.Handler, chan struct{}, chan struct{}) {
		var n atomic.Int64
		entered, release := make(chan struct{}, 1), make(chan struct{})
		inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			key := r.Header.Get(handler.HeaderName)
			if key == "slow" {
				entered <- struct{}{}
				<-release
			}
			k := n.Add(1)
			if err := e.stage(r.Context(), fmt.Sprintf("%s/%s#%d", scope, key, k), scope+"/"+key); err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Location", fmt.Sprintf("/payments/%d", k))
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"execution":%d,"body":%q,"query":%q}`, k, body, r.URL.RawQuery)
		})
		mw := handler.New(e.store, func(o *handler.Options) {
			o.Scope = func(*http.Request) (string, error) { return scope, nil }
			o.MaxBodyBytes = 64
		})
		return mw(inner), entered, release
	}
	netH, netEntered, netRelease := build("net")
	srv := httptest.NewServer(netH)
	defer srv.Close()
	lamH, lamEntered, lamRelease := build("lambda")
	raw := sample(t, "apigw-request.json")

	viaNet := func(key, body string) reply {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/hello/world?name=me", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set(handler.HeaderName, key)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
	}
	viaLambda := func(key, body string) reply {
		// The sample is POST /hello/world?name=me; the test sets each
		// step's body.
		return invokeV1(t, context.Background(), lamH, raw, call{key: key, body: &body})
	}

	compare := func(step string, a, b reply) {
		t.Helper()
		assert.Equal(t, a.status, b.status, step)
		assert.Equal(t, a.body, b.body, step)
		for _, name := range []string{"Content-Type", handler.ReplayedHeader, "Retry-After", "Location", "Cache-Control"} {
			assert.Equal(t, a.header.Values(name), b.header.Values(name), "%s: %s", step, name)
		}
	}
	steps := []struct{ name, key, body string }{
		{"first", "k1", `{"amount":1}`},
		{"retry", "k1", `{ "amount": 1 }`},
		{"key reused", "k1", `{"amount":2}`},
		{"no key", "", `{"amount":3}`},
		{"malformed key", `"open`, `{"amount":3}`},
		{"body over the limit", "k2", strings.Repeat("x", 65)},
	}
	for _, s := range steps {
		compare(s.name, viaNet(s.key, s.body), viaLambda(s.key, s.body))
	}

	// In flight: each side holds its first request and sends a duplicate.
	inFlight := func(send func(key, body string) reply, entered, release chan struct{}) (dup, first reply) {
		done := make(chan reply, 1)
		go func() { done <- send("slow", `{}`) }()
		select {
		case <-entered:
		case r := <-done:
			t.Fatalf("the first request finished without reaching the handler: %d %s", r.status, r.body)
		}
		dup = send("slow", `{}`)
		close(release)
		return dup, <-done
	}
	netDup, netFirst := inFlight(viaNet, netEntered, netRelease)
	lamDup, lamFirst := inFlight(viaLambda, lamEntered, lamRelease)
	compare("in flight", netDup, lamDup)
	compare("in flight, first", netFirst, lamFirst)
	assert.Equal(t, http.StatusConflict, lamDup.status)
}
