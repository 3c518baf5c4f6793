// Package problem holds the problem documents idemkey itself reports:
// their type URIs and kinds, on the public package problem.
package problem

import (
	"net/http"
	"strconv"
	"time"

	"github.com/idemkey/idemkey/problem"
)

// ContentType is the media type of a problem document.
const ContentType = problem.ContentType

// TypeBase prefixes the type URI of every problem idemkey reports; the
// module's docs/http.md documents each one.
const TypeBase = "https://github.com/idemkey/idemkey/blob/main/docs/http.md#problem-"

// Details is an RFC 9457 problem document.
type Details = problem.Details

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
	// ReplayCorrupt: a stored response's body, kept in a body store, is
	// missing or not the body committed.
	ReplayCorrupt = "replay-corrupt"
	// UnkeyedUnsupported: a request without a key staged writes on a
	// store that commits them only with a key record.
	UnkeyedUnsupported = "unkeyed-writes-unsupported"
	// OutcomeUnknown: the writes of a request without a key may or may
	// not have been committed; a retry could apply them twice.
	OutcomeUnknown = "outcome-unknown"
)

// New returns the problem document of kind with status, title and detail.
func New(status int, kind, title, detail string) Details {
	return Details{Type: TypeBase + kind, Title: title, Status: status, Detail: detail}
}

// Write sends d to w, with a Retry-After header when retryAfter is
// positive (rounded up to whole seconds).
func Write(w http.ResponseWriter, d Details, retryAfter time.Duration) {
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds(retryAfter)))
	}
	problem.Write(w, d)
}

// RetryAfterSeconds rounds d up to whole seconds, at least 1.
func RetryAfterSeconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return s
}
