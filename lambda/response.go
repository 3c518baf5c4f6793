package lambda

import (
	"bytes"
	"encoding/base64"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"
)

// recorder is the in-memory http.ResponseWriter a front door serves the
// handler with. Like net/http's server, it takes the first status written
// (200 when none is), ignores informational (1xx) ones and sniffs a
// missing Content-Type from the body. Flush is accepted and does nothing:
// the response leaves when the handler returns.
type recorder struct {
	header http.Header
	status int
	buf    bytes.Buffer
}

func newRecorder() *recorder { return &recorder{header: http.Header{}} }

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 && code <= 999 {
		w.status = code
	}
}

func (w *recorder) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.buf.Write(p)
}

func (w *recorder) Flush() {}

// httpResponse is a recorded response, ready to convert.
type httpResponse struct {
	status int
	header http.Header
	body   string // as the event carries it: base64 when encoded
	base64 bool
}

// finish returns the recorded response to r. The body of a HEAD request
// is dropped, as net/http's server drops it.
func (w *recorder) finish(r *http.Request, isBinary func(http.Header, []byte) bool) httpResponse {
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	body := w.buf.Bytes()
	if r.Method == http.MethodHead {
		body = nil
	}
	if _, set := w.header["Content-Type"]; !set && len(body) > 0 {
		w.header.Set("Content-Type", http.DetectContentType(body))
	}
	resp := httpResponse{status: status, header: w.header}
	if isBinary(w.header, body) {
		resp.body, resp.base64 = base64.StdEncoding.EncodeToString(body), true
	} else {
		resp.body = string(body)
	}
	return resp
}

// IsBinary is the default Options.IsBinary: it reports whether a response
// body must travel base64-encoded. A non-empty body is binary when it has
// a Content-Encoding other than identity (compressed bytes), when it is
// not valid UTF-8, or when its Content-Type is set and is not textual.
// Textual types are text/*, application/json, application/xml,
// application/javascript, application/x-www-form-urlencoded,
// application/yaml, application/x-yaml, application/graphql and any
// type with a +json or +xml suffix (application/problem+json,
// image/svg+xml). An empty body is never binary.
//
// API Gateway REST APIs decode a base64 body only for the media types
// listed in the API's binaryMediaTypes; others reach the client as base64
// text.
func IsBinary(header http.Header, body []byte) bool {
	if len(body) == 0 {
		return false
	}
	if enc := header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		return true
	}
	if !utf8.Valid(body) {
		return true
	}
	ct := header.Get("Content-Type")
	if ct == "" {
		return false
	}
	return !textual(ct)
}

func textual(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt, _, _ = strings.Cut(contentType, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
	}
	switch {
	case strings.HasPrefix(mt, "text/"), strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/javascript", "application/x-www-form-urlencoded",
		"application/yaml", "application/x-yaml", "application/graphql":
		return true
	}
	return false
}

// joinedHeaders flattens h into one value per name, values joined with
// ",", leaving out Set-Cookie, which cannot be joined; it returns the
// Set-Cookie values apart. For the event types whose response has a
// cookies field (HTTP API, Function URL).
func joinedHeaders(h http.Header) (map[string]string, []string) {
	out := make(map[string]string, len(h))
	var cookies []string
	for name, values := range h {
		if name == "Set-Cookie" {
			cookies = append(cookies, values...)
			continue
		}
		out[name] = strings.Join(values, ",")
	}
	return out, cookies
}

// multiValueHeaders copies h.
func multiValueHeaders(h http.Header) map[string][]string {
	out := make(map[string][]string, len(h))
	for name, values := range h {
		out[name] = append([]string(nil), values...)
	}
	return out
}
