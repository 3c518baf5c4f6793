package lambda

import (
	"encoding/base64"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/idemkey/idemkey/internal/httpcapture"
)

// httpResponse is a handler's response, ready to convert.
type httpResponse struct {
	status int
	header http.Header
	body   string // as the event carries it: base64 when encoded
	base64 bool
}

// responseOf translates what net/http's server would have sent for r, res,
// to a Lambda response, which has no trailers: the trailers are dropped
// with the Trailer header that declares them, as is every header without
// a value (a Content-Type set to nil). The body of a HEAD request is
// dropped, as net/http's server drops it.
func responseOf(res httpcapture.Response, r *http.Request, isBinary func(http.Header, []byte) bool) httpResponse {
	header := make(http.Header, len(res.Header))
	for name, values := range res.Header {
		if name != "Trailer" && len(values) > 0 {
			header[name] = values
		}
	}
	body := res.Body
	if r.Method == http.MethodHead {
		body = nil
	}
	resp := httpResponse{status: res.Status, header: header}
	if isBinary(header, body) {
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
