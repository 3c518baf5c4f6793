package client_test

import (
	"context"
	"errors"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/client"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/internal/ddbtest"
)

// server is an HTTP server whose answers are scripted per request: the
// n-th request it receives is answered by step n (the last step answers
// every later one). It records what each request carried.
type server struct {
	t     *testing.T
	srv   *httptest.Server
	steps []http.HandlerFunc

	mu   sync.Mutex
	seen []seen
}

type seen struct {
	method, key, body string
	contentLength     int64
}

func newServer(t *testing.T, steps ...http.HandlerFunc) *server {
	t.Helper()
	require.NotEmpty(t, steps)
	s := &server{t: t, steps: steps}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		s.t.Errorf("server: reading the body: %v", err)
	}
	s.mu.Lock()
	s.seen = append(s.seen, seen{method: r.Method, key: r.Header.Get(client.HeaderName), body: string(b), contentLength: r.ContentLength})
	step := s.steps[min(len(s.seen), len(s.steps))-1]
	s.mu.Unlock()
	step(w, r)
}

func (s *server) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.seen...)
}

func (s *server) keys() []string {
	var keys []string
	for _, r := range s.requests() {
		keys = append(keys, r.key)
	}
	return keys
}

// answer responds with status, the given header pairs and the body
// "status <code>".
func answer(status int, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, "status "+strconv.Itoa(status))
	}
}

// hangUp closes the connection without answering: the client cannot tell
// whether the request executed.
func hangUp(w http.ResponseWriter, r *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	_ = conn.Close()
}

// stall answers nothing until the client gives up on the request.
func stall(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

// attempt is what OnAttempt reported.
type attempt struct {
	n      int
	status int
	err    error
	delay  time.Duration
}

// probe records what a Transport does instead of waiting: the delays it
// asked Sleep for and the attempts it reported.
type probe struct {
	mu       sync.Mutex
	slept    []time.Duration
	attempts []attempt
}

func (p *probe) sleep(ctx context.Context, d time.Duration) error {
	p.mu.Lock()
	p.slept = append(p.slept, d)
	p.mu.Unlock()
	return ctx.Err()
}

func (p *probe) onAttempt(n int, resp *http.Response, err error, delay time.Duration) {
	a := attempt{n: n, err: err, delay: delay}
	if resp != nil {
		a.status = resp.StatusCode
	}
	p.mu.Lock()
	p.attempts = append(p.attempts, a)
	p.mu.Unlock()
}

func (p *probe) delays() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Duration(nil), p.slept...)
}

func (p *probe) reports() []attempt {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]attempt(nil), p.attempts...)
}

// newClient returns an http.Client over a fresh net/http transport, whose
// Transport sleeps and reports through the returned probe. optFns apply
// after the probe's.
func newClient(t *testing.T, optFns ...func(*client.Options)) (*http.Client, *probe) {
	t.Helper()
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	p := &probe{}
	fns := append([]func(*client.Options){func(o *client.Options) {
		o.Sleep = p.sleep
		o.OnAttempt = p.onAttempt
		o.Rand = rand.NewPCG(1, 2)
	}}, optFns...)
	return client.New(&http.Client{Transport: base}, fns...), p
}

func post(t *testing.T, c *http.Client, url, body string) (*http.Response, error) {
	t.Helper()
	return postCtx(t, context.Background(), c, url, body)
}

func postCtx(t *testing.T, ctx context.Context, c *http.Client, url, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	return c.Do(req)
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

func retryError(t *testing.T, err error) *client.RetryError {
	t.Helper()
	var re *client.RetryError
	require.ErrorAs(t, err, &re)
	return re
}

func TestEveryAttemptCarriesTheSameKey(t *testing.T) {
	s := newServer(t, answer(503), answer(503), answer(201))
	c, p := newClient(t)
	resp, err := post(t, c, s.srv.URL, `{"amount":1}`)
	require.NoError(t, err)
	assert.Equal(t, "status 201", readAll(t, resp))

	keys := s.keys()
	require.Len(t, keys, 3)
	assert.NotEmpty(t, keys[0])
	assert.Equal(t, []string{keys[0], keys[0], keys[0]}, keys)
	assert.Equal(t, keys[0], resp.Request.Header.Get(client.HeaderName), "the answered request carries the key")
	key, err := handler.ParseKey(keys[0])
	require.NoError(t, err, "the idemkey handler accepts the key")
	assert.Equal(t, `"`+key+`"`, keys[0], "sent as an sf-string")
	assert.Len(t, p.reports(), 3)
}

func TestEachLogicalRequestGetsAFreshKey(t *testing.T) {
	s := newServer(t, answer(503), answer(201), answer(503), answer(201), answer(503), answer(201))
	c, _ := newClient(t)
	for range 3 {
		resp, err := post(t, c, s.srv.URL, `{}`)
		require.NoError(t, err)
		readAll(t, resp)
	}
	k := s.keys()
	require.Len(t, k, 6)
	assert.Equal(t, k[0], k[1])
	assert.Equal(t, k[2], k[3])
	assert.Equal(t, k[4], k[5])
	assert.NotEqual(t, k[0], k[2])
	assert.NotEqual(t, k[2], k[4])
	assert.NotEqual(t, k[0], k[4])
}

func TestRetriesAfterTheConnectionDrops(t *testing.T) {
	s := newServer(t, hangUp, hangUp, answer(201))
	c, p := newClient(t)
	resp, err := post(t, c, s.srv.URL, `{"amount":1}`)
	require.NoError(t, err)
	assert.Equal(t, 201, resp.StatusCode)
	readAll(t, resp)

	keys := s.keys()
	require.Len(t, keys, 3)
	assert.Equal(t, keys[0], keys[2])
	reports := p.reports()
	require.Len(t, reports, 3)
	assert.Error(t, reports[0].err, "attempt 1 ended without a response")
	assert.Error(t, reports[1].err)
	assert.Equal(t, 201, reports[2].status)
}

func TestRetriesAfterAnAttemptTimesOut(t *testing.T) {
	s := newServer(t, stall, answer(201))
	c, p := newClient(t, func(o *client.Options) { o.AttemptTimeout = 100 * time.Millisecond })
	resp, err := post(t, c, s.srv.URL, `{"amount":1}`)
	require.NoError(t, err)
	assert.Equal(t, "status 201", readAll(t, resp), "the returned body outlives nothing but its own attempt")

	keys := s.keys()
	require.Len(t, keys, 2)
	assert.Equal(t, keys[0], keys[1])
	reports := p.reports()
	require.Len(t, reports, 2)
	assert.ErrorIs(t, reports[0].err, context.DeadlineExceeded)
}

func Test409WaitsForItsRetryAfter(t *testing.T) {
	s := newServer(t, answer(409, "Retry-After", "3"), answer(201))
	c, p := newClient(t)
	resp, err := post(t, c, s.srv.URL, `{}`)
	require.NoError(t, err)
	assert.Equal(t, 201, resp.StatusCode)
	readAll(t, resp)
	assert.Equal(t, []time.Duration{3 * time.Second}, p.delays())
	assert.Len(t, s.keys(), 2)
}

func TestRetryAfterAsAnHTTPDate(t *testing.T) {
	clock := ddbtest.NewClock(time.Unix(1_800_000_000, 0))
	at := clock.Now().Add(7 * time.Second).UTC().Format(http.TimeFormat)
	s := newServer(t, answer(503, "Retry-After", at), answer(201))
	c, p := newClient(t, func(o *client.Options) { o.Now = clock.Now })
	resp, err := post(t, c, s.srv.URL, `{}`)
	require.NoError(t, err)
	readAll(t, resp)
	assert.Equal(t, []time.Duration{7 * time.Second}, p.delays())
}

func TestRetryAfterIsCappedAtMaxDelay(t *testing.T) {
	for _, v := range []string{"3600", "99999999999999999999999"} {
		s := newServer(t, answer(429, "Retry-After", v), answer(201))
		c, p := newClient(t, func(o *client.Options) { o.MaxDelay = 2 * time.Second })
		resp, err := post(t, c, s.srv.URL, `{}`)
		require.NoError(t, err, v)
		readAll(t, resp)
		assert.Equal(t, []time.Duration{2 * time.Second}, p.delays(), v)
	}
}

func TestUnusableRetryAfterFallsBackToBackoff(t *testing.T) {
	clock := ddbtest.NewClock(time.Unix(1_800_000_000, 0))
	past := clock.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)
	for _, v := range []string{"soon", "-5", past} {
		s := newServer(t, answer(503, "Retry-After", v), answer(201))
		c, p := newClient(t, func(o *client.Options) { o.Now = clock.Now; o.BaseDelay = 50 * time.Millisecond })
		resp, err := post(t, c, s.srv.URL, `{}`)
		require.NoError(t, err, v)
		readAll(t, resp)
		d := p.delays()
		require.Len(t, d, 1, v)
		assert.LessOrEqual(t, d[0], 50*time.Millisecond, v)
	}
}

func TestRetriesTheDefaultRetryableStatuses(t *testing.T) {
	assert.Equal(t, []int{409, 425, 429, 500, 502, 503, 504}, client.DefaultRetryStatuses())
	assert.Equal(t, []int{409, 500}, client.DefaultRetryAfterStatuses())
	for _, status := range client.DefaultRetryStatuses() {
		first := answer(status)
		if slices.Contains(client.DefaultRetryAfterStatuses(), status) {
			first = answer(status, "Retry-After", "1")
		}
		s := newServer(t, first, answer(201))
		c, p := newClient(t)
		resp, err := post(t, c, s.srv.URL, `{}`)
		require.NoError(t, err, status)
		assert.Equal(t, 201, resp.StatusCode, status)
		readAll(t, resp)
		keys := s.keys()
		require.Len(t, keys, 2, status)
		assert.Equal(t, keys[0], keys[1], status)
		assert.Equal(t, status, p.reports()[0].status)
	}
}

func TestEmptyRetryAfterStatusesRetriesWithoutRetryAfter(t *testing.T) {
	s := newServer(t, answer(500), answer(201))
	c, _ := newClient(t, func(o *client.Options) { o.RetryAfterStatuses = []int{} })
	resp, err := post(t, c, s.srv.URL, `{}`)
	require.NoError(t, err)
	assert.Equal(t, 201, resp.StatusCode)
	readAll(t, resp)
	assert.Len(t, s.requests(), 2)
}

// Client errors, and a 409 or a 500 without Retry-After (idemkey's answers
// to a failed staged condition and to a fault a retry meets again), are
// returned after one attempt.
func TestNeverRetriesClientErrorsNor409Or500WithoutRetryAfter(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 405, 409, 413, 422, 500} {
		s := newServer(t, answer(status), answer(201))
		c, p := newClient(t)
		resp, err := post(t, c, s.srv.URL, `{}`)
		require.NoError(t, err, status)
		assert.Equal(t, status, resp.StatusCode)
		assert.Equal(t, "status "+strconv.Itoa(status), readAll(t, resp), "the response is returned with its body")
		assert.Len(t, s.requests(), 1, status)
		assert.Empty(t, p.delays(), status)
	}
}

func TestRetryStatusesCanBeNarrowed(t *testing.T) {
	s := newServer(t, answer(500), answer(201))
	c, _ := newClient(t, func(o *client.Options) { o.RetryStatuses = []int{503} })
	resp, err := post(t, c, s.srv.URL, `{}`)
	require.NoError(t, err)
	assert.Equal(t, 500, resp.StatusCode)
	readAll(t, resp)
	assert.Len(t, s.requests(), 1)
}

func TestGivesUpAfterMaxAttempts(t *testing.T) {
	s := newServer(t, answer(503))
	c, p := newClient(t, func(o *client.Options) { o.MaxAttempts = 3 })
	resp, err := post(t, c, s.srv.URL, `{}`)
	require.Error(t, err)
	assert.Nil(t, resp)
	re := retryError(t, err)
	assert.Equal(t, 3, re.Attempts)
	assert.Equal(t, 503, re.LastStatus)
	assert.NoError(t, re.Last)
	assert.ErrorIs(t, err, client.ErrAttemptsExhausted)
	keys := s.keys()
	require.Len(t, keys, 3)
	assert.Equal(t, keys[0], `"`+re.Key+`"`, "the error names the key, to retry later with WithKey")
	assert.Len(t, p.delays(), 2, "no wait after the last attempt")
	reports := p.reports()
	require.Len(t, reports, 3)
	assert.Zero(t, reports[2].delay)
	assert.Contains(t, err.Error(), "gave up after 3 attempts")
}

func TestGivesUpAfterMaxAttemptsOfTransportErrors(t *testing.T) {
	s := newServer(t, hangUp)
	c, _ := newClient(t, func(o *client.Options) { o.MaxAttempts = 2 })
	_, err := post(t, c, s.srv.URL, `{}`)
	re := retryError(t, err)
	assert.Equal(t, 2, re.Attempts)
	assert.Zero(t, re.LastStatus)
	assert.Error(t, re.Last)
	assert.ErrorIs(t, err, client.ErrAttemptsExhausted)
	assert.Len(t, s.requests(), 2)
}

func TestOneAttemptSendsAKeyAndNeverRetries(t *testing.T) {
	s := newServer(t, answer(503))
	c, _ := newClient(t, func(o *client.Options) { o.MaxAttempts = 1 })
	_, err := post(t, c, s.srv.URL, `{}`)
	assert.ErrorIs(t, err, client.ErrAttemptsExhausted)
	require.Len(t, s.requests(), 1)
	assert.NotEmpty(t, s.requests()[0].key)
}

func TestGivesUpWhenTheNextWaitWouldExceedMaxElapsed(t *testing.T) {
	clock := ddbtest.NewClock(time.Unix(1_800_000_000, 0))
	var slept []time.Duration
	s := newServer(t, answer(503, "Retry-After", "2"))
	c, _ := newClient(t, func(o *client.Options) {
		o.Now = clock.Now
		o.MaxElapsed = 5 * time.Second
		o.Sleep = func(ctx context.Context, d time.Duration) error {
			slept = append(slept, d)
			clock.Advance(d)
			return nil
		}
	})
	_, err := post(t, c, s.srv.URL, `{}`)
	assert.ErrorIs(t, err, client.ErrBudgetExhausted)
	assert.Equal(t, 3, retryError(t, err).Attempts, "waits at 0s and 2s fit in 5s; one at 4s does not")
	assert.Equal(t, []time.Duration{2 * time.Second, 2 * time.Second}, slept)
	assert.Len(t, s.requests(), 3)
}

func TestBackoffIsExponentialWithFullJitterAndBounded(t *testing.T) {
	const base, maxDelay, attempts, requests = 100 * time.Millisecond, time.Second, 7, 60
	run := func(seed uint64) map[int][]time.Duration {
		s := newServer(t, answer(503))
		byAttempt := map[int][]time.Duration{}
		c, _ := newClient(t, func(o *client.Options) {
			o.BaseDelay, o.MaxDelay, o.MaxAttempts = base, maxDelay, attempts
			o.Rand = rand.NewPCG(seed, seed)
			o.OnAttempt = func(n int, _ *http.Response, _ error, d time.Duration) {
				if n < attempts {
					byAttempt[n] = append(byAttempt[n], d)
				}
			}
		})
		for range requests {
			_, err := post(t, c, s.srv.URL, `{}`)
			require.ErrorIs(t, err, client.ErrAttemptsExhausted)
		}
		return byAttempt
	}
	got := run(7)
	ceilings := map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond,
		4: 800 * time.Millisecond, 5: time.Second, 6: time.Second}
	for n, ceiling := range ceilings {
		delays := got[n]
		require.Len(t, delays, requests, "attempt %d", n)
		lo, hi := delays[0], delays[0]
		for _, d := range delays {
			assert.GreaterOrEqual(t, d, time.Duration(0))
			assert.LessOrEqual(t, d, ceiling, "attempt %d", n)
			lo, hi = min(lo, d), max(hi, d)
		}
		assert.Less(t, lo, ceiling/5, "attempt %d: jitter reaches down to 0", n)
		assert.Greater(t, hi, ceiling*4/5, "attempt %d: jitter reaches up to the ceiling", n)
	}
	assert.Equal(t, got, run(7), "the same seed gives the same delays")
	assert.NotEqual(t, got, run(8))
}

func TestBackoffCeilingStopsAtAHugeMaxDelayWithoutOverflowing(t *testing.T) {
	// Doubling 100ms passes math.MaxInt64 after 37 doublings: a ceiling
	// that wrapped would make every later wait 0, a hot retry loop.
	const attempts = 60
	s := newServer(t, answer(503))
	c, p := newClient(t, func(o *client.Options) {
		o.MaxAttempts = attempts
		o.MaxDelay = time.Duration(math.MaxInt64)
		o.MaxElapsed = -1
	})
	_, err := post(t, c, s.srv.URL, `{}`)
	require.ErrorIs(t, err, client.ErrAttemptsExhausted)
	delays := p.delays()
	require.Len(t, delays, attempts-1)
	for i, d := range delays[40:] {
		// Full jitter over a ceiling of MaxDelay: below an hour once in
		// millions of draws, and never with this seed.
		assert.Greater(t, d, time.Hour, "the wait before attempt %d", 42+i)
	}
}

func TestEveryAttemptSendsTheWholeBody(t *testing.T) {
	const body = `{"amount":1250,"currency":"EUR","description":"rent"}`
	cases := map[string]func(url string) *http.Request{
		"with GetBody": func(url string) *http.Request {
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
			require.NotNil(t, req.GetBody)
			return req
		},
		"without GetBody": func(url string) *http.Request {
			req, _ := http.NewRequest(http.MethodPost, url, io.MultiReader(strings.NewReader(body)))
			require.Nil(t, req.GetBody)
			return req
		},
	}
	for name, build := range cases {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, hangUp, answer(503), answer(201))
			c, _ := newClient(t)
			resp, err := c.Do(build(s.srv.URL))
			require.NoError(t, err)
			readAll(t, resp)
			reqs := s.requests()
			require.Len(t, reqs, 3)
			for i, r := range reqs {
				assert.Equal(t, body, r.body, "attempt %d", i+1)
				assert.Equal(t, int64(len(body)), r.contentLength, "attempt %d", i+1)
			}
		})
	}
}

// closeTracker is a request body that records whether it was closed.
type closeTracker struct {
	io.Reader
	mu     sync.Mutex
	closed bool
}

func (c *closeTracker) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return nil
}

func (c *closeTracker) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func TestBodyWithoutGetBodyIsBufferedUpToALimit(t *testing.T) {
	s := newServer(t, answer(503), answer(201))
	c, _ := newClient(t, func(o *client.Options) { o.MaxBufferBytes = 10 })

	atLimit := &closeTracker{Reader: strings.NewReader("0123456789")}
	req, err := http.NewRequest(http.MethodPost, s.srv.URL, atLimit)
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.NoError(t, err)
	readAll(t, resp)
	assert.True(t, atLimit.isClosed())
	require.Len(t, s.requests(), 2)
	assert.Equal(t, "0123456789", s.requests()[1].body)

	over := &closeTracker{Reader: strings.NewReader("0123456789A")}
	req, err = http.NewRequest(http.MethodPost, s.srv.URL, over)
	require.NoError(t, err)
	_, err = c.Do(req)
	assert.ErrorIs(t, err, client.ErrBodyNotRewindable)
	var re *client.RetryError
	assert.False(t, errors.As(err, &re), "nothing was sent: not a RetryError")
	assert.True(t, over.isClosed(), "the caller's body is closed")
	assert.Len(t, s.requests(), 2, "the over-long request was not sent")
}

func TestFailingGetBodyStopsTheRetries(t *testing.T) {
	s := newServer(t, answer(503), answer(201))
	c, _ := newClient(t)
	req, err := http.NewRequest(http.MethodPost, s.srv.URL, strings.NewReader("{}"))
	require.NoError(t, err)
	req.GetBody = func() (io.ReadCloser, error) { return nil, errors.New("file is gone") }
	_, err = c.Do(req)
	assert.ErrorIs(t, err, client.ErrBodyNotRewindable)
	re := retryError(t, err)
	assert.Equal(t, 1, re.Attempts)
	assert.Equal(t, 503, re.LastStatus)
	assert.Len(t, s.requests(), 1)
}

func TestCancelDuringBackoffStopsAtOnce(t *testing.T) {
	s := newServer(t, answer(503, "Retry-After", "3600"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, _ := newClient(t, func(o *client.Options) {
		o.Sleep = nil // the real timer: an hour
		o.MaxDelay = 2 * time.Hour
		o.MaxElapsed = 3 * time.Hour
		o.OnAttempt = func(n int, _ *http.Response, _ error, d time.Duration) {
			assert.Equal(t, time.Hour, d)
			cancel()
		}
	})
	done := make(chan error, 1)
	go func() { _, err := postCtx(t, ctx, c, s.srv.URL, `{}`); done <- err }()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
		re := retryError(t, err)
		assert.Equal(t, 1, re.Attempts)
		assert.Equal(t, 503, re.LastStatus)
	case <-time.After(time.Minute):
		t.Fatal("RoundTrip kept sleeping after its context was canceled")
	}
	assert.Len(t, s.requests(), 1)
}

func TestCancelDuringAnAttemptStopsWithoutRetry(t *testing.T) {
	arrived := make(chan struct{})
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { close(arrived); stall(w, r) }, answer(201))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, p := newClient(t)
	go func() { <-arrived; cancel() }()
	_, err := postCtx(t, ctx, c, s.srv.URL, `{}`)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, retryError(t, err).Attempts)
	assert.Len(t, s.requests(), 1)
	assert.Empty(t, p.delays())
}

func TestCanceledContextSendsNothing(t *testing.T) {
	s := newServer(t, answer(201))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c, _ := newClient(t)
	body := &closeTracker{Reader: strings.NewReader("{}")}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.srv.URL, body)
	require.NoError(t, err)
	_, err = c.Transport.RoundTrip(req)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 0, retryError(t, err).Attempts)
	assert.True(t, body.isClosed())
	assert.Empty(t, s.requests())
}

func TestCallerSuppliedKeyWins(t *testing.T) {
	t.Run("header", func(t *testing.T) {
		s := newServer(t, answer(503), answer(201))
		c, _ := newClient(t)
		req, err := http.NewRequestWithContext(client.WithKey(context.Background(), "from-context"),
			http.MethodPost, s.srv.URL, strings.NewReader("{}"))
		require.NoError(t, err)
		req.Header.Set(client.HeaderName, "order-42")
		resp, err := c.Do(req)
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, []string{"order-42", "order-42"}, s.keys(), "sent unchanged, over the context's key")
	})
	t.Run("context", func(t *testing.T) {
		const key = `order "43" \ eu`
		s := newServer(t, answer(503), answer(201))
		c, _ := newClient(t)
		resp, err := postCtx(t, client.WithKey(context.Background(), key), c, s.srv.URL, "{}")
		require.NoError(t, err)
		readAll(t, resp)
		keys := s.keys()
		require.Len(t, keys, 2)
		assert.Equal(t, keys[0], keys[1])
		parsed, err := handler.ParseKey(keys[0])
		require.NoError(t, err)
		assert.Equal(t, key, parsed, "the handler reads back the caller's key")
	})
	t.Run("header key is reported unquoted", func(t *testing.T) {
		s := newServer(t, answer(503))
		c, _ := newClient(t, func(o *client.Options) { o.MaxAttempts = 2 })
		req, err := http.NewRequest(http.MethodPost, s.srv.URL, strings.NewReader("{}"))
		require.NoError(t, err)
		req.Header.Set(client.HeaderName, `"a\"b"`)
		_, err = c.Do(req)
		assert.Equal(t, `a"b`, retryError(t, err).Key)
	})
}

func TestKeyFromContextReturnsTheKeyOfWithKey(t *testing.T) {
	_, ok := client.KeyFromContext(context.Background())
	assert.False(t, ok)
	key, ok := client.KeyFromContext(client.WithKey(context.Background(), "k1"))
	assert.True(t, ok)
	assert.Equal(t, "k1", key)
}

func TestInvalidContextKeyIsRefusedBeforeSending(t *testing.T) {
	s := newServer(t, answer(201))
	c, _ := newClient(t)
	for _, key := range []string{"", "ключ", "tab\tkey", strings.Repeat("k", 256)} {
		_, err := postCtx(t, client.WithKey(context.Background(), key), c, s.srv.URL, "{}")
		assert.ErrorIs(t, err, client.ErrInvalidKey, "%q", key)
		var ke *client.KeyError
		assert.ErrorAs(t, err, &ke)
	}
	assert.Empty(t, s.requests())
	resp, err := postCtx(t, client.WithKey(context.Background(), strings.Repeat("k", 255)), c, s.srv.URL, "{}")
	require.NoError(t, err, "255 bytes is the longest key")
	readAll(t, resp)
}

func TestUnguardedMethodsPassThroughWithoutKeyOrRetry(t *testing.T) {
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete} {
		s := newServer(t, answer(503), answer(200))
		c, p := newClient(t)
		req, err := http.NewRequest(method, s.srv.URL, nil)
		require.NoError(t, err)
		resp, err := c.Do(req)
		require.NoError(t, err, method)
		assert.Equal(t, 503, resp.StatusCode, method)
		readAll(t, resp)
		reqs := s.requests()
		require.Len(t, reqs, 1, method)
		assert.Empty(t, reqs[0].key, method)
		assert.Empty(t, p.reports(), method)
	}
}

func TestGuardedMethodsAreConfigurable(t *testing.T) {
	s := newServer(t, answer(503), answer(204))
	c, _ := newClient(t, func(o *client.Options) { o.Methods = []string{http.MethodDelete} })
	req, err := http.NewRequest(http.MethodDelete, s.srv.URL, nil)
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.NoError(t, err)
	assert.Equal(t, 204, resp.StatusCode)
	readAll(t, resp)
	keys := s.keys()
	require.Len(t, keys, 2)
	assert.NotEmpty(t, keys[0])
	assert.Equal(t, keys[0], keys[1])

	resp, err = post(t, c, s.srv.URL, "{}")
	require.NoError(t, err)
	readAll(t, resp)
	assert.Empty(t, s.requests()[2].key, "POST is no longer guarded")
}

func TestTheCallersRequestIsNotModified(t *testing.T) {
	s := newServer(t, answer(503), answer(201))
	c, _ := newClient(t)
	req, err := http.NewRequest(http.MethodPost, s.srv.URL, strings.NewReader("{}"))
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.NoError(t, err)
	readAll(t, resp)
	assert.Empty(t, req.Header.Values(client.HeaderName))
	assert.NotSame(t, req, resp.Request)
}

// bodyTracker wraps the base transport's response bodies to see how the
// Transport leaves the ones it discards.
type bodyTracker struct {
	base   http.RoundTripper
	mu     sync.Mutex
	bodies []*trackedBody
}

type trackedBody struct {
	rc     io.ReadCloser
	mu     sync.Mutex
	read   int
	closed bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.mu.Lock()
	b.read += n
	b.mu.Unlock()
	return n, err
}

func (b *trackedBody) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return b.rc.Close()
}

func (b *trackedBody) state() (int, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.read, b.closed
}

func (bt *bodyTracker) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := bt.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	tb := &trackedBody{rc: resp.Body}
	resp.Body = tb
	bt.mu.Lock()
	bt.bodies = append(bt.bodies, tb)
	bt.mu.Unlock()
	return resp, nil
}

func TestDiscardedResponsesAreDrainedAndClosed(t *testing.T) {
	problem := strings.Repeat("x", 5000)
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(503)
		_, _ = io.WriteString(w, problem)
	}, answer(201))
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	tracker := &bodyTracker{base: base}
	c := client.New(&http.Client{Transport: tracker}, func(o *client.Options) {
		o.Sleep = func(context.Context, time.Duration) error { return nil }
	})
	resp, err := post(t, c, s.srv.URL, "{}")
	require.NoError(t, err)
	require.Len(t, tracker.bodies, 2)
	read, closed := tracker.bodies[0].state()
	assert.Equal(t, len(problem), read, "drained")
	assert.True(t, closed, "closed")
	_, closed = tracker.bodies[1].state()
	assert.False(t, closed, "the returned body is the caller's to close")
	assert.Equal(t, "status 201", readAll(t, resp))
}

func TestUnverifiableCertificateIsNotRetried(t *testing.T) {
	srv := httptest.NewUnstartedServer(answer(201))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c, p := newClient(t) // its transport does not trust the test certificate
	_, err := post(t, c, srv.URL, "{}")
	assert.ErrorIs(t, err, client.ErrNotRetryable)
	assert.Equal(t, 1, retryError(t, err).Attempts)
	assert.Len(t, p.reports(), 1)
	assert.Empty(t, p.delays())
}

func TestNewLeavesTheBaseClientAlone(t *testing.T) {
	redirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	base := &http.Client{Timeout: 7 * time.Second, CheckRedirect: redirect}
	c := client.New(base)
	assert.Nil(t, base.Transport)
	assert.IsType(t, &client.Transport{}, c.Transport)
	assert.Equal(t, 7*time.Second, c.Timeout)
	assert.NotNil(t, c.CheckRedirect)

	s := newServer(t, answer(503), answer(201))
	c = client.New(nil, func(o *client.Options) { o.BaseDelay = time.Millisecond })
	resp, err := post(t, c, s.srv.URL, "{}")
	require.NoError(t, err)
	assert.Equal(t, 201, resp.StatusCode)
	readAll(t, resp)
}

func TestRetryErrorMatchesItsReasonAndLastError(t *testing.T) {
	last := errors.New("connection reset")
	err := error(&client.RetryError{Key: "k", Attempts: 2, Last: last, Reason: client.ErrAttemptsExhausted})
	assert.ErrorIs(t, err, last)
	assert.ErrorIs(t, err, client.ErrAttemptsExhausted)
	assert.NotErrorIs(t, err, client.ErrBudgetExhausted)
	assert.Equal(t, "client: gave up after 2 attempts (client: attempts exhausted): connection reset", err.Error())
	err = &client.RetryError{Attempts: 1, LastStatus: 503, Reason: context.Canceled}
	assert.Equal(t, "client: gave up after 1 attempt (context canceled): last status 503", err.Error())
	assert.ErrorIs(t, err, context.Canceled)
}

func TestNewKeyIsRandomAndAccepted(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		k := client.NewKey()
		_, err := handler.ParseKey(k)
		require.NoError(t, err)
		assert.False(t, seen[k])
		seen[k] = true
	}
}
