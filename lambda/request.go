package lambda

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/idemkey/idemkey/handler"
)

// ErrInvalidEvent reports an event that no AWS service sends: a method
// that is not an HTTP token, or a body flagged as base64 that is not. The
// handler is not run; the front door returns the error, which Lambda
// reports as a function error.
var ErrInvalidEvent = errors.New("lambda: invalid HTTP event")

// EventError says why an event was rejected. It matches ErrInvalidEvent.
type EventError struct {
	Reason string
	Err    error
}

func (e *EventError) Error() string {
	if e.Err != nil {
		return ErrInvalidEvent.Error() + ": " + e.Reason + ": " + e.Err.Error()
	}
	return ErrInvalidEvent.Error() + ": " + e.Reason
}
func (e *EventError) Is(t error) bool { return t == ErrInvalidEvent }
func (e *EventError) Unwrap() error   { return e.Err }

// httpEvent is the part of an HTTP event the request is built from, in
// one shape for every event type.
type httpEvent struct {
	method     string
	path       string // as sent: percent-encoded where the client encoded it
	rawQuery   string
	header     http.Header
	cookies    []string // v2 and Function URL: the cookies field
	host       string   // fallback when there is no Host header
	remoteAddr string
	proto      string
	body       string
	base64     bool
	pathParams map[string]string
}

// newRequest builds the *http.Request of e with context ctx, as net/http's
// server would present it: Host taken out of the header into Host, the
// body in full with its ContentLength, RequestURI set.
func newRequest(ctx context.Context, e *httpEvent) (*http.Request, error) {
	body := []byte(e.body)
	if e.base64 {
		b, err := base64.StdEncoding.DecodeString(e.body)
		if err != nil {
			return nil, &EventError{Reason: "body flagged isBase64Encoded is not base64", Err: err}
		}
		body = b
	}
	method := e.method
	if method == "" {
		method = http.MethodGet
	}
	if !isToken(method) {
		return nil, &EventError{Reason: fmt.Sprintf("method %q is not an HTTP token", method)}
	}
	r, err := http.NewRequestWithContext(ctx, method, "/", bytes.NewReader(body))
	if err != nil {
		return nil, &EventError{Reason: "cannot build the request", Err: err}
	}
	r.URL = eventURL(e.path, e.rawQuery)
	r.RequestURI = r.URL.RequestURI()
	r.Header = e.header
	if len(e.cookies) > 0 {
		r.Header.Add("Cookie", strings.Join(e.cookies, "; "))
	}
	r.Host = e.host
	if hosts := r.Header.Values("Host"); len(hosts) > 0 {
		r.Host = hosts[0]
		r.Header.Del("Host")
	}
	r.RemoteAddr = e.remoteAddr
	if major, minor, ok := http.ParseHTTPVersion(e.proto); ok {
		r.Proto, r.ProtoMajor, r.ProtoMinor = e.proto, major, minor
	}
	r.ContentLength = int64(len(body))
	if len(body) == 0 {
		r.Body = http.NoBody
	}
	for _, name := range sortedKeys(e.pathParams) {
		r.SetPathValue(name, e.pathParams[name])
	}
	return r, nil
}

// eventURL returns the URL of a path as an event carries it. The path is
// taken as percent-encoded; a path that does not decode is used as is.
func eventURL(path, rawQuery string) *url.URL {
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u := &url.URL{Path: path, RawQuery: rawQuery}
	if decoded, err := url.PathUnescape(path); err == nil && decoded != path {
		u.Path, u.RawPath = decoded, path
	}
	return u
}

// isToken reports whether s is an RFC 9110 token, as a method must be.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return s != ""
}

// headerOf merges an event's multi-value and single-value headers: every
// value of multi, then the single value of each name multi lacks. Names
// are canonicalised, so lookups are case-insensitive; names are taken in
// sorted order, so the result does not depend on map iteration.
func headerOf(multi map[string][]string, single map[string]string) http.Header {
	h := make(http.Header, len(multi)+len(single))
	for _, name := range sortedKeys(multi) {
		for _, v := range multi[name] {
			h.Add(name, v)
		}
	}
	for _, name := range sortedKeys(single) {
		if _, ok := h[http.CanonicalHeaderKey(name)]; !ok {
			h.Add(name, single[name])
		}
	}
	return h
}

// unjoinKeyHeader splits the Idempotency-Key values of h, as an event
// that joins repeated headers with commas carries them, back into one
// value per header line, and returns h. A comma inside a quoted string
// (an RFC 8941 sf-string) is part of the key; any other comma separates
// two values, since no key that package handler accepts holds one.
func unjoinKeyHeader(h http.Header) http.Header {
	name := http.CanonicalHeaderKey(handler.HeaderName)
	var values []string
	for _, v := range h[name] {
		values = append(values, splitList(v)...)
	}
	if values != nil {
		h[name] = values
	}
	return h
}

// splitList splits v at each comma outside a quoted string, in which a
// backslash escapes the next character.
func splitList(v string) []string {
	var out []string
	start, quoted := 0, false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == ',':
			out = append(out, v[start:i])
			start = i + 1
		}
	}
	return append(out, v[start:])
}

// decodedQuery encodes query parameters that the event holds decoded (API
// Gateway REST): the multi-value ones, then the single value of each name
// multi lacks, as url.Values.Encode lays them out.
func decodedQuery(multi map[string][]string, single map[string]string) string {
	q := make(url.Values, len(multi)+len(single))
	for name, values := range multi {
		q[name] = append(q[name], values...)
	}
	for name, v := range single {
		if _, ok := q[name]; !ok {
			q[name] = []string{v}
		}
	}
	return q.Encode()
}

// rawQuery joins query parameters that the event holds as the client sent
// them (ALB does not decode them), names in sorted order.
func rawQuery(multi map[string][]string, single map[string]string) string {
	var b strings.Builder
	add := func(name, v string) {
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(v)
	}
	for _, name := range sortedKeys(multi) {
		for _, v := range multi[name] {
			add(name, v)
		}
	}
	for _, name := range sortedKeys(single) {
		if _, ok := multi[name]; !ok {
			add(name, single[name])
		}
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
