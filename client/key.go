package client

import (
	"context"
	"crypto/rand"
	"strings"

	"github.com/idemkey/idemkey/internal/clientkey"
)

// HeaderName is the request header that carries the idempotency key
// (draft-ietf-httpapi-idempotency-key-header).
const HeaderName = "Idempotency-Key"

// MaxKeyLength is the longest key WithKey accepts, in bytes; it matches
// the idemkey handler's limit.
const MaxKeyLength = 255

type keyContextKey struct{}

// WithKey returns a copy of ctx carrying key as the idempotency key of the
// requests made with it. A Transport sends it on every attempt of a
// guarded request whose header does not already hold a key. Use it to keep
// one key across retries of your own, above the transport's: the same
// logical operation, the same key.
//
// The key must be 1 to MaxKeyLength printable ASCII characters (0x20 to
// 0x7E); otherwise RoundTrip fails with an error matching ErrInvalidKey and
// sends nothing.
func WithKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyContextKey{}, key)
}

// KeyFromContext returns the key stored in ctx by WithKey, if any.
func KeyFromContext(ctx context.Context) (string, bool) {
	key, ok := ctx.Value(keyContextKey{}).(string)
	return key, ok
}

// NewKey returns a new random key: 26 characters of base32 from
// crypto/rand, 130 bits of randomness. It is what a Transport uses when the
// caller supplies no key.
func NewKey() string { return rand.Text() }

// checkKey returns a *KeyError when key may not be sent as an sf-string
// (see clientkey.Check for the rule), else nil.
func checkKey(key string) error {
	if why := clientkey.Check(key); why != "" {
		return &KeyError{Reason: why}
	}
	return nil
}

// quoteKey encodes a checked key as an RFC 8941 sf-string.
func quoteKey(key string) string {
	var b strings.Builder
	b.Grow(len(key) + 2)
	b.WriteByte('"')
	for i := 0; i < len(key); i++ {
		if c := key[i]; c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(key[i])
	}
	b.WriteByte('"')
	return b.String()
}

// unquoteKey returns the key a header value holds, as the idemkey
// handler reads it: without the spaces and tabs around it, the content of
// a well-formed sf-string, or else the value itself (a bare token, or
// anything the caller chose to send).
func unquoteKey(v string) string {
	s := strings.Trim(v, " \t")
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return s
	}
	var b strings.Builder
	for i := 1; i < len(s)-1; i++ {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s)-1 || (s[i+1] != '"' && s[i+1] != '\\') {
				return s
			}
			i++
			b.WriteByte(s[i])
		case c == '"':
			return s
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
