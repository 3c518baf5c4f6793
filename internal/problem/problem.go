// Package problem writes RFC 9457 problem documents.
package problem

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// ContentType is the media type of a problem document.
const ContentType = "application/problem+json"

// TypeBase prefixes the type URI of every problem idemkey reports; the
// README documents each one.
const TypeBase = "https://github.com/idemkey/idemkey#problem-"

// Details is an RFC 9457 problem document.
type Details struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// Kinds of problem, by the suffix of their type URI.
const (
	MissingKey    = "missing-key"
	InvalidKey    = "invalid-key"
	InFlight      = "in-flight"
	Mismatch      = "key-reused"
	TooLarge      = "body-too-large"
	Unavailable   = "store-unavailable"
	LockLost      = "lock-lost"
	EffectFailed  = "effect-condition-failed"
	Internal      = "internal"
	Unauthorized  = "unauthorized"
	InvalidBody   = "invalid-body"
	InvalidRecord = "corrupt-record"
	URITooLong    = "uri-too-long"
)

// New returns the problem document of kind with status, title and detail.
func New(status int, kind, title, detail string) Details {
	return Details{Type: TypeBase + kind, Title: title, Status: status, Detail: detail}
}

// Body returns the document's JSON encoding.
func (d Details) Body() []byte {
	b, _ := json.Marshal(d) // cannot fail: strings and an int
	return b
}

// Write sends d to w, with a Retry-After header when retryAfter is
// positive (rounded up to whole seconds).
func Write(w http.ResponseWriter, d Details, retryAfter time.Duration) {
	h := w.Header()
	h.Set("Content-Type", ContentType)
	h.Set("Cache-Control", "no-store")
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(RetryAfterSeconds(retryAfter)))
	}
	w.WriteHeader(d.Status)
	_, _ = w.Write(d.Body())
}

// RetryAfterSeconds rounds d up to whole seconds, at least 1.
func RetryAfterSeconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return s
}
