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
//     Retry-After and the handler does not run; a fault that a retry
//     meets again (a missing table, refused credentials, a staged write
//     DynamoDB rejects) gets a 500 problem that names its class, without
//     Retry-After;
//   - otherwise runs the handler with its output captured, commits the
//     captured response together with the effects the handler staged on
//     txn.FromContext(r.Context()), and only then sends the response.
//
// Errors are RFC 9457 problem documents (application/problem+json). The
// handler's response is buffered in full: a guarded handler cannot stream.
// Its http.ResponseWriter is no http.Flusher nor http.Hijacker, and
// http.ResponseController's Flush returns an error matching
// http.ErrNotSupported. What is captured, sent and replayed
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
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/fingerprint"
	"github.com/idemkey/idemkey/internal/httpmethod"
	"github.com/idemkey/idemkey/internal/lease"
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
	// An error answers 401 with a problem document whose detail is fixed,
	// never the error's text, which goes to Logger at Warn (outcome
	// "unauthorized"). New refuses options
	// that set neither Scope nor SingleCaller, or both.
	Scope func(*http.Request) (string, error)
	// SingleCaller states that the service has exactly one caller, so that
	// every request shares one scope (""). Its risk: should a second
	// caller ever reach the service, two callers that use the same key get
	// each other's stored responses (their data) instead of an execution.
	// Set it only where no other caller can exist; give every service
	// with several callers a Scope.
	SingleCaller bool
	// Methods are the guarded methods (default POST and PATCH), spelt as
	// requests carry them: "POST", never "post" (New refuses it). Other
	// methods pass through unguarded: see below.
	Methods []string
	// Optional lets a guarded request without a key pass through unguarded
	// instead of answering 400.
	//
	// An unguarded request's handler finds a txn.Tx in its context as a
	// guarded one does, so that its code never depends on whether the
	// request carried a key. Its staged writes are committed in one
	// TransactWriteItems without a key record (idemkey's
	// Guard.CommitUnkeyed) at the moment the response's header would
	// leave: the handler's first WriteHeader, Write or Flush, or its
	// return. A failed commit answers with its problem document in the
	// handler's place: 503 store-unavailable with Retry-After when
	// DynamoDB answered that nothing was written, 500 outcome-unknown
	// without Retry-After (which package client does not retry) when
	// the writes may have landed, since a retry without a key would apply
	// them again. Writes staged after that moment are not committed and
	// are logged at Error. The response is not buffered: an unguarded
	// handler may stream.
	Optional bool
	// MaxBodyBytes bounds the request body (default DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Lease returns the lock lease of a request's claim; zero or negative
	// selects the store's default. LeaseFromDeadline ties it to the
	// request context's deadline (what a Lambda invocation has). Default:
	// the store's lease.
	Lease func(*http.Request) time.Duration
	// Guard options: what is stored, Retry-After, write timeouts, and
	// the Observer of every request the middleware passes to the protocol
	// (keyed, and unkeyed with writes to commit). Default Observer:
	// LogObserver(Logger), which writes the records described at Logger;
	// an Observer set here replaces it (idemkey.Observers keeps both).
	// Guard.FrontDoor defaults to idemkey.FrontDoorHTTP; a front door that
	// serves the middleware (package lambda) names itself in the request's
	// context instead.
	Guard idemkey.Options
	// Logger receives one record per guarded request that is not a plain
	// execution: replays and conflicts (409, 422) at Info; a store that
	// could not be reached (503), a staged condition that failed and a
	// handler's own 5xx answer at Warn; faults that retrying does not fix
	// (a permanent store fault, a corrupt record, a lost lock, a commit
	// that failed otherwise) at Error. A record holds the method, the
	// path, a hash of the key, the outcome (the problem type's name, or
	// "replay" or "released"), the status and the error; never the key,
	// the scope, a body or a header. A request the middleware refuses
	// before the Guard runs (400 for a missing or malformed key, 413,
	// 414, a body that does not match its length) writes no record: it
	// reached no key. A request refused because Scope failed (401) writes
	// one at Warn with the Scope error, the only place that error goes.
	//
	// Default (nil): the records at Warn and above go to slog.Default(),
	// as it is when they are written. To log nothing, set
	// slog.New(slog.DiscardHandler). The records are written by the
	// default Guard.Observer; with another Observer, only writes staged
	// too late to commit are logged here.
	Logger *slog.Logger
}

// unauthorizedDetail is the detail of the 401 answered when Options.Scope
// fails: fixed, so that nothing of how the service authenticates reaches
// its clients.
const unauthorizedDetail = "The request does not identify its caller, so its Idempotency-Key cannot be scoped to it. Send the request with the credentials this service accepts."

// New returns middleware guarding a handler with store. It panics if store
// is nil, if the options set neither Scope nor SingleCaller or set both,
// or if a guarded method would match no request (empty, not an HTTP
// token, or with lower-case letters: methods are case-sensitive, so
// "post" would guard no POST) or is longer than
// dynamostore.MaxMethodBytes.
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
		if why := httpmethod.Problem(method); why != "" {
			panic("handler: Options.Methods: " + why)
		}
		if len(method) > dynamostore.MaxMethodBytes {
			panic("handler: guarded method " + strconv.Quote(method) + " is longer than dynamostore.MaxMethodBytes")
		}
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Guard.Observer == nil {
		o.Guard.Observer = LogObserver(o.Logger)
	}
	if o.Guard.FrontDoor == "" {
		o.Guard.FrontDoor = idemkey.FrontDoorHTTP
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
		m.serveUnkeyed(w, r)
		return
	}
	values := r.Header.Values(HeaderName)
	if len(values) == 0 {
		if m.opts.Optional {
			m.serveUnkeyed(w, r)
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
		// The error is the service's own words (how it authenticates, what
		// it looked for): the operator reads it in the log, the client gets
		// a fixed detail.
		m.logger().LogAttrs(r.Context(), slog.LevelWarn, "idemkey",
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.String("outcome", problem.Unauthorized),
			slog.Int("status", http.StatusUnauthorized),
			slog.String("error", err.Error()))
		problem.Write(w, problem.New(http.StatusUnauthorized, problem.Unauthorized, "Unauthorized", unauthorizedDetail), 0)
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
		writeError(w, err)
		return
	}
	if res.Replayed {
		writeReplay(w, res.Response)
		return
	}
	sendResponse(w, res.Response, nil)
}

// LeaseFromDeadline returns a Lease function for Options: a request whose
// context has a deadline holds its key for the time remaining until it
// plus margin (at least a millisecond), so an invocation that is cut off
// at its deadline frees its key for the retry soon after, while a live one
// is never reclaimed under it. A request whose deadline has passed gets
// margin; one without a deadline gets the store's default lease.
func LeaseFromDeadline(margin time.Duration) func(*http.Request) time.Duration {
	return func(r *http.Request) time.Duration {
		return lease.FromDeadline(r.Context(), margin, time.Now())
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
		if body, err = readDeclared(r.Body, n); err == nil {
			var extra [1]byte
			if m, _ := r.Body.Read(extra[:]); m > 0 {
				err = io.ErrUnexpectedEOF
			}
		}
	} else {
		// limit+1 shows a body above the limit; at math.MaxInt64 no body
		// can be above it (and limit+1 would overflow).
		atMost := limit
		if atMost < math.MaxInt64 {
			atMost++
		}
		body, err = io.ReadAll(io.LimitReader(r.Body, atMost))
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

// initialBodyBuffer is the most readDeclared allocates before bytes
// arrive: the declared length is the client's claim, not memory it paid for.
const initialBodyBuffer = 64 << 10

// readDeclared reads exactly n bytes (n > 0) from body, as io.ReadFull
// does, into a buffer that starts at no more than initialBodyBuffer and
// grows (doubling, at most to n) only as bytes arrive.
func readDeclared(body io.Reader, n int64) ([]byte, error) {
	buf := make([]byte, 0, min(n, initialBodyBuffer))
	for int64(len(buf)) < n {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, int(min(n-int64(len(buf)), int64(cap(buf)))))
		}
		room := buf[len(buf):min(int64(cap(buf)), n)]
		m, err := body.Read(room)
		buf = buf[:len(buf)+m]
		if err != nil {
			if int64(len(buf)) == n {
				break
			}
			if err == io.EOF {
				if len(buf) == 0 {
					return nil, io.EOF
				}
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}

// writeError answers a protocol error with its problem document.
func writeError(w http.ResponseWriter, err error) {
	d, retryAfter := problemOf(err)
	problem.Write(w, d, retryAfter)
}

// problemOf returns the problem document of a protocol error and the
// Retry-After it is sent with (0: none).
func problemOf(err error) (problem.Details, time.Duration) {
	var inFlight *idemkey.InFlightError
	var unavailable *idemkey.UnavailableError
	var permanent *idemkey.PermanentError
	var cond *txn.ConditionFailedError
	switch {
	case errors.As(err, &inFlight):
		return problem.New(http.StatusConflict, problem.InFlight, "Request in flight",
			"A request with this Idempotency-Key is still being processed. Retry after the delay in Retry-After."), inFlight.RetryAfter
	case errors.Is(err, idemkey.ErrMismatch):
		return problem.New(http.StatusUnprocessableEntity, problem.Mismatch, "Idempotency-Key reused",
			"This Idempotency-Key was already used for a different request (method, path, query, media type or body). Use a new key for a new operation."), 0
	case errors.As(err, &unavailable):
		return problem.New(http.StatusServiceUnavailable, problem.Unavailable, "Idempotency store unavailable",
			"The idempotency key store could not be reached, was busy, or did not confirm the commit. Retry with the same key after the delay in Retry-After: "+
				"a request that was committed is replayed, one that was not is executed."), unavailable.RetryAfter
	case errors.As(err, &permanent):
		return permanentProblem(permanent), 0
	case errors.Is(err, idemkey.ErrLockLost):
		return problem.New(http.StatusConflict, problem.LockLost, "Request superseded",
			"This request took longer than its lock lease and another request with the same key took over; nothing from this attempt was saved. Retry with the same key."), time.Second
	case errors.As(err, &cond):
		return problem.New(http.StatusConflict, problem.EffectFailed, "Conflicting state",
			"A condition on the request's effects did not hold when they were committed, so nothing was saved and the Idempotency-Key was released. "+
				"Sending the same request again executes it again, and it fails the same way unless the state it depends on has changed."), 0
	case errors.Is(err, dynamostore.ErrInvalidRequest):
		return problem.New(http.StatusBadRequest, problem.InvalidKey, "Invalid idempotency scope or key", err.Error()), 0
	case errors.Is(err, idemkey.ErrOutcomeUnknown):
		return problem.New(http.StatusInternalServerError, problem.OutcomeUnknown, "Outcome unknown",
			"The request carried no Idempotency-Key, and whether its writes were committed is unknown: the store did not answer. "+
				"Do not retry it as it is, which could apply them twice: read the state it changes first. Send an Idempotency-Key to make retries safe."), 0
	case errors.Is(err, idemkey.ErrUnkeyedUnsupported):
		return problem.New(http.StatusInternalServerError, problem.UnkeyedUnsupported, "Writes need an Idempotency-Key",
			"This request staged writes without an Idempotency-Key, and this service's store commits staged writes only with one. Nothing was written."), 0
	case errors.Is(err, dynamostore.ErrReplayCorrupt):
		return problem.New(http.StatusInternalServerError, problem.ReplayCorrupt, "Stored response corrupt",
			"The stored response body of this Idempotency-Key is missing or is not the one committed, so it is neither replayed nor executed again."), 0
	case errors.Is(err, dynamostore.ErrCorruptRecord):
		return problem.New(http.StatusInternalServerError, problem.InvalidRecord, "Stored record unreadable",
			"The stored record of this Idempotency-Key cannot be read, so it is neither replayed nor executed again."), 0
	}
	return problem.New(http.StatusInternalServerError, problem.Internal, "Request not committed",
		"The request's result could not be saved; nothing was committed."), 0
}

// permanentProblem is the 500 answer to a fault that a retry meets again:
// its type is the fault's class, its detail names the tables involved.
func permanentProblem(e *idemkey.PermanentError) problem.Details {
	const fixed = " Nothing was committed. Retrying with the same key fails the same way until the service is fixed."
	tables := ""
	if len(e.Tables) > 0 {
		tables = " (tables: " + strings.Join(quoteAll(e.Tables), ", ") + ")"
	}
	var title, detail string
	switch e.Class {
	case dynamostore.ClassMissingTable:
		title, detail = "Table not found", "DynamoDB reports that a table this request uses does not exist"+tables+"."
	case dynamostore.ClassMissingBucket:
		title, detail = "Bucket not found", "S3 reports that the bucket of the service's large response bodies does not exist."
	case dynamostore.ClassAccessDenied:
		title, detail = "Store access denied", "DynamoDB refused the service's credentials or permissions for a table this request uses"+tables+"."
	case dynamostore.ClassInvalidWrite:
		title, detail = "Write rejected", "DynamoDB rejected a write of this request as invalid"+tables+
			": for example an item without its key attributes, or two writes to one item."
	case dynamostore.ClassTooManyActions:
		title, detail = "Too many staged writes", "The request staged more writes than one DynamoDB transaction holds ("+
			strconv.Itoa(txn.MaxActions-1)+" besides the key record)."
	default:
		title, detail = "Request rejected by the store", "DynamoDB refused a call of this request"+tables+"."
	}
	return problem.New(http.StatusInternalServerError, string(e.Class), title, detail+fixed)
}

func quoteAll(names []string) []string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	return quoted
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

// logger is Options.Logger, or slog.Default() when it is nil.
func (m *middleware) logger() *slog.Logger {
	if m.opts.Logger != nil {
		return m.opts.Logger
	}
	return slog.Default()
}

// logLevel is Error for a fault that retrying does not fix, Warn for
// another 5xx answer or a failed staged condition, Info otherwise.
func logLevel(status int, err error) slog.Level {
	switch {
	case errors.Is(err, idemkey.ErrPermanent), errors.Is(err, dynamostore.ErrCorruptRecord),
		errors.Is(err, idemkey.ErrLockLost), err != nil && status == http.StatusInternalServerError:
		return slog.LevelError
	case status >= 500, errors.Is(err, txn.ErrConditionFailed):
		return slog.LevelWarn
	}
	return slog.LevelInfo
}
