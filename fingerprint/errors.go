package fingerprint

import (
	"errors"
	"strconv"
)

// Sentinel errors for the failure classes of [AppendCanonical] that are not
// plain grammar violations. They are never returned bare: they arrive wrapped
// in a [*SyntaxError] that carries the byte offset, so test for them with
// [errors.Is].
var (
	// ErrTooDeep reports that arrays and objects are nested more than
	// [MaxDepth] levels deep.
	ErrTooDeep = errors.New("fingerprint: JSON nested too deeply")

	// ErrDuplicateName reports an object with two members whose names are
	// equal after escape sequences are decoded (I-JSON, RFC 7493 §2.3).
	ErrDuplicateName = errors.New("fingerprint: duplicate object member name")

	// ErrInvalidUTF8 reports a string containing bytes that are not
	// well-formed UTF-8, including UTF-8 encoded surrogates and overlong
	// forms (RFC 8785 §3.1, RFC 7493 §2.1).
	ErrInvalidUTF8 = errors.New("fingerprint: invalid UTF-8 in JSON string")

	// ErrLoneSurrogate reports a \uXXXX escape for a UTF-16 surrogate that is
	// not part of a high-low surrogate pair (RFC 8785 §3.1, RFC 7493 §2.1).
	ErrLoneSurrogate = errors.New("fingerprint: unpaired UTF-16 surrogate escape in JSON string")

	// ErrNumberRange reports a non-zero number whose magnitude is outside
	// the range accepted by this package; see the package documentation.
	ErrNumberRange = errors.New("fingerprint: JSON number exponent out of range")
)

// SyntaxError is the type of every error returned by [AppendCanonical],
// [Canonical] and [JSON]. It reports why src is not accepted and where the
// problem was detected.
//
// The message never quotes more than one byte of the input, so an error can
// be logged without copying request content into logs.
type SyntaxError struct {
	// Offset is the index in src of the byte at which the problem was
	// detected; it equals len(src) when the input ended too early.
	Offset int64

	// Msg describes the problem, without the "fingerprint: " prefix and
	// without the offset.
	Msg string

	// Err is the sentinel for the failure class (ErrTooDeep,
	// ErrDuplicateName, ErrInvalidUTF8, ErrLoneSurrogate or ErrNumberRange),
	// or nil for a violation of the JSON grammar (RFC 8259).
	Err error
}

// Error returns "fingerprint: " followed by the message and the offset.
func (e *SyntaxError) Error() string {
	return "fingerprint: " + e.Msg + " at offset " + strconv.FormatInt(e.Offset, 10)
}

// Unwrap returns e.Err, so that [errors.Is] matches the sentinel errors.
func (e *SyntaxError) Unwrap() error { return e.Err }

// failure records why a parse stopped. The parser fills it in instead of
// building an error, so that rejecting input allocates nothing: Request.Digest,
// which hashes a body that is not JSON as raw bytes, never looks at it. err
// turns it into the error that AppendCanonical and JSON return.
type failure struct {
	off     int
	msg     string // the message, or what follows "invalid character 'x' " if hasByte
	b       byte   // the offending byte, if hasByte
	hasByte bool
	class   error // the sentinel, or nil for a grammar error
}

// err returns f as a *SyntaxError.
func (f *failure) err() error {
	msg := f.msg
	switch {
	case f.class != nil:
		// The sentinel's text without its package prefix.
		msg = f.class.Error()
		const prefix = "fingerprint: "
		if len(msg) > len(prefix) && msg[:len(prefix)] == prefix {
			msg = msg[len(prefix):]
		}
	case f.hasByte:
		msg = "invalid character " + quoteByte(f.b) + " " + f.msg
	}
	return &SyntaxError{Offset: int64(f.off), Msg: msg, Err: f.class}
}

// fail records a grammar error at offset off and returns -1, the index the
// parsing methods return on failure.
func (c *canon) fail(off int, msg string) int {
	c.failure = failure{off: off, msg: msg}
	return -1
}

// failEOF records that the input ended at offset off before the value did.
func (c *canon) failEOF(off int) int { return c.fail(off, "unexpected end of JSON input") }

// failByte records the grammar error of finding byte b at offset off where
// the parser was looking for what.
func (c *canon) failByte(off int, b byte, what string) int {
	c.failure = failure{off: off, msg: what, b: b, hasByte: true}
	return -1
}

// failClass records an error of the class sentinel at offset off.
func (c *canon) failClass(off int, sentinel error) int {
	c.failure = failure{off: off, class: sentinel}
	return -1
}

// quoteByte renders one input byte for an error message: printable ASCII
// quoted, anything else as a hexadecimal escape, so that messages stay on one
// line and carry no more than a single byte of the input.
func quoteByte(b byte) string {
	if b >= 0x20 && b < 0x7f && b != '\'' && b != '\\' {
		return "'" + string(rune(b)) + "'"
	}
	const hex = "0123456789abcdef"
	return "'\\x" + string([]byte{hex[b>>4], hex[b&0xf]}) + "'"
}
