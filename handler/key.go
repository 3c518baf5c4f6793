package handler

import (
	"errors"
	"strings"
)

// HeaderName is the request header that carries the idempotency key
// (draft-ietf-httpapi-idempotency-key-header).
const HeaderName = "Idempotency-Key"

// MaxKeyLength is the longest key accepted, in bytes.
const MaxKeyLength = 255

var (
	// ErrMissingKey: the request carries no Idempotency-Key header.
	ErrMissingKey = errors.New("handler: missing Idempotency-Key header")
	// ErrInvalidKey: the header is not a key. Match *KeyError for why.
	ErrInvalidKey = errors.New("handler: invalid Idempotency-Key header")
)

// KeyError says why an Idempotency-Key header was rejected.
type KeyError struct{ Reason string }

func (e *KeyError) Error() string   { return ErrInvalidKey.Error() + ": " + e.Reason }
func (e *KeyError) Is(t error) bool { return t == ErrInvalidKey }

// ParseKey parses the value of an Idempotency-Key header. It accepts an
// RFC 8941 sf-string ("abc", with \" and \\ escapes) and, leniently, a
// bare token (abc). Surrounding spaces and tabs are ignored. The key is 1 to
// MaxKeyLength printable ASCII characters (0x20-0x7E; a bare token may not
// hold spaces, quotes, backslashes or commas: a comma outside quotes
// separates the values of a repeated header, as proxies join them). Parameters after an sf-string are
// rejected, as is anything else: the error matches ErrInvalidKey.
func ParseKey(v string) (string, error) {
	v = strings.Trim(v, " \t")
	if v == "" {
		return "", &KeyError{Reason: "empty value"}
	}
	var key string
	if v[0] == '"' {
		var b strings.Builder
		i := 1
		closed := false
		for i < len(v) {
			c := v[i]
			switch {
			case c == '\\':
				if i+1 >= len(v) || (v[i+1] != '"' && v[i+1] != '\\') {
					return "", &KeyError{Reason: "bad escape in quoted key"}
				}
				b.WriteByte(v[i+1])
				i += 2
				continue
			case c == '"':
				closed = true
			case c < 0x20 || c > 0x7e:
				return "", &KeyError{Reason: "key holds a character outside printable ASCII"}
			default:
				b.WriteByte(c)
			}
			i++
			if closed {
				break
			}
			if b.Len() > MaxKeyLength {
				return "", &KeyError{Reason: "key longer than 255 characters"}
			}
		}
		if !closed {
			return "", &KeyError{Reason: "unterminated quoted key"}
		}
		if i != len(v) {
			return "", &KeyError{Reason: "unexpected characters after the quoted key"}
		}
		key = b.String()
	} else {
		for i := 0; i < len(v); i++ {
			c := v[i]
			if c == ',' {
				return "", &KeyError{Reason: "bare key holds a comma, which separates several Idempotency-Key values (quote a key that holds one as an sf-string)"}
			}
			if c <= 0x20 || c > 0x7e || c == '"' || c == '\\' {
				return "", &KeyError{Reason: "bare key holds a space, quote, backslash or non-printable character (quote it as an sf-string)"}
			}
		}
		key = v
	}
	switch {
	case key == "":
		return "", &KeyError{Reason: "empty key"}
	case len(key) > MaxKeyLength:
		return "", &KeyError{Reason: "key longer than 255 characters"}
	}
	return key, nil
}
