package fingerprint

import (
	"bytes"
	"encoding/binary"
	"hash"
	"slices"
	"sync"
)

// MaxDepth is the deepest nesting of arrays and objects that [AppendCanonical]
// accepts. A scalar at the top level is at depth 0, the elements of a
// top-level array are at depth 1, and so on: 1000 nested arrays are accepted,
// 1001 are rejected with [ErrTooDeep].
const MaxDepth = 1000

// Canonical returns the canonical form of the JSON text src, as described in
// the package documentation. It is AppendCanonical(nil, src), except that it
// returns nil on error.
func Canonical(src []byte) ([]byte, error) {
	out, err := AppendCanonical(nil, src)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AppendCanonical appends the canonical form of the JSON text src to dst and
// returns the extended slice.
//
// src must hold exactly one JSON value (RFC 8259), optionally surrounded by
// whitespace, that is also I-JSON (RFC 7493) in the sense used by RFC 8785:
// strings are well-formed UTF-8, \u escapes do not leave UTF-16 surrogates
// unpaired, and no object has two members of the same name. Numbers are not
// limited to IEEE-754 double precision; see the package documentation for
// their canonical form and range.
//
// The output is compact (no insignificant whitespace), lists object members
// ordered by their names compared as UTF-16 code unit sequences, escapes only
// what RFC 8785 §3.2.2.2 requires and is valid UTF-8. It is byte-identical to
// the RFC 8785 (JCS) output for every input whose numbers all equal the
// shortest round-trip decimal form of the nearest IEEE-754 double.
//
// On error AppendCanonical returns dst unchanged and a [*SyntaxError], which
// wraps one of the sentinel errors of this package unless the input violates
// the JSON grammar itself. src is read completely before dst is written, so
// the two may share memory: AppendCanonical(src[:0], src) canonicalises in
// place. It does not retain src or dst, is safe for concurrent use and never
// panics.
func AppendCanonical(dst, src []byte) ([]byte, error) {
	c := getCanon()
	defer putCanon(c)
	if err := c.parse(src); err != nil {
		return dst, err
	}
	return c.emit(dst), nil
}

// canon is the reusable state of one canonicalisation.
//
// Parsing writes the canonical text of every value into arena in input
// order. An object whose members arrive in order needs nothing more. One
// whose members do not is sorted once, in O(m log m), and then either
// rewritten in place, or, when that could move the same bytes too often,
// left as it is and recorded in objs and spans for emit to reorder while it
// copies the arena out. Either way every byte is moved O(1) times, however
// deeply reordered objects nest.
type canon struct {
	src   []byte
	arena []byte

	stack   []frame   // open arrays and objects, innermost last
	members []member  // members of the open objects, innermost object last
	order   []sortKey // one per member, parallel to members; sorted on close
	keys    []byte    // decoded names that differ from their canonical text

	objs  []objRec // objects whose members need reordering, in closing order
	spans []span   // member spans of the objects in objs, in sorted order

	emitStack []emitFrame
	scratch   []byte    // object text while rewriting; canonical text for hashing
	hdr       []byte    // header of a digest before it is hashed
	sha       hash.Hash // SHA-256 state for digests, created on first use

	cmps  int // member name comparisons so far; read by the complexity tests
	moves int // bytes moved by in-place reordering; read by the complexity tests
}

// frame is an array or object that has been opened and not yet closed.
type frame struct {
	object   bool
	unsorted bool // some member name is smaller than the one before it
	deferred bool // some object inside is recorded in canon.objs
	start    int  // arena offset of the '{'
	memBase  int  // index in canon.members of the object's first member
	keysBase int  // len(canon.keys) when the object was opened
	moved    int  // bytes rewritten in place by the objects inside
}

// member is one member of an open object.
type member struct {
	start  int // arena offset of the opening quote of the name
	end    int // arena offset just past the value
	keyOff int // offset of the decoded name, in arena or in canon.keys
	keyLen int // length in bytes of the decoded name
	srcOff int // offset of the name in src, for error reports
	flags  uint8
}

// sortKey is what sorting moves around: the start of a member's name, which
// decides most comparisons, and the index of the member.
type sortKey struct {
	prefix uint64 // keyPrefix of the decoded name
	member int    // index in canon.members
}

const (
	keyASCII  uint8 = 1 << iota // the decoded name is pure ASCII
	keyInKeys                   // the decoded name is in canon.keys
)

// objRec is a closed object whose members are emitted in sorted order.
type objRec struct {
	start, end int // arena span of the object, braces included
	spans      int // index in canon.spans of its first member in sorted order
	n          int // number of members
}

// span is a half-open range of arena offsets.
type span struct{ start, end int }

// Buffers larger than these are not kept in the pool, so that one huge
// request does not pin its memory for the life of the process.
const (
	maxPooledBytes = 4 << 20
	maxPooledItems = 1 << 16
)

var canonPool = sync.Pool{New: func() any { return new(canon) }}

func getCanon() *canon { return canonPool.Get().(*canon) }

func putCanon(c *canon) {
	c.src = nil
	c.arena = dropIfLarge(c.arena, maxPooledBytes)
	c.keys = dropIfLarge(c.keys, maxPooledBytes)
	c.scratch = dropIfLarge(c.scratch, maxPooledBytes)
	c.hdr = dropIfLarge(c.hdr, maxPooledBytes)
	c.stack = dropIfLarge(c.stack, 2*MaxDepth)
	c.members = dropIfLarge(c.members, maxPooledItems)
	c.order = dropIfLarge(c.order, maxPooledItems)
	c.objs = dropIfLarge(c.objs, maxPooledItems)
	c.spans = dropIfLarge(c.spans, maxPooledItems)
	c.emitStack = dropIfLarge(c.emitStack, 2*MaxDepth)
	canonPool.Put(c)
}

func dropIfLarge[T any](s []T, limit int) []T {
	if cap(s) > limit {
		return nil
	}
	return s[:0]
}

// parse checks src and writes its canonical text to c.arena, except that
// the members of the objects recorded in c.objs are still in input order.
//
// The arena grows as output is produced rather than to len(src) up front, so
// that a large body which turns out not to be JSON costs no memory.
func (c *canon) parse(src []byte) error {
	c.src = src
	c.arena = c.arena[:0]
	c.stack = c.stack[:0]
	c.members = c.members[:0]
	c.order = c.order[:0]
	c.keys = c.keys[:0]
	c.objs = c.objs[:0]
	c.spans = c.spans[:0]
	c.cmps, c.moves = 0, 0

	// The output is kept in a local variable for speed and stored to
	// c.arena whenever other methods read it.
	out := c.arena
	var err error
	i := skipWS(src, 0)
value:
	// Each iteration parses one value starting at src[i], then consumes the
	// closing brackets and the comma that follow it.
	for {
		if i >= len(src) {
			return errEOF(i)
		}
		switch b := src[i]; b {
		case '"':
			out, i, _, err = c.str(out, i)
		case '{':
			if len(c.stack) == MaxDepth {
				return classErr(i, ErrTooDeep)
			}
			c.stack = append(c.stack, frame{
				object:   true,
				start:    len(out),
				memBase:  len(c.members),
				keysBase: len(c.keys),
			})
			out = append(out, '{')
			if i = skipWS(src, i+1); i < len(src) && src[i] == '}' {
				out = append(out, '}')
				c.stack = c.stack[:len(c.stack)-1]
				i++
				break
			}
			if out, i, err = c.memberName(out, i); err != nil {
				return err
			}
			continue value
		case '[':
			if len(c.stack) == MaxDepth {
				return classErr(i, ErrTooDeep)
			}
			c.stack = append(c.stack, frame{})
			out = append(out, '[')
			if i = skipWS(src, i+1); i < len(src) && src[i] == ']' {
				out = append(out, ']')
				c.stack = c.stack[:len(c.stack)-1]
				i++
				break
			}
			continue value
		case 't':
			out, i, err = literal(out, src, i, "true")
		case 'f':
			out, i, err = literal(out, src, i, "false")
		case 'n':
			out, i, err = literal(out, src, i, "null")
		default:
			if b != '-' && (b < '0' || b > '9') {
				return unexpected(i, b, "looking for beginning of value")
			}
			out, i, err = number(out, src, i)
		}
		if err != nil {
			return err
		}

		// A value is complete: close every container that ends here.
		for {
			i = skipWS(src, i)
			n := len(c.stack)
			if n == 0 {
				if i < len(src) {
					return unexpected(i, src[i], "after top-level value")
				}
				c.arena = out
				return nil
			}
			if i >= len(src) {
				return errEOF(i)
			}
			f := &c.stack[n-1]
			b := src[i]
			if f.object {
				c.members[len(c.members)-1].end = len(out)
				if b == ',' {
					out = append(out, ',')
					if out, i, err = c.memberName(out, skipWS(src, i+1)); err != nil {
						return err
					}
					continue value
				}
				if b != '}' {
					return unexpected(i, b, "after object member value")
				}
				c.arena = append(out, '}')
				if err = c.closeObject(f); err != nil {
					return err
				}
				out = c.arena
			} else {
				if b == ',' {
					out = append(out, ',')
					i = skipWS(src, i+1)
					continue value
				}
				if b != ']' {
					return unexpected(i, b, "after array element")
				}
				out = append(out, ']')
			}
			if n > 1 {
				p := &c.stack[n-2]
				p.moved += f.moved
				p.deferred = p.deferred || f.deferred
			}
			c.stack = c.stack[:n-1]
			i++
		}
	}
}

func errEOF(i int) error { return syntaxErr(i, "unexpected end of JSON input") }

// skipWS returns the index of the first byte at or after i that is not JSON
// whitespace.
func skipWS(src []byte, i int) int {
	for i < len(src) {
		switch src[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// literal parses the literal word (true, false or null), whose first byte
// is at src[i], and appends it to out.
func literal(out, src []byte, i int, word string) ([]byte, int, error) {
	for j := 1; j < len(word); j++ {
		if i+j >= len(src) {
			return out, 0, errEOF(len(src))
		}
		if src[i+j] != word[j] {
			return out, 0, unexpected(i+j, src[i+j], "in literal "+word)
		}
	}
	return append(out, word...), i + len(word), nil
}

// memberName parses the name of an object member starting at src[i] and
// the colon after it, appends them to out, records the member, and returns
// the index of its value.
func (c *canon) memberName(out []byte, i int) ([]byte, int, error) {
	src := c.src
	if i >= len(src) {
		return out, 0, errEOF(i)
	}
	if src[i] != '"' {
		return out, 0, unexpected(i, src[i], "looking for beginning of object member name")
	}
	start := len(out)
	out, next, flags, err := c.str(out, i)
	if err != nil {
		return out, 0, err
	}
	c.arena = out
	m := member{start: start, srcOff: i, keyOff: start + 1, keyLen: len(out) - start - 2}
	if flags&strNonASCII == 0 {
		m.flags |= keyASCII
	}
	if flags&strEscaped != 0 {
		// The canonical text escapes some character, so the decoded name
		// that the order is defined on has to be kept separately.
		m.keyOff = len(c.keys)
		c.keys = unescapeCanonical(c.keys, out[start+1:len(out)-1])
		m.keyLen = len(c.keys) - m.keyOff
		m.flags |= keyInKeys
	}
	c.members = append(c.members, m)
	c.order = append(c.order, sortKey{prefix: keyPrefix(c.key(&m)), member: len(c.members) - 1})
	f := &c.stack[len(c.stack)-1]
	if n := len(c.order); !f.unsorted && n-1 > f.memBase {
		if prev, cur := &c.order[n-2], &c.order[n-1]; !c.less(prev, cur) {
			if c.compare(prev, cur) == 0 {
				return out, 0, classErr(i, ErrDuplicateName)
			}
			f.unsorted = true
		}
	}

	i = skipWS(src, next)
	if i >= len(src) {
		return out, 0, errEOF(i)
	}
	if src[i] != ':' {
		return out, 0, unexpected(i, src[i], "after object member name")
	}
	return append(out, ':'), skipWS(src, i+1), nil
}

// closeObject finishes the object f whose closing brace has just been
// written. Members that arrived in order need no further work. Otherwise
// they are sorted and checked for duplicates; then the object is rewritten
// in place if nothing inside it is recorded for emit and the bytes already
// rewritten inside it are at most half its size, and recorded for emit
// otherwise. By induction, the bytes rewritten inside any value are then at
// most 1.5 times its size, so in-place rewriting as a whole is linear.
func (c *canon) closeObject(f *frame) error {
	ks := c.order[f.memBase:]
	if f.unsorted {
		c.sortMembers(ks)
		for j := 1; j < len(ks); j++ {
			if c.compare(&ks[j-1], &ks[j]) == 0 {
				off := max(c.members[ks[j-1].member].srcOff, c.members[ks[j].member].srcOff)
				return classErr(off, ErrDuplicateName)
			}
		}
		size := len(c.arena) - f.start
		if !f.deferred && f.moved <= size/2 {
			c.rewrite(f.start, ks)
			f.moved += size
		} else {
			c.objs = append(c.objs, objRec{start: f.start, end: len(c.arena), spans: len(c.spans), n: len(ks)})
			for _, k := range ks {
				m := &c.members[k.member]
				c.spans = append(c.spans, span{m.start, m.end})
			}
			f.deferred = true
		}
	}
	c.members = c.members[:f.memBase]
	c.order = c.order[:f.memBase]
	c.keys = c.keys[:f.keysBase]
	return nil
}

// sortMembers sorts ks by name: by insertion for the small objects that are
// the common case, by pdqsort (O(m log m)) otherwise.
func (c *canon) sortMembers(ks []sortKey) {
	if len(ks) > 12 {
		slices.SortFunc(ks, func(a, b sortKey) int { return c.compare(&a, &b) })
		return
	}
	for i := 1; i < len(ks); i++ {
		k := ks[i]
		j := i
		for ; j > 0 && c.less(&k, &ks[j-1]); j-- {
			ks[j] = ks[j-1]
		}
		ks[j] = k
	}
}

// rewrite puts the members of the object at arena offset start, which ends
// the arena, in the order ks, in place.
func (c *canon) rewrite(start int, ks []sortKey) {
	inner := c.arena[start+1 : len(c.arena)-1]
	c.scratch = append(c.scratch[:0], inner...)
	c.moves += 2 * len(inner)
	w := 0
	for j, k := range ks {
		if j > 0 {
			inner[w] = ','
			w++
		}
		m := &c.members[k.member]
		w += copy(inner[w:], c.scratch[m.start-start-1:m.end-start-1])
	}
}

// key returns the decoded name of m.
func (c *canon) key(m *member) []byte {
	if m.flags&keyInKeys != 0 {
		return c.keys[m.keyOff : m.keyOff+m.keyLen]
	}
	return c.arena[m.keyOff : m.keyOff+m.keyLen]
}

// compare orders the names of the members of a and b as RFC 8785 §3.2.3
// requires.
func (c *canon) compare(a, b *sortKey) int {
	c.cmps++
	switch {
	case a.prefix < b.prefix:
		return -1
	case a.prefix > b.prefix:
		return +1
	}
	return c.compareNames(a, b)
}

// less reports whether the name of a sorts before that of b; it is compare
// with the common case, different prefixes, inlined.
func (c *canon) less(a, b *sortKey) bool {
	if a.prefix != b.prefix {
		c.cmps++
		return a.prefix < b.prefix
	}
	return c.compare(a, b) < 0
}

// compareNames compares the full names of a and b.
func (c *canon) compareNames(a, b *sortKey) int {
	ma, mb := &c.members[a.member], &c.members[b.member]
	if ma.flags&mb.flags&keyASCII != 0 {
		return bytes.Compare(c.key(ma), c.key(mb))
	}
	return compareUTF16(c.key(ma), c.key(mb))
}

// orderKey maps a byte of well-formed UTF-8 so that comparing strings by
// mapped bytes orders them as RFC 8785 §3.2.3 requires: as sequences of
// UTF-16 code units.
//
// UTF-8 byte order is code point order, and UTF-16 code unit order agrees
// with it except that the supplementary characters (U+10000 and above,
// encoded with surrogates 0xD800-0xDBFF first) sort before U+E000-U+FFFF.
// Two strings first differ either in the lead bytes of two characters or
// within characters of the same length and lead byte, where the orders
// agree. So only lead bytes are remapped: 0xF0-0xF4 (supplementary planes)
// become 0xEE-0xF2 and 0xEE-0xEF (U+E000-U+FFFF) become 0xF6-0xF7. All stay
// above 0xED, the largest lead byte of a character below U+E000, and above
// the continuation bytes 0x80-0xBF, so no other comparison changes.
func orderKey(b byte) byte {
	switch {
	case b >= 0xF0:
		return b - 2 // 0xF0-0xF4 -> 0xEE-0xF2
	case b >= 0xEE:
		return b + 8 // 0xEE-0xEF -> 0xF6-0xF7
	}
	return b
}

// keyPrefix returns the orderKey of the first 8 bytes of name as a
// big-endian integer, padded with zero bytes. Names whose prefixes differ
// compare as their prefixes do.
func keyPrefix(name []byte) uint64 {
	var p uint64
	if len(name) >= 8 {
		p = binary.BigEndian.Uint64(name)
	} else {
		var b [8]byte
		copy(b[:], name)
		p = binary.BigEndian.Uint64(b[:])
	}
	if p&0x8080808080808080 == 0 {
		return p // ASCII, which orderKey leaves alone
	}
	var q uint64
	for shift := 56; shift >= 0; shift -= 8 {
		q = q<<8 | uint64(orderKey(byte(p>>shift)))
	}
	return q
}

// compareUTF16 compares the well-formed UTF-8 strings a and b as sequences
// of UTF-16 code units, returning -1, 0 or +1.
func compareUTF16(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i < n {
		if orderKey(a[i]) < orderKey(b[i]) {
			return -1
		}
		return +1
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return +1
	}
	return 0
}
