// Package httpmethod checks the HTTP methods a configuration lists, so
// that a method that would match no request is refused at construction.
package httpmethod

import (
	"strconv"
	"strings"
)

// Problem returns why method, listed in a configuration, would match no
// request as net/http presents it, or "" when it can match: it is empty,
// is not an RFC 9110 token, or has lower-case letters (methods are
// case-sensitive, and clients send the standard ones in upper case, so
// "post" matches no POST request).
func Problem(method string) string {
	if method == "" {
		return "the empty method matches no request"
	}
	for i := 0; i < len(method); i++ {
		c := method[i]
		switch {
		case c >= 'a' && c <= 'z':
			return strconv.Quote(method) + " has lower-case letters, and methods are case-sensitive: it matches no " +
				strings.ToUpper(method) + " request; write " + strconv.Quote(strings.ToUpper(method)) + " (the net/http constants, such as http.MethodPost, spell them)"
		case !tokenChar(c):
			return strconv.Quote(method) + " is not an HTTP method (an RFC 9110 token): no request has it"
		}
	}
	return ""
}

// tokenChar reports whether c may stand in an RFC 9110 token.
func tokenChar(c byte) bool {
	switch {
	case c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return c < 0x7f && strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
