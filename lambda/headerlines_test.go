package lambda_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

// net/http's server replaces CR and LF in a header value with spaces,
// trims the value, and drops a header whose name is not a token: every
// door sends what it would, so that a value a handler copied from its
// input (a Location) never adds a header line, nor makes the answer
// malformed after its effects were committed.
func TestHeaderNamesAndValuesAreSentAsNetHTTPSendsThem(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "/next\r\nSet-Cookie: injected=1")
		w.Header().Set("X-Padded", "  v  ")
		w.Header()["Bad Name"] = []string{"x"}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(201)
		_, _ = w.Write([]byte("ok"))
	})
	want := netHTTPAnswer(t, h)
	for _, doorName := range []string{"rest-v1", "http-v2-no-authorizer", "alb-single", "function-url"} {
		d := doorNamed(t, doorName)
		got := d.invoke(t, context.Background(), h, sample(t, d.sample), call{body: text(`{}`)})
		assert.Equal(t, want, answerOf(got.status, got.header, got.body), doorName)
	}
}
