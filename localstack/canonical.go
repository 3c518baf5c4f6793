package localstack

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// request appends to dst an encoding of the JSON object body without its
// top-level member ClientRequestToken, such that two bodies have the same
// encoding exactly when they decode to the same value (with numbers
// compared as written, object members in any order, a repeated member
// name meaning its last value, as encoding/json decodes). It reports false
// when body is not a JSON object.
//
// It does what re-encoding the decoded body with encoding/json would,
// without allocating once c's scratch space has grown (c keeps it for the
// next call): the front computes it for every TransactWriteItems that
// carries a ClientRequestToken. The encoding is
// not JSON, only input to a hash: a tag byte per value ('o' object, 'k'
// member, 'a' array, 'e' end of an object or array, 's' string, 'n'
// number, 't', 'f', 'z' for true, false, null), strings and numbers
// length-prefixed, members sorted by name.
func (c *canonicalizer) request(dst, body []byte) ([]byte, bool) {
	c.members = c.members[:0]
	src := skipSpace(body)
	if len(src) == 0 || src[0] != '{' {
		return dst, false
	}
	dst, rest, ok := c.object(dst, src[1:], true)
	if !ok || len(skipSpace(rest)) != 0 {
		return dst, false
	}
	return dst, true
}

// canonicalizer holds scratch space reused across the objects of a
// request, and across requests: members is a stack, each object's members
// above those of the objects that enclose it; out is the buffer of the
// canonical form.
type canonicalizer struct {
	scratch []byte
	members []member
	out     []byte
}

// member locates one encoded member in dst: its name, and the whole
// member from its tag to the end of its value.
type member struct {
	nameStart, nameEnd, start, end int
}

func skipSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	return b
}

func appendLength(dst []byte, n int) []byte { return binary.AppendUvarint(dst, uint64(n)) }

// value encodes the JSON value at the start of src.
func (c *canonicalizer) value(dst, src []byte) ([]byte, []byte, bool) {
	src = skipSpace(src)
	if len(src) == 0 {
		return dst, src, false
	}
	switch src[0] {
	case '{':
		return c.object(dst, src[1:], false)
	case '[':
		dst = append(dst, 'a')
		src = skipSpace(src[1:])
		if len(src) > 0 && src[0] == ']' {
			return append(dst, 'e'), src[1:], true
		}
		for {
			var ok bool
			if dst, src, ok = c.value(dst, src); !ok {
				return dst, src, false
			}
			src = skipSpace(src)
			switch {
			case len(src) == 0:
				return dst, src, false
			case src[0] == ',':
				src = src[1:]
			case src[0] == ']':
				return append(dst, 'e'), src[1:], true
			default:
				return dst, src, false
			}
		}
	case '"':
		s, rest, ok := jsonString(src)
		if !ok {
			return dst, src, false
		}
		dst = appendLength(append(dst, 's'), len(s))
		return append(dst, s...), rest, true
	case 't':
		return literal(dst, src, "true", 't')
	case 'f':
		return literal(dst, src, "false", 'f')
	case 'n':
		return literal(dst, src, "null", 'z')
	}
	i := 0
	for i < len(src) && (src[i] >= '0' && src[i] <= '9' || src[i] == '-' || src[i] == '+' || src[i] == '.' || src[i] == 'e' || src[i] == 'E') {
		i++
	}
	if i == 0 {
		return dst, src, false
	}
	dst = appendLength(append(dst, 'n'), i)
	return append(dst, src[:i]...), src[i:], true
}

func literal(dst, src []byte, word string, tag byte) ([]byte, []byte, bool) {
	if len(src) < len(word) || string(src[:len(word)]) != word {
		return dst, src, false
	}
	return append(dst, tag), src[len(word):], true
}

// object encodes the members of the object whose '{' precedes src. At the
// top level it leaves out ClientRequestToken.
func (c *canonicalizer) object(dst, src []byte, top bool) ([]byte, []byte, bool) {
	dst = append(dst, 'o')
	first := len(dst)
	src = skipSpace(src)
	if len(src) > 0 && src[0] == '}' {
		return append(dst, 'e'), src[1:], true
	}
	base := len(c.members)
	for {
		src = skipSpace(src)
		if len(src) == 0 || src[0] != '"' {
			return dst, src, false
		}
		name, rest, ok := jsonString(src)
		if !ok {
			return dst, src, false
		}
		src = skipSpace(rest)
		if len(src) == 0 || src[0] != ':' {
			return dst, src, false
		}
		m := member{start: len(dst)}
		dst = appendLength(append(dst, 'k'), len(name))
		m.nameStart = len(dst)
		dst = append(dst, name...)
		m.nameEnd = len(dst)
		if dst, src, ok = c.value(dst, src[1:]); !ok {
			return dst, src, false
		}
		m.end = len(dst)
		if top && string(name) == "ClientRequestToken" {
			dst = dst[:m.start]
		} else {
			c.members = append(c.members, m)
		}
		src = skipSpace(src)
		if len(src) == 0 {
			return dst, src, false
		}
		if src[0] == '}' {
			src = src[1:]
			break
		}
		if src[0] != ',' {
			return dst, src, false
		}
		src = src[1:]
	}
	dst = c.sortMembers(dst, first, c.members[base:])
	c.members = c.members[:base]
	return append(dst, 'e'), src, true
}

// sortMembers reorders the encoded members, which fill dst from first, by
// name, keeping only the last of members with the same name.
func (c *canonicalizer) sortMembers(dst []byte, first int, members []member) []byte {
	name := func(b []byte, m member) []byte { return b[m.nameStart:m.nameEnd] }
	ordered := true
	for i := 1; i < len(members); i++ {
		if bytes.Compare(name(dst, members[i-1]), name(dst, members[i])) >= 0 {
			ordered = false
			break
		}
	}
	if ordered {
		return dst
	}
	c.scratch = append(c.scratch[:0], dst[first:]...)
	for i := range members {
		members[i].nameStart -= first
		members[i].nameEnd -= first
		members[i].start -= first
		members[i].end -= first
	}
	src := c.scratch
	slices.SortStableFunc(members, func(a, b member) int { return bytes.Compare(name(src, a), name(src, b)) })
	dst = dst[:first]
	for i, m := range members {
		if i+1 < len(members) && bytes.Equal(name(src, members[i+1]), name(src, m)) {
			continue // a later member of the same name wins
		}
		dst = append(dst, src[m.start:m.end]...)
	}
	return dst
}

// jsonString decodes the JSON string at the start of src, as
// encoding/json does (invalid UTF-8 becomes U+FFFD), and returns the rest
// of src after it.
func jsonString(src []byte) ([]byte, []byte, bool) {
	escaped := false
	for i := 1; i < len(src); i++ {
		switch b := src[i]; {
		case b == '\\':
			escaped = true
			i++
		case b == '"':
			raw := src[1:i]
			if !escaped && utf8.Valid(raw) {
				return raw, src[i+1:], true
			}
			var s string
			if json.Unmarshal(src[:i+1], &s) != nil {
				return nil, src, false
			}
			return []byte(s), src[i+1:], true
		case b < 0x20:
			return nil, src, false
		}
	}
	return nil, src, false
}
