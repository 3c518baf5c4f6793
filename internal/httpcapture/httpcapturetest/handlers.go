// Package httpcapturetest holds handlers whose responses test a
// front door's fidelity to net/http, for the tests of packages handler and
// lambda, which serve each one behind net/http and behind the front door
// and compare the answers.
package httpcapturetest

import (
	"io"
	"net/http"
	"strings"
)

// Handlers returns the handlers, by name: headers changed after the
// header was written, sniffed and suppressed Content-Types, declared and
// prefixed trailers (sent or dropped by net/http), a body on 204 and past
// a declared Content-Length. A handler that sees a write fail reports it
// in the header X-Write-Error, set after the header was written.
func Handlers() map[string]http.HandlerFunc {
	html := "<html><body>hello</body></html>"
	large := strings.Repeat("x", 4096)
	return map[string]http.HandlerFunc{
		"header set after WriteHeader": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Before", "1")
			w.WriteHeader(http.StatusCreated)
			w.Header().Set("X-After", "late")
			w.Header().Set("X-Before", "changed")
			_, _ = io.WriteString(w, `{"ok":true}`)
		},
		"header set after the first Write": func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, `{"ok":true}`)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-After", "late")
		},
		"sniffing suppressed": func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Content-Type"] = nil
			_, _ = io.WriteString(w, html)
		},
		"sniffed": func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, html)
		},
		"sniffed from the first bytes of a large body": func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, html+large)
		},
		"not sniffed with a Content-Encoding": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "x-custom")
			_, _ = io.WriteString(w, html)
		},
		"declared trailer": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Trailer", "X-Checksum, X-Missing")
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, "body")
			w.Header().Set("X-Checksum", "abc")
		},
		"declared trailer also set before the header": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Trailer", "X-Checksum")
			w.Header().Set("X-Checksum", "early")
			_, _ = io.WriteString(w, "body")
			w.Header().Set("X-Checksum", "final")
		},
		"forbidden trailer is not sent": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Trailer", "Content-Type, X-Ok")
			_, _ = io.WriteString(w, "body")
			w.Header().Set("X-Ok", "1")
		},
		"trailer by prefix after a small body: net/http drops it": func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "small")
			w.Header().Set(http.TrailerPrefix+"X-Late", "v")
		},
		"trailer by prefix after a large body": func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, large)
			w.Header().Set(http.TrailerPrefix+"X-Late", "v")
		},
		"trailer by prefix announced before the header": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(http.TrailerPrefix+"X-Sum", "early")
			_, _ = io.WriteString(w, "small")
			w.Header().Set(http.TrailerPrefix+"X-Sum", "final")
		},
		"declared trailer with a Content-Length: not chunked, not sent": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Trailer", "X-Checksum")
			w.Header().Set("Content-Length", "4")
			_, _ = io.WriteString(w, "body")
			w.Header().Set("X-Checksum", "abc")
		},
		"no content": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusNoContent)
			_, err := io.WriteString(w, "refused")
			w.Header().Set("X-Write-Error", errString(err))
		},
		"write past the Content-Length": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "4")
			w.Header().Set("Trailer", "X-Write-Error")
			_, _ = io.WriteString(w, "body")
			_, err := io.WriteString(w, "more")
			w.Header().Set("X-Write-Error", errString(err))
		},
	}
}

func errString(err error) string {
	if err == nil {
		return "none"
	}
	return err.Error()
}
