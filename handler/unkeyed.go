package handler

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/internal/problem"
	"github.com/idemkey/idemkey/internal/txnctx"
	"github.com/idemkey/idemkey/txn"
)

// errResponseReplaced is what a handler's writes return once its staged
// writes failed to commit and a problem was sent in its place.
var errResponseReplaced = errors.New("handler: the staged writes failed to commit; a problem document was sent instead of this response")

// serveUnkeyed serves a request that carries no key (a method that is not
// guarded, or an optional key left out). Its context carries a Tx, as a
// guarded request's does, and the writes staged on it are committed
// without a key record (Guard.CommitUnkeyed) at the handler's commit
// point: its first WriteHeader, Write or Flush, or its return when it
// wrote nothing. A failed commit answers in the handler's place; the
// response is not buffered, so the handler may stream after that point.
// Writes staged after it are not committed, and are logged.
func (m *middleware) serveUnkeyed(w http.ResponseWriter, r *http.Request) {
	tx := txn.New()
	sw := &stagingWriter{w: w, r: r, m: m, tx: tx}
	m.next.ServeHTTP(sw, r.WithContext(txnctx.With(r.Context(), tx)))
	if !sw.sealed {
		sw.seal(http.StatusOK)
	}
	if late := tx.Len() - sw.staged; late > 0 {
		m.logger().LogAttrs(r.Context(), slog.LevelError, "idemkey: writes staged after the response began were not committed",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("writes", late))
	}
}

// stagingWriter passes a response through, after committing the staged
// writes at the first moment the header would leave.
type stagingWriter struct {
	w      http.ResponseWriter
	r      *http.Request
	m      *middleware
	tx     *txn.Tx
	sealed bool  // the commit point has passed
	staged int   // writes staged at the commit point
	err    error // the commit's error, after which the handler's response is dropped
}

// seal commits the staged writes for a response of status, once, and on
// failure answers with the error's problem document.
func (s *stagingWriter) seal(status int) {
	if s.sealed {
		return
	}
	s.sealed = true
	s.staged = s.tx.Len()
	ctx := s.r.Context()
	if s.staged > 0 { // the commit's Event has no method or path: the log observer finds them here
		ctx = context.WithValue(ctx, unkeyedRequestKey{}, s.r)
	}
	err := s.m.guard.CommitUnkeyed(ctx, s.tx, idemkey.Response{Status: status, Header: s.w.Header()})
	if err == nil {
		return
	}
	s.err = err
	for name := range s.w.Header() {
		delete(s.w.Header(), name) // the handler's headers belong to the dropped response
	}
	d, retryAfter := problemOf(err)
	switch {
	case errors.Is(err, idemkey.ErrUnavailable):
		d.Detail = "The store answered that the request's writes were not committed (throttled, or conflicting with other writes), so nothing was written. " +
			"Retry after the delay in Retry-After; send an Idempotency-Key to make retries safe whatever happens."
	case errors.Is(err, txn.ErrConditionFailed):
		d.Detail = "A condition on the request's writes did not hold when they were committed, so nothing was written. " +
			"The same request fails the same way unless the state it depends on has changed."
	}
	problem.Write(s.w, d, retryAfter)
}

func (s *stagingWriter) Header() http.Header { return s.w.Header() }

func (s *stagingWriter) WriteHeader(status int) {
	if status >= 100 && status < 200 && !s.sealed {
		s.w.WriteHeader(status) // informational: the commit point is the final status
		return
	}
	if s.sealed && s.err != nil {
		return
	}
	s.seal(status)
	if s.err == nil {
		s.w.WriteHeader(status)
	}
}

func (s *stagingWriter) Write(p []byte) (int, error) {
	s.seal(http.StatusOK)
	if s.err != nil {
		return 0, errResponseReplaced
	}
	return s.w.Write(p)
}

// Flush commits, then flushes, so that a streaming handler works as it
// does without the middleware.
func (s *stagingWriter) Flush() { _ = s.FlushError() }

// FlushError is Flush for http.ResponseController.
func (s *stagingWriter) FlushError() error {
	s.seal(http.StatusOK)
	if s.err != nil {
		return errResponseReplaced
	}
	return http.NewResponseController(s.w).Flush()
}

// Hijack hands the connection over after the commit point.
func (s *stagingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	s.seal(http.StatusOK)
	if s.err != nil {
		return nil, nil, errResponseReplaced
	}
	return http.NewResponseController(s.w).Hijack()
}

// Unwrap gives http.ResponseController the underlying writer for what
// needs no commit first (deadlines, full duplex).
func (s *stagingWriter) Unwrap() http.ResponseWriter { return s.w }
