package client_test

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/client"
	"github.com/idemkey/idemkey/handler"
)

// keyServer answers 503 (retryable) and records the key each request's
// Idempotency-Key parses to, as the idemkey handler parses it.
type keyServer struct {
	mu   sync.Mutex
	keys []string
}

func (k *keyServer) serve(w http.ResponseWriter, r *http.Request) {
	key, err := handler.ParseKey(r.Header.Get(handler.HeaderName))
	if err != nil {
		key = "INVALID:" + err.Error()
	}
	k.mu.Lock()
	k.keys = append(k.keys, key)
	k.mu.Unlock()
	w.WriteHeader(http.StatusServiceUnavailable)
}

// RetryError.Key is the key as WithKey takes it: a caller's higher-level
// retry with WithKey(err.Key) reaches the server as the same key, also when
// the caller's header had spaces or a tab around the key (which the server
// does not count as part of it).
func TestRetryErrorKeyOfAHeaderWithWhitespaceIsTheServersKey(t *testing.T) {
	for _, v := range []string{"order-42 ", " order-42", "order-42\t"} {
		ks := &keyServer{}
		srv := httptest.NewServer(http.HandlerFunc(ks.serve))
		defer srv.Close()
		c := client.New(srv.Client(), func(o *client.Options) {
			o.MaxAttempts = 1
		})
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("{}"))
		req.Header.Set(client.HeaderName, v)
		_, err := c.Do(req)
		var re *client.RetryError
		require.True(t, errors.As(err, &re), "err %v", err)

		// The higher-level retry, as the package doc prescribes.
		req2, _ := http.NewRequestWithContext(client.WithKey(context.Background(), re.Key),
			http.MethodPost, srv.URL, strings.NewReader("{}"))
		_, err2 := c.Do(req2)
		if errors.Is(err2, client.ErrInvalidKey) {
			t.Errorf("header %q: the retry with WithKey(RetryError.Key=%q) is refused: %v", v, re.Key, err2)
			continue
		}
		ks.mu.Lock()
		keys := append([]string(nil), ks.keys...)
		ks.mu.Unlock()
		require.Len(t, keys, 2)
		if keys[0] != keys[1] {
			t.Errorf("header %q: server key of the first request %q, of the retry with WithKey(RetryError.Key=%q) %q: a new key, the operation executes twice",
				v, keys[0], re.Key, keys[1])
		}
	}
}

// MaxElapsed is documented as a budget the transport never waits past. A
// huge Retry-After with a huge MaxDelay must end in ErrBudgetExhausted,
// not in a wait of 292 years (elapsed + delay overflowed).
func TestHugeRetryAfterWithHugeMaxDelayEndsInBudgetExhausted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "99999999999999")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	var slept []time.Duration
	var clock atomic.Int64
	base := time.Unix(1_700_000_000, 0)
	c := client.New(srv.Client(), func(o *client.Options) {
		o.MaxDelay = math.MaxInt64
		o.MaxElapsed = time.Minute
		o.MaxAttempts = 3
		o.Now = func() time.Time { return base.Add(time.Duration(clock.Add(int64(time.Millisecond)))) }
		o.Sleep = func(ctx context.Context, d time.Duration) error {
			slept = append(slept, d)
			return nil
		}
	})
	_, err := c.Post(srv.URL, "application/json", strings.NewReader("{}"))
	var re *client.RetryError
	require.True(t, errors.As(err, &re), "err %v", err)
	if len(slept) > 0 || !errors.Is(err, client.ErrBudgetExhausted) {
		t.Errorf("waits %v, reason %v: want no wait and ErrBudgetExhausted (the wait is past the 1m budget)", slept, re.Reason)
	}
}

// A request body without GetBody is buffered up to MaxBufferBytes. With
// MaxBufferBytes = math.MaxInt64 (no limit) it is sent whole: limit+1
// overflowed, the body was read as empty, and the server executed another
// request under the key.
func TestBodyIsSentWholeWithMaxBufferBytesAtMaxInt64(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store(string(b))
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	c := client.New(srv.Client(), func(o *client.Options) { o.MaxBufferBytes = math.MaxInt64 })
	req, _ := http.NewRequest(http.MethodPost, srv.URL, io.NopCloser(strings.NewReader(`{"amount":1250}`)))
	resp, err := c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	if got.Load() != `{"amount":1250}` {
		t.Errorf("server received body %q, want %q", got.Load(), `{"amount":1250}`)
	}
}

// The package doc's third way of reusing a key: the answered request's
// header value, sent again as the header, reaches the server as the same
// key (the transport sends a caller's header unchanged).
func TestAnsweredRequestsHeaderSentAgainIsTheSameKey(t *testing.T) {
	ks := &keyServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ks.serve(httptest.NewRecorder(), r)
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	c := client.New(srv.Client())
	resp, err := c.Post(srv.URL, "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	resp.Body.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("{}"))
	req.Header.Set(client.HeaderName, resp.Request.Header.Get(client.HeaderName))
	resp, err = c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	ks.mu.Lock()
	defer ks.mu.Unlock()
	require.Len(t, ks.keys, 2)
	require.NotContains(t, ks.keys[0], "INVALID:")
	require.Equal(t, ks.keys[0], ks.keys[1])
}
