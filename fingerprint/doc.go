// Package fingerprint computes the fingerprints that idemkey stores next to an
// idempotency key, so that a retry can be told apart from a different request
// that reuses the same key.
//
// Everything here is a pure function of its arguments: bytes in, bytes or a
// [Digest] out, with no I/O and no shared state visible to callers.
//
// # What it is for
//
//   - [Request.Digest] fingerprints an HTTP request (method, path, query,
//     media type and body). The body of a JSON media type (application/json,
//     */*+json) is compared by meaning rather than spelling, so a client
//     that re-serialises its payload on retry, with members in another order,
//     other whitespace or other escapes, still matches; any other body is
//     compared byte for byte.
//   - [JSON] fingerprints one JSON value, such as a Lambda event payload.
//   - [AppendCanonical] and [Canonical] expose the canonical JSON form the
//     fingerprints are built on.
//   - [Equal] compares stored fingerprints in constant time.
//
// # What it is not for
//
// A fingerprint is an unkeyed SHA-256 hash: anyone can compute it, so it
// neither authenticates a request nor hides its content; do not use it as a
// MAC, a signature or a password hash. The canonicaliser is not a general
// JSON library: it neither decodes into Go values nor preserves the input
// text. Its canonical form is not RFC 8785 in every case (see below), so do
// not use it to verify JCS signatures made by other software.
//
// # Canonical JSON
//
// The canonical form follows RFC 8785, the JSON Canonicalization Scheme
// (JCS): no insignificant whitespace; object members sorted by name, the
// names compared as sequences of UTF-16 code units (so U+1F600 sorts before
// U+E000, unlike in UTF-8 byte order); strings with escapes decoded and
// re-encoded so that only '"', '\\' and the control characters U+0000 to
// U+001F are escaped, the latter as \b, \t, \n, \f, \r or \u00xx with
// lowercase hexadecimal digits, and every other character, including '/',
// U+007F, U+2028 and U+2029, written as UTF-8. Unicode normalisation is not
// applied.
//
// As RFC 8785 requires, the input must be I-JSON (RFC 7493): invalid UTF-8
// ([ErrInvalidUTF8]), \u escapes of unpaired surrogates ([ErrLoneSurrogate])
// and duplicate member names after decoding ([ErrDuplicateName]) are errors.
// Unicode noncharacters such as U+FFFF are accepted, as by the common JCS
// implementations.
//
// # Deliberate differences from RFC 8785
//
// Numbers compare by exact decimal value. RFC 8785 converts every number to
// the nearest IEEE-754 double, which makes 9007199254740993 and
// 9007199254740992 the same number and rejects 1e400. Here the canonical form
// of a number is a function of its exact decimal value: write the value as
// s × 10^(n-k), where s is its string of k significant digits, without
// leading or trailing zeros, and lay out s and n as ECMAScript
// Number::toString does (ECMA-262 §7.1.12.1, the rule RFC 8785 §3.2.2.3
// applies to the digits of the double):
//
//   - k ≤ n ≤ 21: the digits of s followed by n-k zeros (1e20 is
//     "100000000000000000000");
//   - 0 < n ≤ 21: the first n digits, '.', the remaining digits ("4.5");
//   - -6 < n ≤ 0: "0.", -n zeros, the digits ("0.002");
//   - otherwise: the first digit, then '.' and the remaining digits if k > 1,
//     then 'e', the sign of n-1 ('+' or '-') and |n-1| in decimal ("1e+30",
//     "1.5e-7").
//
// A negative value is preceded by '-'; zero, including -0, is "0". So 1, 1.0,
// 1e0, 10e-1 and 0.1e1 all become "1", while 9007199254740993 stays
// "9007199254740993", 1.00000000000000000001 stays as it is and 1e400
// becomes "1e+400". When a number's decimal value equals the shortest decimal
// that rounds to the same double (as for 0.1, 4.50, 1E30, 5e-324 or any
// integer up to 2^53), these are exactly the digits and the layout JCS
// emits; the output is then byte-identical to RFC 8785, and it differs only
// for documents containing other numbers. To keep the output short, a
// non-zero number must lie within 10^±[MaxExponent] (otherwise
// [ErrNumberRange]); this rejects no value an IEEE-754 double can hold.
//
// # Cost
//
// Canonicalisation is never quadratic. The input is scanned once. Text that
// is already canonical, usually most of it, is not copied until it has to
// move, and an input that is canonical already (but for whitespace around
// it) is not copied at all. An object whose members arrive in order costs
// one name comparison per member and no memory; any other object is sorted
// once, in O(m log m) comparisons (fewer when it has the same member names
// in the same order as a recent object, as records in an array do), and its
// bytes are then moved a bounded number of times however deeply such objects
// nest. Time is therefore O(n log n) in the input size n, and linear when
// members arrive in order or reversed. Memory is O(n): a few bytes per
// input byte, for the records of members that have to be sorted and for text
// that has to move (under ten for typical documents, none for members in
// canonical order). Working memory is pooled: once the pool holds
// buffers of the right size, canonicalisation and digests allocate nothing.
// The pool keeps buffers in proportion to the inputs recently served, and
// releases them after a run of smaller inputs.
//
// Digests hash the canonical text where it lies rather than building a copy
// of it. [Request.Digest] parses only the body of a JSON media type; any
// other body costs about as much as SHA-256 of it.
//
// Nesting deeper than [MaxDepth] is the error [ErrTooDeep]; the parser keeps
// its own stack and does not recurse, so no input can exhaust the goroutine
// stack.
//
// # Errors
//
// Every error from [AppendCanonical], [Canonical] and [JSON] is a
// [*SyntaxError] giving the byte offset of the problem; for the failure
// classes above it wraps the corresponding sentinel, which [errors.Is]
// recognises. No input causes a panic.
//
// The public surface: Canonical and AppendCanonical (RFC 8785), JSON and
// Request's Digest, Equal, and the errors.
package fingerprint
