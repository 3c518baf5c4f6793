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
// a value (a Content-Type set to nil). As net/http's server does, it
// drops a header whose name is not a token, turns CR and LF in a value
// into spaces and trims the white space around it, so that no value a
// handler copied from its input breaks the response's header lines. The
// body of a HEAD request is dropped, as net/http's server drops it.
func responseOf(res httpcapture.Response, r *http.Request, isBinary func(http.Header, []byte) bool) httpResponse {
	header := make(http.Header, len(res.Header))
	for name, values := range res.Header {
		if name != "Trailer" && len(values) > 0 && fieldName(name) {
			header[name] = fieldValues(values)
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

// fieldName reports whether name is an HTTP token (RFC 9110, section 5.1),
// the names net/http's server writes.
func fieldName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// fieldValues returns values as net/http's server writes them: CR and LF
// replaced by spaces, then the space, tab, CR and LF around each trimmed.
// values itself is returned when no value changes.
func fieldValues(values []string) []string {
	var out []string
	for i, v := range values {
		w := v
		if strings.ContainsAny(w, "\r\n") {
			w = strings.Map(func(r rune) rune {
				if r == '\r' || r == '\n' {
					return ' '
				}
				return r
			}, w)
		}
		w = strings.Trim(w, " \t")
		if w != v && out == nil {
			out = append(make([]string, 0, len(values)), values[:i]...)
		}
		if out != nil {
			out = append(out, w)
		}
	}
	if out == nil {
		return values
	}
	return out
}
