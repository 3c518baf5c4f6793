package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idemkey/idemkey/internal/httpmethod"
)

// Defaults of Options.
const (
	DefaultMaxAttempts    = 5
	DefaultBaseDelay      = 100 * time.Millisecond
	DefaultMaxDelay       = 10 * time.Second
	DefaultMaxElapsed     = time.Minute
	DefaultMaxBufferBytes = 1 << 20
)

// drainLimit bounds how much of a discarded response body is read so that
// its connection can be reused; a longer body's connection is closed.
const drainLimit = 64 << 10

// DefaultRetryStatuses returns the statuses retried by default: 409, 425,
// 429, 500, 502, 503 and 504. The package documentation says why each is
// safe to retry with the same key.
func DefaultRetryStatuses() []int {
	return []int{
		http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout,
	}
}

// DefaultRetryAfterStatuses returns the statuses retried by default only
// when the response carries Retry-After: 409 and 500. An idemkey server
// marks with Retry-After the 409s that a retry with the same key resolves
// (a request in flight, a lost lock), and sends none with the 409 of a
// staged condition that failed or with its 500s, whose causes a retry
// meets again.
func DefaultRetryAfterStatuses() []int {
	return []int{http.StatusConflict, http.StatusInternalServerError}
}

// Options configure a Transport. The zero value of each field selects its
// default.
type Options struct {
	// Methods are the guarded methods: they get a key and retries. Default
	// POST and PATCH, as the idemkey handler guards. Methods are
	// case-sensitive: write "POST", never "post" (NewTransport refuses it). Other methods pass
	// through to the base transport untouched.
	Methods []string
	// MaxAttempts bounds the attempts of one request, the first included
	// (default DefaultMaxAttempts; 1 sends once, with a key, and never
	// retries).
	MaxAttempts int
	// BaseDelay is the backoff ceiling before the second attempt; it
	// doubles for each later one (default DefaultBaseDelay).
	BaseDelay time.Duration
	// MaxDelay caps the backoff ceiling and the Retry-After a response may
	// ask for (default DefaultMaxDelay). A longer Retry-After is shortened
	// to MaxDelay.
	MaxDelay time.Duration
	// MaxElapsed is the time budget of one request, from its first attempt
	// to the start of its last: the transport gives up (ErrBudgetExhausted)
	// rather than wait past it. It does not bound an attempt itself: see
	// AttemptTimeout and the request's context. Default DefaultMaxElapsed;
	// a negative value means no budget.
	MaxElapsed time.Duration
	// AttemptTimeout bounds each attempt, up to its response headers and,
	// for the response returned, the caller's reading of its body (as
	// http.Client.Timeout does). An attempt that times out is retried.
	// Default: none; the request's context still applies.
	AttemptTimeout time.Duration
	// RetryStatuses are the response statuses retried (default, when nil:
	// DefaultRetryStatuses()). Any other status is returned as it is. An
	// empty, non-nil slice retries transport errors only.
	RetryStatuses []int
	// RetryAfterStatuses are the statuses of RetryStatuses that are
	// retried only when the response carries a Retry-After header
	// (default, when nil: DefaultRetryAfterStatuses()). An empty, non-nil
	// slice retries every status of RetryStatuses.
	RetryAfterStatuses []int
	// MaxBufferBytes bounds the body of a request without GetBody, which
	// is read into memory once to be sent on every attempt (default
	// DefaultMaxBufferBytes). A longer body fails with
	// ErrBodyNotRewindable and nothing is sent. A negative value refuses
	// every body without GetBody.
	MaxBufferBytes int64
	// Rand is the source of the backoff jitter. Default: math/rand/v2's
	// process-wide generator. Set a seeded source (rand.NewPCG) for
	// reproducible delays; the transport serialises its use.
	Rand rand.Source
	// Sleep waits d or until ctx ends, and returns ctx's error if it ended
	// first. Default: a timer. Tests inject one that records the delays.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock of MaxElapsed and of HTTP-date Retry-After values
	// (default time.Now).
	Now func() time.Time
	// OnAttempt, when set, is called after every attempt of a guarded
	// request, from the goroutine of RoundTrip: attempt counts from 1; resp
	// and err are the attempt's outcome (one of them is nil); delay is the
	// wait before the next attempt, or 0 when there is none. It must not
	// read or close resp.Body. Use it for metrics and logs; it must not
	// block.
	OnAttempt func(attempt int, resp *http.Response, err error, delay time.Duration)
}

// Transport is an http.RoundTripper that sends one Idempotency-Key per
// guarded request and retries the request with it. See the package
// documentation for the contract. A Transport is safe for concurrent use.
type Transport struct {
	base     http.RoundTripper
	opts     Options
	methods  map[string]bool
	statuses map[int]bool
	marked   map[int]bool // retried only with Retry-After

	mu  sync.Mutex // guards rng
	rng *rand.Rand // nil: math/rand/v2's generator
}

var _ http.RoundTripper = (*Transport)(nil)

// NewTransport returns a Transport sending attempts through base
// (http.DefaultTransport when nil). It panics if Options.Methods lists a
// method that would match no request: empty, not an HTTP token, or with
// lower-case letters ("post" would give no POST a key).
func NewTransport(base http.RoundTripper, optFns ...func(*Options)) *Transport {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if base == nil {
		base = http.DefaultTransport
	}
	if len(o.Methods) == 0 {
		o.Methods = []string{http.MethodPost, http.MethodPatch}
	}
	for _, m := range o.Methods {
		if why := httpmethod.Problem(m); why != "" {
			panic("client: Options.Methods: " + why)
		}
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.BaseDelay <= 0 {
		o.BaseDelay = DefaultBaseDelay
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = DefaultMaxDelay
	}
	if o.MaxElapsed == 0 {
		o.MaxElapsed = DefaultMaxElapsed
	}
	if o.RetryStatuses == nil {
		o.RetryStatuses = DefaultRetryStatuses()
	}
	if o.RetryAfterStatuses == nil {
		o.RetryAfterStatuses = DefaultRetryAfterStatuses()
	}
	if o.MaxBufferBytes == 0 {
		o.MaxBufferBytes = DefaultMaxBufferBytes
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	t := &Transport{base: base, opts: o, methods: map[string]bool{}, statuses: map[int]bool{}, marked: map[int]bool{}}
	for _, m := range o.Methods {
		t.methods[m] = true
	}
	for _, s := range o.RetryStatuses {
		t.statuses[s] = true
	}
	for _, s := range o.RetryAfterStatuses {
		t.marked[s] = true
	}
	if o.Rand != nil {
		t.rng = rand.New(o.Rand)
	}
	return t
}

// New returns a copy of base (http.DefaultClient when nil) whose transport
// is a Transport over base's transport. base itself is not modified. It
// panics as NewTransport does.
func New(base *http.Client, optFns ...func(*Options)) *http.Client {
	var c http.Client
	if base != nil {
		c = *base
	}
	c.Transport = NewTransport(c.Transport, optFns...)
	return &c
}

// RoundTrip sends req. A request whose method is not guarded goes to the
// base transport as it is. A guarded request is sent with its key (see the
// package documentation for where the key comes from) until an attempt
// gets a response whose status is not retried (see RetryStatuses and
// RetryAfterStatuses), which is returned;
// its resp.Request carries the key. Otherwise RoundTrip returns a
// *RetryError. Before anything is sent it can also fail with an error
// matching ErrInvalidKey or ErrBodyNotRewindable, or one reading the body.
// req itself is not modified; its body is closed.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.methods[valueOr(req.Method, http.MethodGet)] {
		return t.base.RoundTrip(req)
	}
	key, header, err := keyOf(req)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	body, err := t.bodyOf(req)
	if err != nil {
		return nil, err
	}
	ctx := req.Context()
	start := t.opts.Now()
	gaveUp := &RetryError{Key: key}
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			if attempt == 1 && body.first != nil {
				_ = body.first.Close()
			}
			gaveUp.Reason = err
			return nil, gaveUp
		}
		rc, err := body.open(attempt)
		if err != nil {
			gaveUp.Reason = fmt.Errorf("%w: GetBody: %w", ErrBodyNotRewindable, err)
			return nil, gaveUp
		}
		actx, cancel := ctx, context.CancelFunc(func() {})
		if t.opts.AttemptTimeout > 0 {
			actx, cancel = context.WithTimeout(ctx, t.opts.AttemptTimeout)
		}
		out := req.Clone(actx)
		if out.Header == nil {
			out.Header = make(http.Header)
		}
		if header != "" {
			out.Header.Set(HeaderName, header)
		}
		out.Body, out.GetBody, out.ContentLength = rc, body.get, body.length

		resp, err := t.base.RoundTrip(out)
		if err == nil && !t.retried(resp) {
			t.observe(attempt, resp, nil, 0)
			if t.opts.AttemptTimeout > 0 {
				resp.Body = &cancelBody{rc: resp.Body, cancel: cancel}
			} else {
				cancel() // a no-op, without a timeout
			}
			return resp, nil
		}

		gaveUp.Attempts, gaveUp.Last, gaveUp.LastStatus = attempt, err, 0
		if resp != nil {
			gaveUp.LastStatus = resp.StatusCode
		}
		var delay time.Duration
		switch {
		case ctx.Err() != nil:
			gaveUp.Reason = ctx.Err()
		case err != nil && !retryable(err):
			gaveUp.Reason = ErrNotRetryable
		case attempt >= t.opts.MaxAttempts:
			gaveUp.Reason = ErrAttemptsExhausted
		default:
			delay = t.delay(attempt, resp)
			// Compared without a sum, which a huge delay would overflow.
			if elapsed := t.opts.Now().Sub(start); t.opts.MaxElapsed > 0 && (elapsed >= t.opts.MaxElapsed || delay > t.opts.MaxElapsed-elapsed) {
				gaveUp.Reason, delay = ErrBudgetExhausted, 0
			}
		}
		t.observe(attempt, resp, err, delay)
		discard(resp)
		cancel()
		if gaveUp.Reason != nil {
			return nil, gaveUp
		}
		if err := t.opts.Sleep(ctx, delay); err != nil {
			gaveUp.Reason = err
			return nil, gaveUp
		}
	}
}

// retried reports whether resp's status is one to retry: in RetryStatuses,
// and with a Retry-After header when in RetryAfterStatuses.
func (t *Transport) retried(resp *http.Response) bool {
	return t.statuses[resp.StatusCode] && (!t.marked[resp.StatusCode] || resp.Header.Get("Retry-After") != "")
}

func (t *Transport) observe(attempt int, resp *http.Response, err error, delay time.Duration) {
	if t.opts.OnAttempt != nil {
		t.opts.OnAttempt(attempt, resp, err, delay)
	}
}

// delay returns the wait after a failed attempt: a full-jitter exponential
// backoff, and at least the response's Retry-After capped at MaxDelay.
func (t *Transport) delay(attempt int, resp *http.Response) time.Duration {
	ceiling := t.opts.BaseDelay
	for i := 1; i < attempt && ceiling < t.opts.MaxDelay; i++ {
		if ceiling > t.opts.MaxDelay/2 {
			ceiling = t.opts.MaxDelay // doubling would pass MaxDelay, or overflow
			break
		}
		ceiling *= 2
	}
	d := t.jitter(min(ceiling, t.opts.MaxDelay))
	if resp != nil {
		if ra, ok := parseRetryAfter(resp.Header.Get("Retry-After"), t.opts.Now()); ok {
			d = max(d, min(ra, t.opts.MaxDelay))
		}
	}
	return d
}

// jitter returns a uniform random duration in [0, ceiling].
func (t *Transport) jitter(ceiling time.Duration) time.Duration {
	if ceiling <= 0 {
		return 0
	}
	n := int64(ceiling)
	if n < math.MaxInt64 {
		n++
	}
	if t.rng == nil {
		return time.Duration(rand.Int64N(n))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return time.Duration(t.rng.Int64N(n))
}

// parseRetryAfter reads a Retry-After value: delay-seconds or an
// HTTP-date, relative to now. A date in the past is a zero delay.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if strings.Trim(v, "0123456789") == "" {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil || secs > int64(math.MaxInt64/time.Second) {
			return time.Duration(math.MaxInt64), true // beyond any cap
		}
		return time.Duration(secs) * time.Second, true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(at.Sub(now), 0), true
}

// retryable reports whether a transport error may go away on a retry.
// Only a certificate that does not verify is taken as permanent; every
// other error (refused, reset, EOF, timeout) may be transient, and a
// retry is safe because it carries the same key.
func retryable(err error) bool {
	var verify *tls.CertificateVerificationError
	var authority x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	return !errors.As(err, &verify) && !errors.As(err, &authority) &&
		!errors.As(err, &host) && !errors.As(err, &invalid)
}

// keyOf returns the request's key and, when the transport must set it, the
// header value to send: "" when the request's own header holds the key.
func keyOf(req *http.Request) (key, header string, err error) {
	if v := req.Header.Get(HeaderName); v != "" {
		return unquoteKey(v), "", nil
	}
	key, ok := KeyFromContext(req.Context())
	if !ok {
		key = NewKey()
	}
	if err := checkKey(key); err != nil {
		return "", "", err
	}
	return key, quoteKey(key), nil
}

// body yields the body of every attempt of one request.
type body struct {
	first  io.ReadCloser                 // attempt 1: the request's own body, or the buffer
	get    func() (io.ReadCloser, error) // later attempts; nil when there is no body
	length int64
}

func (b *body) open(attempt int) (io.ReadCloser, error) {
	if attempt == 1 || b.get == nil {
		return b.first, nil
	}
	return b.get()
}

// bodyOf prepares req's body for repeated sending: GetBody when the
// request has it, otherwise a buffer of at most MaxBufferBytes.
func (t *Transport) bodyOf(req *http.Request) (*body, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return &body{first: req.Body}, nil
	}
	if req.GetBody != nil {
		return &body{first: req.Body, get: req.GetBody, length: req.ContentLength}, nil
	}
	defer closeBody(req)
	limit := t.opts.MaxBufferBytes
	tooLong := func() error {
		return fmt.Errorf("%w: it has no GetBody and is longer than MaxBufferBytes (%d); nothing was sent", ErrBodyNotRewindable, max(limit, 0))
	}
	if limit < 0 || req.ContentLength > limit {
		return nil, tooLong()
	}
	// limit+1 shows a body above the limit; at math.MaxInt64 no body can
	// be above it (and limit+1 would overflow).
	buf, err := io.ReadAll(io.LimitReader(req.Body, limit+min(1, math.MaxInt64-limit)))
	if err != nil {
		return nil, fmt.Errorf("client: reading the request body: %w", err)
	}
	if int64(len(buf)) > limit {
		return nil, tooLong()
	}
	if len(buf) == 0 {
		return &body{first: http.NoBody}, nil
	}
	get := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf)), nil }
	first, _ := get()
	return &body{first: first, get: get, length: int64(len(buf))}, nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// discard drains (up to drainLimit) and closes the body of a response that
// is not returned, so that its connection can be reused.
func discard(resp *http.Response) {
	if resp == nil || resp.Body == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, resp.Body, drainLimit)
	_ = resp.Body.Close()
}

// cancelBody releases an attempt's timeout once its response body is read
// to the end or closed.
type cancelBody struct {
	rc     io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.cancel()
	}
	return n, err
}

func (b *cancelBody) Close() error {
	err := b.rc.Close()
	b.cancel()
	return err
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

func valueOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
