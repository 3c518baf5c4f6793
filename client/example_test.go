package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/idemkey/idemkey/client"
)

// keyLog is a test server's record of the keys it received.
type keyLog struct {
	mu   sync.Mutex
	keys []string
}

func (l *keyLog) add(r *http.Request) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keys = append(l.keys, r.Header.Get(client.HeaderName))
	return len(l.keys)
}

func (l *keyLog) allSame() (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range l.keys {
		if k != l.keys[0] {
			return len(l.keys), false
		}
	}
	return len(l.keys), true
}

// failingOnce serves a server that answers its first request with status
// (and the header pairs given) and every later one with 201 Created.
func failingOnce(log *keyLog, status int, header ...string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if log.add(r) == 1 {
			for i := 0; i+1 < len(header); i += 2 {
				w.Header().Set(header[i], header[i+1])
			}
			w.WriteHeader(status)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
}

// A client that retries POSTs safely: the first attempt meets an
// overloaded server, the second carries the same key.
func ExampleNew() {
	var log keyLog
	srv := failingOnce(&log, http.StatusServiceUnavailable)
	defer srv.Close()

	c := client.New(nil, func(o *client.Options) { o.BaseDelay = time.Millisecond })
	resp, err := c.Post(srv.URL+"/payments", "application/json", strings.NewReader(`{"amount":1250,"currency":"EUR"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	n, same := log.allSame()
	fmt.Println(resp.Status, "after", n, "attempts; same key:", same)
	// Output: 201 Created after 2 attempts; same key: true
}

// Reusing one key across the caller's own retries: when the transport
// gives up, its error names the key; a later retry with WithKey is the
// same logical operation.
func ExampleWithKey() {
	var log keyLog
	srv := failingOnce(&log, http.StatusServiceUnavailable)
	defer srv.Close()
	c := client.New(nil, func(o *client.Options) { o.MaxAttempts = 1 })
	pay := func(ctx context.Context) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/payments", strings.NewReader(`{"amount":5,"currency":"EUR"}`))
		return c.Do(req)
	}

	_, err := pay(context.Background())
	var gaveUp *client.RetryError
	if !errors.As(err, &gaveUp) {
		fmt.Println("unexpected:", err)
		return
	}
	fmt.Println("first try:", gaveUp.LastStatus)

	// Later (a queue redelivers the job): the same key.
	resp, err := pay(client.WithKey(context.Background(), gaveUp.Key))
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	_, same := log.allSame()
	fmt.Println("second try:", resp.StatusCode, "same key:", same)
	// Output:
	// first try: 503
	// second try: 201 same key: true
}

// Observing attempts, for metrics or logs. A 409 asks to come back after
// Retry-After (here capped at MaxDelay, 10ms).
func ExampleNewTransport() {
	var log keyLog
	srv := failingOnce(&log, http.StatusConflict, "Retry-After", "1")
	defer srv.Close()

	rt := client.NewTransport(http.DefaultTransport, func(o *client.Options) {
		o.BaseDelay = time.Millisecond
		o.MaxDelay = 10 * time.Millisecond
		o.OnAttempt = func(attempt int, resp *http.Response, err error, delay time.Duration) {
			if err != nil {
				fmt.Printf("attempt %d: %v\n", attempt, err)
				return
			}
			fmt.Printf("attempt %d: %s, next in %v\n", attempt, resp.Status, delay)
		}
	})
	resp, err := (&http.Client{Transport: rt}).Post(srv.URL+"/payments", "application/json", strings.NewReader(`{}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	// Output:
	// attempt 1: 409 Conflict, next in 10ms
	// attempt 2: 201 Created, next in 0s
}
