// Package httpcapture buffers a handler's response and reports what
// net/http's HTTP/1.1 server would have sent for it: the status, the
// header as it was when written, the Content-Type the server sniffs, the
// body and the trailers. Package handler captures a guarded handler's
// response with it; package lambda serves handlers with it.
package httpcapture

import (
	"bytes"
	"fmt"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
)

// bufferBeforeChunkingSize is the size of the buffer net/http's HTTP/1.1
// server holds a response body in before it sends the header: a body that
// outgrows it (without a declared Content-Length) is sent chunked.
const bufferBeforeChunkingSize = 2048

// Writer is an http.ResponseWriter that buffers the response in memory and
// sends nothing. Result reports what net/http's server would have sent.
// Use New to create one.
type Writer struct {
	header  http.Header // the live map the handler sees
	written http.Header // snapshot of header when the status was written
	body    bytes.Buffer
	status  int

	declaredLength int64 // valid Content-Length of the snapshot, or -1
}

// New returns an empty Writer.
func New() *Writer { return &Writer{header: make(http.Header), declaredLength: -1} }

// Header returns the header map the handler sets before writing the header.
func (w *Writer) Header() http.Header { return w.header }

// WriteHeader records the status and a snapshot of the header map, as
// net/http does: later changes to the map are not part of the header, only
// of the trailers. It panics, as net/http does, on a code outside 100-999.
// Informational (1xx) responses are dropped, and so is every status after
// the first.
func (w *Writer) WriteHeader(status int) {
	if status < 100 || status > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", status))
	}
	if w.status != 0 || status < 200 {
		return
	}
	w.status = status
	w.written = w.header.Clone()
	if cl := w.written.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n >= 0 {
			w.declaredLength = n
		}
	}
}

// Write appends p to the body, writing the header (200) first if the
// handler has not. As with net/http, a status that allows no body (204,
// 304) refuses it with http.ErrBodyNotAllowed, and bytes beyond a declared
// Content-Length are refused with http.ErrContentLength.
func (w *Writer) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if w.declaredLength >= 0 && int64(w.body.Len()+len(p)) > w.declaredLength {
		return 0, http.ErrContentLength
	}
	return w.body.Write(p)
}

// FlushError reports, through http.ResponseController, that the response
// cannot be flushed: it is buffered until the handler returns. The error
// matches http.ErrNotSupported. Writer implements no http.Flusher, so a
// handler that checks for one sees none.
func (w *Writer) FlushError() error {
	return fmt.Errorf("idemkey: the response is buffered until the handler returns (a guarded response is sent after its commit): flushing it is %w", http.ErrNotSupported)
}

// Response is what net/http's server sends for a handler.
type Response struct {
	Status int
	// Header is the header map as it was when the header was written,
	// with the Content-Type net/http sniffs when the handler set none
	// (and none when it set Header()["Content-Type"] to nil: that name is
	// then present with no values, and a name without values is not
	// sent), without Content-Length and Transfer-Encoding on a status
	// that allows no body, and without Content-Type on 304. It holds the
	// Trailer header as the handler declared it, and no name that starts
	// with http.TrailerPrefix.
	Header http.Header
	// Trailer holds the trailers net/http sends after the body: the
	// declared ones (valid as trailers) and those named with
	// http.TrailerPrefix, as the header map holds them when the handler
	// returns, sent only when the body goes chunked (no valid
	// Content-Length, and trailers announced, a flush, or a body larger
	// than the server's buffer). A trailer may have no values.
	Trailer http.Header
	Body    []byte
}

// Result returns what the handler sent, once it has returned. It writes
// the header (200) if the handler has not. Call it once.
func (w *Writer) Result() Response {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	h := w.written
	te := h.Get("Transfer-Encoding")
	if bodyAllowed(w.status) {
		_, haveType := h["Content-Type"]
		if !haveType && h.Get("Content-Encoding") == "" && te == "" && w.body.Len() > 0 {
			h.Set("Content-Type", http.DetectContentType(w.body.Bytes()))
		}
	} else {
		h.Del("Content-Length")
		h.Del("Transfer-Encoding")
		if w.status == http.StatusNotModified {
			h.Del("Content-Type")
		}
	}

	// The trailers: what net/http collects when the handler ends, sent
	// only when the body goes chunked, which it does without a valid
	// Content-Length once trailers are announced or the body outgrew the
	// server's buffer.
	var declared []string
	announced := false
	for name := range h {
		if strings.HasPrefix(name, http.TrailerPrefix) {
			announced = true
			delete(h, name) // never a header
		}
	}
	for _, v := range h["Trailer"] {
		announced = true
		ForEachHeaderElement(v, func(name string) {
			// A name declared twice is sent twice by net/http: so is it
			// when the declaration is replayed, so it is recorded once.
			if name = http.CanonicalHeaderKey(name); validTrailerHeader(name) && !slices.Contains(declared, name) {
				declared = append(declared, name)
			}
		})
	}
	chunked := bodyAllowed(w.status) && te != "identity" &&
		(te != "" || w.declaredLength < 0 && (announced || w.body.Len() > bufferBeforeChunkingSize))
	var trailers http.Header
	if chunked {
		trailers = make(http.Header)
		for name, values := range w.header {
			if n, ok := strings.CutPrefix(name, http.TrailerPrefix); ok {
				trailers[n] = append([]string(nil), values...)
			}
		}
		for _, name := range declared {
			trailers[name] = append(trailers[name], w.header[name]...)
		}
	}
	return Response{Status: w.status, Header: h, Trailer: trailers, Body: w.body.Bytes()}
}

// bodyAllowed reports whether net/http allows a body on status.
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// ForEachHeaderElement calls fn for each non-empty element of the
// comma-separated list v, trimmed, as net/http splits the Trailer header.
func ForEachHeaderElement(v string, fn func(string)) {
	for f := range strings.SplitSeq(v, ",") {
		if f = textproto.TrimString(f); f != "" {
			fn(f)
		}
	}
}

// validTrailerHeader reports whether name, canonical, may be sent as a
// trailer: net/http drops the declared trailers RFC 9110 §6.5.1 forbids.
func validTrailerHeader(name string) bool {
	if strings.HasPrefix(name, "If-") {
		return false
	}
	switch name {
	case "Authorization", "Cache-Control", "Connection", "Content-Encoding", "Content-Length",
		"Content-Range", "Content-Type", "Expect", "Host", "Keep-Alive", "Max-Forwards", "Pragma",
		"Proxy-Authenticate", "Proxy-Authorization", "Proxy-Connection", "Range", "Realm", "Te",
		"Trailer", "Transfer-Encoding", "Www-Authenticate":
		return false
	}
	return true
}
