// Package handler protects an http.Handler with idempotency keys: a
// request that carries an Idempotency-Key executes once, and its retries
// get the stored response.
//
// New returns middleware in the func(http.Handler) http.Handler form, so it
// composes with net/http's ServeMux, chi and any router that uses that
// shape. For each guarded request (POST and PATCH by default) it
//
//   - parses the key (400 when missing or malformed),
//   - refuses a path longer than dynamostore.MaxPathBytes, the most a key
//     record stores (414; nothing is executed and the key stays free),
//   - reads the body up to a limit (413 above it),
//   - fingerprints method, path, query, media type and body (the body in
//     canonical form only for a JSON media type; see package fingerprint),
//   - runs the idemkey protocol: a replay answers with the stored status,
//     headers and body plus "Idempotent-Replayed: true"; a duplicate while
//     the first is in flight gets 409 with Retry-After; a key reused for
//     another request gets 422; an unreachable store gets 503 with
//     Retry-After and the handler does not run;
//   - otherwise runs the handler with its output captured, commits the
//     captured response together with the effects the handler staged on
//     txn.FromContext(r.Context()), and only then sends the response.
//
// Errors are RFC 9457 problem documents (application/problem+json). The
// handler's response is buffered in full: streaming, Flush and Hijack are
// not available to a guarded handler. What is captured, sent and replayed
// is what net/http's HTTP/1.1 server would have sent for the handler: the
// header map as it was when the header was written (WriteHeader, or the
// first Write or Flush; later changes are not sent), the Content-Type
// net/http would sniff (none when the handler set Header()["Content-Type"]
// to nil), the body, and the trailers net/http would have sent (declared
// with the Trailer header or named with http.TrailerPrefix), sent again as
// trailers. Framing may differ: a guarded answer without trailers always
// has a Content-Length. Informational (1xx) responses are not sent.
package handler

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/fingerprint"
	"github.com/idemkey/idemkey/internal/problem"
	"github.com/idemkey/idemkey/txn"
)

// ReplayedHeader marks a replayed response.
const ReplayedHeader = "Idempotent-Replayed"

// BodyOmittedHeader is set on a replay whose stored body was too large to
// keep; its value is the original body's size in bytes.
const BodyOmittedHeader = "Idempotent-Body-Omitted"

// DefaultMaxBodyBytes is the default request body limit: 1 MiB.
const DefaultMaxBodyBytes = 1 << 20

// Options configure the middleware. The zero value of each field selects
// its default.
type Options struct {
	// Scope returns the caller's scope for a request: who is calling
	// (tenant, API key id, token subject), as established by the
	// request's authentication, never by a value the client chooses
	// freely, such as a tenant header. Keys of different scopes never meet.
	// An error answers 401 with a problem document. New refuses options
	// that set neither Scope nor SingleCaller, or both.
	Scope func(*http.Request) (string, error)
	// SingleCaller states that the service has exactly one caller, so that
	// every request shares one scope (""). Its risk: should a second
	// caller ever reach the service, two callers that use the same key get
	// each other's stored responses (their data) instead of an execution.
	// Set it only where no other caller can exist; give every service
	// with several callers a Scope.
	SingleCaller bool
	// Methods are the guarded methods (default POST and PATCH). Other
	// methods pass through untouched.
	Methods []string
	// Optional lets a guarded request without a key pass through unguarded
	// instead of answering 400.
	Optional bool
	// MaxBodyBytes bounds the request body (default DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Lease returns the lock lease of a request's claim; zero or negative
	// selects the store's default. LeaseFromDeadline ties it to the
	// request context's deadline (what a Lambda invocation has). Default:
	// the store's lease.
	Lease func(*http.Request) time.Duration
	// Guard options: what is stored, Retry-After, write timeouts.
	Guard idemkey.Options
	// Logger receives one record per request that is not a plain
	// execution (replays, conflicts, errors); default: none. Keys are
	// logged only as a hash.
	Logger *slog.Logger
}

// New returns middleware guarding a handler with store. It panics if store
// is nil, if the options set neither Scope nor SingleCaller or set both,
// or if a guarded method is longer than dynamostore.MaxMethodBytes.
func New(store idemkey.Store, optFns ...func(*Options)) func(http.Handler) http.Handler {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	switch {
	case o.Scope == nil && !o.SingleCaller:
		panic("handler: New needs Options.Scope, the caller's identity from the request's authentication " +
			"(without it, callers that use the same key get each other's responses); " +
			"set Options.SingleCaller instead only if the service has exactly one caller")
	case o.Scope != nil && o.SingleCaller:
		panic("handler: Options.Scope and Options.SingleCaller are both set; set one")
	case o.SingleCaller:
		o.Scope = func(*http.Request) (string, error) { return "", nil }
	}
	if len(o.Methods) == 0 {
		o.Methods = []string{http.MethodPost, http.MethodPatch}
	}
	for _, method := range o.Methods {
		if len(method) > dynamostore.MaxMethodBytes {
			panic("handler: guarded method " + strconv.Quote(method) + " is longer than dynamostore.MaxMethodBytes")
		}
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	guard := idemkey.New(store, func(g *idemkey.Options) { *g = o.Guard })
	return func(next http.Handler) http.Handler {
		return &middleware{next: next, guard: guard, opts: o}
	}
}

type middleware struct {
	next  http.Handler
	guard *idemkey.Guard
	opts  Options
}

func (m *middleware) guarded(method string) bool {
	for _, g := range m.opts.Methods {
		if g == method {
			return true
		}
	}
	return false
}

func (m *middleware) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !m.guarded(r.Method) {
		m.next.ServeHTTP(w, r)
		return
	}
	values := r.Header.Values(HeaderName)
	if len(values) == 0 {
		if m.opts.Optional {
			m.next.ServeHTTP(w, r)
			return
		}
		problem.Write(w, problem.New(http.StatusBadRequest, problem.MissingKey, "Idempotency-Key header required",
			"This endpoint requires an Idempotency-Key header: one key per logical operation, reused on every retry."), 0)
		return
	}
	if len(values) > 1 {
		problem.Write(w, problem.New(http.StatusBadRequest, problem.InvalidKey, "Invalid Idempotency-Key header",
			"The request carries more than one Idempotency-Key header."), 0)
		return
	}
	if len(r.URL.Path) > dynamostore.MaxPathBytes {
		problem.Write(w, problem.New(http.StatusRequestURITooLong, problem.URITooLong, "Request path too long",
			"The request path is longer than "+strconv.Itoa(dynamostore.MaxPathBytes)+" bytes, the most an idempotency key record stores. Nothing was executed."), 0)
		return
	}
	key, err := ParseKey(values[0])
	if err != nil {
		var ke *KeyError
		errors.As(err, &ke)
		problem.Write(w, problem.New(http.StatusBadRequest, problem.InvalidKey, "Invalid Idempotency-Key header", ke.Reason+"."), 0)
		return
	}
	scope, err := m.opts.Scope(r)
	if err != nil {
		problem.Write(w, problem.New(http.StatusUnauthorized, problem.Unauthorized, "Unauthorized", err.Error()), 0)
		return
	}
	body, ok := readBody(w, r, m.opts.MaxBodyBytes)
	if !ok {
		return
	}
	fp := fingerprint.Request{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery,
		ContentType: strings.Join(r.Header.Values("Content-Type"), ", "), Body: body}.Digest()
	req := idemkey.Request{Scope: scope, Key: key, Method: r.Method, Path: r.URL.Path, Fingerprint: fp[:]}
	if m.opts.Lease != nil {
		req.Lease = m.opts.Lease(r)
	}

	res, err := m.guard.Do(r.Context(), req, func(ctx context.Context) (idemkey.Response, error) {
		r2 := r.WithContext(ctx)
		r2.Body = io.NopCloser(bytes.NewReader(body))
		r2.ContentLength = int64(len(body))
		c := newCapture()
		m.next.ServeHTTP(c, r2)
		return c.response(), nil
	})
	if err != nil {
		m.log(r, key, "error", err)
		writeError(w, err)
		return
	}
	if res.Replayed {
		m.log(r, key, "replay", nil)
		writeReplay(w, res.Response)
		return
	}
	sendResponse(w, res.Response, nil)
}

// LeaseFromDeadline returns a Lease function for Options: a request whose
// context has a deadline holds its key for the time remaining plus margin
// (idemkey.LeaseFromDeadline), so an invocation that is cut off at its
// deadline frees its key for the retry soon after, while a live one is
// never reclaimed under it. A request without a deadline gets the store's
// default lease.
func LeaseFromDeadline(margin time.Duration) func(*http.Request) time.Duration {
	return func(r *http.Request) time.Duration {
		return idemkey.LeaseFromDeadline(r.Context(), margin, time.Now())
	}
}

// readBody reads the request body up to limit; above it, it answers 413.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	tooLarge := func() {
		problem.Write(w, problem.New(http.StatusRequestEntityTooLarge, problem.TooLarge, "Request body too large",
			"The request body exceeds "+strconv.FormatInt(limit, 10)+" bytes. Nothing was executed."), 0)
	}
	if r.ContentLength > limit {
		tooLarge()
		return nil, false
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	var body []byte
	var err error
	if n := r.ContentLength; n > 0 {
		// The usual case: read exactly the declared length, then check
		// that nothing follows.
		body = make([]byte, n)
		if _, err = io.ReadFull(r.Body, body); err == nil {
			var extra [1]byte
			if m, _ := r.Body.Read(extra[:]); m > 0 {
				err = io.ErrUnexpectedEOF
			}
		}
	} else {
		body, err = io.ReadAll(io.LimitReader(r.Body, limit+1))
	}
	if err != nil {
		problem.Write(w, problem.New(http.StatusBadRequest, problem.InvalidBody, "Unreadable request body", "The request body could not be read."), 0)
		return nil, false
	}
	if int64(len(body)) > limit {
		tooLarge()
		return nil, false
	}
	return body, true
}

// writeError answers a protocol error with its problem document.
func writeError(w http.ResponseWriter, err error) {
	var inFlight *idemkey.InFlightError
	var unavailable *idemkey.UnavailableError
	var cond *txn.ConditionFailedError
	switch {
	case errors.As(err, &inFlight):
		problem.Write(w, problem.New(http.StatusConflict, problem.InFlight, "Request in flight",
			"A request with this Idempotency-Key is still being processed. Retry after the delay in Retry-After."), inFlight.RetryAfter)
	case errors.Is(err, idemkey.ErrMismatch):
		problem.Write(w, problem.New(http.StatusUnprocessableEntity, problem.Mismatch, "Idempotency-Key reused",
			"This Idempotency-Key was already used for a different request (method, path, query, media type or body). Use a new key for a new operation."), 0)
	case errors.As(err, &unavailable):
		problem.Write(w, problem.New(http.StatusServiceUnavailable, problem.Unavailable, "Idempotency store unavailable",
			"The idempotency key store could not be reached, so the request was not executed. Retry with the same key."), unavailable.RetryAfter)
	case errors.Is(err, idemkey.ErrLockLost):
		problem.Write(w, problem.New(http.StatusConflict, problem.LockLost, "Request superseded",
			"This request took longer than its lock lease and another request with the same key took over; nothing from this attempt was saved. Retry with the same key."), time.Second)
	case errors.As(err, &cond):
		problem.Write(w, problem.New(http.StatusConflict, problem.EffectFailed, "Conflicting state",
			"A condition on the request's effects no longer held when it was committed; nothing was saved. Retry with the same key."), 0)
	case errors.Is(err, dynamostore.ErrInvalidRequest):
		problem.Write(w, problem.New(http.StatusBadRequest, problem.InvalidKey, "Invalid idempotency scope or key", err.Error()), 0)
	case errors.Is(err, dynamostore.ErrCorruptRecord):
		problem.Write(w, problem.New(http.StatusInternalServerError, problem.InvalidRecord, "Stored record unreadable",
			"The stored record of this Idempotency-Key cannot be read, so it is neither replayed nor executed again."), 0)
	default:
		problem.Write(w, problem.New(http.StatusInternalServerError, problem.Internal, "Request not committed",
			"The request's result could not be saved; nothing was committed. Retry with the same key."), 0)
	}
}

func writeReplay(w http.ResponseWriter, resp idemkey.Response) {
	sendResponse(w, resp, func(h http.Header) {
		h.Set(ReplayedHeader, "true")
		if resp.BodyOmitted > 0 {
			h.Set(BodyOmittedHeader, strconv.Itoa(resp.BodyOmitted))
			h.Del("Content-Type")
			h.Del("Content-Encoding")
		}
	})
}

func (m *middleware) log(r *http.Request, key, outcome string, err error) {
	if m.opts.Logger == nil {
		return
	}
	attrs := []slog.Attr{
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.String("key_hash", keyHash(key)),
		slog.String("outcome", outcome),
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	m.opts.Logger.LogAttrs(r.Context(), slog.LevelInfo, "idemkey", attrs...)
}

// keyHash identifies a key in logs without revealing it.
func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}
