package handler_test

import (
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
)

// sent is what a client received: status, headers, body and trailers.
type sent struct {
	status   int
	replayed string // the Idempotent-Replayed header, kept apart
	header   http.Header
	body     string
	trailer  http.Header
	declared []string // the Trailer header, as the client saw it
}

// receive posts to url and reads the whole answer. The client asks for no
// compression, so that it reports Content-Encoding as sent.
func receive(t *testing.T, url, key string) sent {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Header.Set("X-Tenant", "t1")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(handler.HeaderName, key)
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var declared []string
	for name := range resp.Trailer {
		declared = append(declared, name) // before the body: the declaration
	}
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	h := resp.Header.Clone()
	// Framing and the date are per response, not the handler's content:
	// net/http chooses Content-Length or chunked (Transfer-Encoding is not
	// in Header) from how the body was written, and a replay, written at
	// once, always has a Content-Length.
	h.Del("Date")
	h.Del("Content-Length")
	replayed := h.Get(handler.ReplayedHeader)
	h.Del(handler.ReplayedHeader)
	trailer := resp.Trailer
	if len(trailer) == 0 {
		trailer = nil
	}
	return sent{status: resp.StatusCode, replayed: replayed, header: h, body: string(b), trailer: trailer, declared: sortedStrings(declared)}
}

func sortedStrings(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	slices.Sort(s)
	return s
}

// A guarded handler's first answer and its replay are what net/http sends
// for the same handler unguarded: the header as it was when written (later
// changes are not sent), the Content-Type net/http sniffs or none when
// sniffing is suppressed, the body, and the trailers net/http sends.
func TestGuardedResponseIsWhatNetHTTPWouldHaveSent(t *testing.T) {
	cases := httpcapturetest.Handlers()
	for name, handle := range cases {
		t.Run(name, func(t *testing.T) {
			plain := httptest.NewServer(handle)
			defer plain.Close()
			want := receive(t, plain.URL, "k")
			switch name { // the cases test what they say: net/http's own answer
			case "declared trailer":
				require.Equal(t, "abc", want.trailer.Get("X-Checksum"))
				require.Equal(t, []string{"X-Checksum", "X-Missing"}, want.declared)
			case "trailer by prefix after a large body":
				require.Equal(t, "v", want.trailer.Get("X-Late"))
			case "trailer by prefix after a small body: net/http drops it":
				require.Nil(t, want.trailer)
			case "sniffing suppressed":
				require.NotContains(t, want.header, "Content-Type")
			case "header set after WriteHeader":
				require.Equal(t, "1", want.header.Get("X-Before"))
			}

			h := newHarness(t)
			h.setInner(handle)
			first := receive(t, h.srv.URL+"/payments", "k")
			replay := receive(t, h.srv.URL+"/payments", "k")
			assert.Equal(t, want, first, "first answer")
			require.Equal(t, "true", replay.replayed, "the second answer is a replay")
			replay.replayed = ""
			assert.Equal(t, want, replay, "replay")
		})
	}
}
