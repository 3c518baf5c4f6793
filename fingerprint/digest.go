package fingerprint

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"net/url"
)

// Digest is a SHA-256 fingerprint computed by [Request.Digest] or [JSON].
type Digest [32]byte

// String returns d as 64 lowercase hexadecimal digits.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// Request is the part of an HTTP request that its fingerprint covers.
type Request struct {
	// Method is the HTTP method, compared exactly as given: "POST" and
	// "post" are different methods.
	Method string

	// Path is the request path, compared exactly as given. Callers should
	// consistently pass either the escaped or the decoded form.
	Path string

	// Query is the raw query string without the leading '?', as in
	// url.URL.RawQuery.
	Query string

	// ContentType is the value of the request's Content-Type header, as
	// sent; "" when the request has none. It selects how Body is compared
	// (see [Request.Digest]) and is itself part of the fingerprint.
	ContentType string

	// Body is the request body. It is read, never modified or retained.
	Body []byte
}

// Domain-separation strings and tags of the fingerprint encodings. Changing
// any of them changes every fingerprint, so they carry a version.
const (
	requestDomain = "idemkey/fingerprint/v2/request"
	jsonDomain    = "idemkey/fingerprint/v1/json"

	tagRaw   = 'r' // the field is hashed as given
	tagForm  = 'f' // the query is hashed as re-encoded parameters
	tagJSON  = 'j' // the body is hashed in canonical JSON form
	tagMedia = 'm' // the content type is hashed as a normalised media type
)

// Digest returns the fingerprint of r: two requests that must be treated as
// the same retry have equal digests, and any other difference in method,
// path, query parameters, media type or body gives a different digest,
// short of a SHA-256 collision.
//
// The digest is SHA-256 over the concatenation of
//
//	field("idemkey/fingerprint/v2/request")
//	field(r.Method)
//	field(r.Path)
//	queryTag, field(query)
//	mediaTag, field(media)
//	bodyTag, field(body)
//
// where field(x) is the length of x as an 8-byte big-endian integer followed
// by x. Every field is length-prefixed and every variable choice is tagged,
// so different requests never produce the same byte string.
//
// The query is compared as parameters: when [url.ParseQuery] accepts
// r.Query, queryTag is 'f' and query is [url.Values.Encode] of the result,
// which sorts parameters by name, keeps the order of repeated values of one
// name and normalises percent-encoding, so "b=2&a=1" equals "a=1&b=2", "a=%41"
// equals "a=A", and "a" equals "a=". Otherwise (for example with an invalid
// percent escape or a ';'), queryTag is 'r' and query is r.Query unchanged.
//
// The content type is compared as a media type: when [mime.ParseMediaType]
// accepts r.ContentType, mediaTag is 'm' and media is its normalised form,
// [mime.FormatMediaType] of the parsed type and parameters, with type,
// subtype and parameter names in lowercase, parameters sorted by name, and
// the value of the charset parameter (charset names are case-insensitive)
// in lowercase. For a JSON media type, whose text RFC 8259 requires to be
// UTF-8, "charset=utf-8" is dropped: "application/json; charset=UTF-8" and
// "application/json" are the same media type, while any other charset is
// kept and differs from both. Other parameter values are compared exactly
// ("boundary=AbC" differs from "boundary=abc"). Otherwise (no content type,
// or a value that does not parse, such as one with a repeated parameter),
// mediaTag is 'r' and media is r.ContentType without surrounding spaces and
// tabs.
//
// The body is compared as JSON only when the media type is JSON: its
// mediaTag is 'm' and the type is application/json or has the +json subtype
// suffix (RFC 6839, as application/merge-patch+json). Then, when r.Body is
// accepted by [AppendCanonical], bodyTag is 'j' and body is its canonical
// form, so member order, whitespace, escape spelling and number spelling do
// not matter. Every other body (an empty body, any other or no media type,
// invalid or too deeply nested JSON) has bodyTag 'r' and body is r.Body
// unchanged: the text/plain bodies "1.0" and "1.00" differ, and so does one
// body sent as application/json and as application/x-www-form-urlencoded.
func (r Request) Digest() Digest {
	c := getCanon()
	defer putCanon(c)

	hdr := appendField(c.hdr[:0], requestDomain)
	hdr = appendField(hdr, r.Method)
	hdr = appendField(hdr, r.Path)
	if q, ok := canonicalQuery(r.Query); ok {
		hdr = appendField(append(hdr, tagForm), q)
	} else {
		hdr = appendField(append(hdr, tagRaw), r.Query)
	}
	mt := parseMediaType(r.ContentType)
	if mt.parsed {
		hdr = appendField(append(hdr, tagMedia), mt.text)
	} else {
		hdr = appendField(append(hdr, tagRaw), mt.text)
	}
	h := c.hasher()
	if mt.json && len(r.Body) > 0 && c.parse(r.Body) {
		hdr = binary.BigEndian.AppendUint64(append(hdr, tagJSON), uint64(len(c.text)))
		h.Write(hdr)
		c.hashCanonical(h)
	} else {
		hdr = binary.BigEndian.AppendUint64(append(hdr, tagRaw), uint64(len(r.Body)))
		h.Write(hdr)
		h.Write(r.Body)
	}
	c.hdr = hdr
	return c.digest()
}

// JSON returns the fingerprint of the JSON text v, under a domain of its own
// so that it never equals a [Request.Digest]: SHA-256 over
// field("idemkey/fingerprint/v1/json") followed by field(canonical form of v),
// with field as in [Request.Digest]. JSON texts with the same canonical form
// (see [AppendCanonical]) have equal fingerprints. An error is returned, with
// a zero Digest, exactly when [AppendCanonical] rejects v.
func JSON(v []byte) (Digest, error) {
	c := getCanon()
	defer putCanon(c)
	if !c.parse(v) {
		return Digest{}, c.failure.err()
	}
	hdr := appendField(c.hdr[:0], jsonDomain)
	hdr = binary.BigEndian.AppendUint64(hdr, uint64(len(c.text)))
	h := c.hasher()
	h.Write(hdr)
	c.hashCanonical(h)
	c.hdr = hdr
	return c.digest(), nil
}

// Equal reports whether a and b hold the same bytes, taking time that
// depends on their lengths but not on their contents. Use it to compare a
// stored fingerprint with a computed one, for example d[:] or
// []byte(d.String()) against the stored value.
func Equal(a, b []byte) bool {
	return subtle.ConstantTimeCompare(a, b) == 1
}

// canonicalQuery returns the re-encoded parameters of the raw query q, and
// false when q does not parse.
func canonicalQuery(q string) (string, bool) {
	if q == "" {
		return "", true
	}
	v, err := url.ParseQuery(q)
	if err != nil {
		return "", false
	}
	return v.Encode(), true
}

// appendField appends the length of s as an 8-byte big-endian integer, then s.
func appendField(dst []byte, s string) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(len(s)))
	return append(dst, s...)
}

// hasher returns the pooled SHA-256 state of c, reset.
func (c *canon) hasher() hash.Hash {
	if c.sha == nil {
		c.sha = sha256.New()
	} else {
		c.sha.Reset()
	}
	return c.sha
}

// digest returns the sum of c.sha. It goes through c.sum because a slice
// of a local array passed to the hash.Hash interface would escape to the
// heap.
func (c *canon) digest() Digest {
	c.sha.Sum(c.sum[:0])
	return Digest(c.sum)
}
