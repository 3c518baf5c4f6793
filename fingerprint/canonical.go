package fingerprint

import (
	"bytes"
	"encoding/binary"
	"hash"
	"reflect"
	"slices"
	"sync"
	"unicode/utf8"
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
// the JSON grammar itself. When an object has several names that occur more
// than once, the error's offset is that of the second occurrence of the
// first such name found: the first repeated name if the names before it are
// in canonical order, otherwise the smallest repeated name.
//
// src is read completely before dst is written, so the two may share
// memory: AppendCanonical(src[:0], src) canonicalises in place. It does not
// retain src or dst, is safe for concurrent use and never panics.
func AppendCanonical(dst, src []byte) ([]byte, error) {
	c := getCanon()
	defer putCanon(c)
	if !c.parse(src) {
		return dst, c.failure.err()
	}
	return c.emit(dst), nil
}

// canon is the reusable state of one canonicalisation.
//
// Most canonical text is input text: the parser only checks it, and the
// bytes from src[run] up to the current position are canonical as they
// stand. It copies them to the arena when something has to change: around
// whitespace, escapes that are spelled differently, numbers that are not in
// canonical form, and objects whose members have to be reordered. Offsets
// into the canonical text ("arena offsets") are therefore counted as if
// every byte had been copied: a byte pending at src[j] has the arena offset
// len(arena) + j - run, and it keeps that offset when it is copied.
//
// An object whose members arrive in order needs nothing more. One whose
// members do not is sorted once, in O(m log m), and then either written to
// the arena in sorted order, or, when that could move the same bytes too
// often, left as it is and recorded in objs and spans for emit to reorder
// while it copies the text out. Either way every byte is moved O(1) times,
// however deeply reordered objects nest. A document that needs no change at
// all is never copied: text is then a slice of src.
//
// Every buffer grows geometrically and is kept, within limits, when the
// canon returns to the pool, so a canonicalisation allocates nothing once
// the pool holds buffers of its size, and O(n) bytes in O(log n) steps
// otherwise.
type canon struct {
	src   []byte
	run   int    // src[run:] up to the parse position is canonical text not yet in arena
	arena []byte // canonical text copied so far
	text  []byte // after a successful parse, the canonical text in input order

	stack   []frame   // open arrays and objects, innermost last
	members []member  // members of the open objects, innermost object last
	order   []sortKey // members of the object being sorted, in sorted order
	keys    []byte    // decoded names that src does not spell as they are

	objs  []objRec // objects whose members need reordering, in closing order
	spans []span   // member spans of the objects in objs, in sorted order

	emitStack []emitFrame
	scratch   []byte    // part of an object while it is reordered; text on its way to a hash
	hdr       []byte    // header of a digest before it is hashed
	sha       hash.Hash // SHA-256 state for digests, created on first use
	sum       [32]byte  // the digest, written by sha without allocating
	failure   failure   // why the last parse failed

	shapes   [shapeSets][2]shape // cache of sorted orders; see sortMembers
	shapeLRU [shapeSets]uint8    // per set, the way used less recently

	recent int // decaying maximum of input sizes; see release

	cmps  int // member name comparisons so far; read by the complexity tests
	moves int // bytes copied to reorder members; read by the complexity tests
	grown int // bytes of buffer capacity allocated; read by the complexity tests
}

// frame is an array or object that has been opened and not yet closed.
//
// An object whose members arrive in order, with scalar values, records only
// its latest member, which the next name is compared with. It starts
// recording all its members in canon.members from memBase on (see
// canon.record) when a name arrives out of order, as they must then be
// sorted, or when a member's value is an array or object, so that the
// members it may have to recover later have scalar values only.
type frame struct {
	start     int    // arena offset of the '{' or '['
	srcStart  int    // offset in src of the '{' of an object, for error reports
	memBase   int    // index in canon.members of the object's first member
	keysBase  int    // len(canon.keys) when the object was opened
	moved     int    // total size of the objects reordered inside
	count     int    // members so far
	last      member // the latest member, if count > 0
	object    bool
	unsorted  bool // some member name is not greater than the one before it
	recording bool // the members are in canon.members
	deferred  bool // some object inside is recorded in canon.objs
}

// member is one member of an open object. Its value ends where the next
// member starts, less the comma, or at the closing brace.
type member struct {
	prefix uint64 // prefixOf the decoded name
	start  int    // arena offset of the opening quote of the name
	keyOff int    // offset of the decoded name, in src or in canon.keys
	keyLen int    // length in bytes of the decoded name, with the flags below
}

// Flags in member.keyLen, above the length (keyLen&keyLenMask): keyInKeys
// says that the decoded name is in canon.keys rather than in src, and
// keyNonASCII that it has characters outside ASCII, which compare in UTF-16
// order rather than byte order.
const (
	keyInKeys   = 1 << 62
	keyNonASCII = 1 << 61
	keyLenMask  = keyNonASCII - 1
)

// sortKey is what sorting moves around: the prefix of a member's name,
// which decides most comparisons, and the index of the member.
type sortKey struct {
	prefix uint64
	member int
}

// shape is the order found by sorting an object whose names have pairwise
// different prefixes, kept for the next object with the same prefixes.
type shape struct {
	prefixes []uint64  // the prefixes of the names, in input order
	order    []sortKey // the sorted order
}

// The shape cache is two-way set-associative, with shapeSets sets, and holds
// objects of at most maxShape members.
const (
	shapeSets = 8
	maxShape  = 32
)

// objRec is a closed object whose members are emitted in sorted order.
type objRec struct {
	start, end int // arena span of the object, braces included
	spans      int // index in canon.spans of its first member in sorted order
	n          int // number of members
}

// span is a half-open range of arena offsets.
type span struct{ start, end int }

// What a canon keeps when it returns to the pool. Every buffer needs O(n)
// bytes for an input of n bytes, so a buffer is kept when it is at most
// pooledPerByte times canon.recent, a running maximum of the sizes of the
// inputs served that decays by an eighth per input, or small; and never
// when it exceeds maxPooledBytes. Large inputs that keep coming therefore
// reuse their buffers, even between small ones, while at most 21 much
// smaller inputs in a row release them, so that one huge request does not
// pin its memory for the life of the process.
const (
	pooledPerByte  = 16
	minPooledBytes = 1 << 20
	maxPooledBytes = 64 << 20
)

var canonPool = sync.Pool{New: func() any { return new(canon) }}

func getCanon() *canon { return canonPool.Get().(*canon) }

func putCanon(c *canon) {
	c.release()
	canonPool.Put(c)
}

// release drops the references to the caller's memory, and the buffers that
// the pool should not keep; see pooledPerByte.
func (c *canon) release() {
	c.recent = max(len(c.src), c.recent-c.recent/8)
	limit := min(max(pooledPerByte*c.recent, minPooledBytes), maxPooledBytes)
	c.src, c.text = nil, nil
	c.arena = dropIfLarge(c.arena, limit)
	c.keys = dropIfLarge(c.keys, limit)
	c.scratch = dropIfLarge(c.scratch, limit)
	c.hdr = dropIfLarge(c.hdr, limit)
	c.stack = dropIfLarge(c.stack, limit)
	c.members = dropIfLarge(c.members, limit)
	c.order = dropIfLarge(c.order, limit)
	c.objs = dropIfLarge(c.objs, limit)
	c.spans = dropIfLarge(c.spans, limit)
	c.emitStack = dropIfLarge(c.emitStack, limit)
	c.failure = failure{}
}

// dropIfLarge returns s emptied, or nil when its backing array is larger
// than limit bytes.
func dropIfLarge[T any](s []T, limit int) []T {
	if uintptr(cap(s))*reflect.TypeFor[T]().Size() > uintptr(limit) {
		return nil
	}
	return s[:0]
}

// grow returns s with room for at least n more elements. When it has to
// allocate, it at least doubles the capacity, so that appending m elements
// one at a time copies O(m) elements in all, and it adds the bytes
// allocated to *grown.
func grow[T any](s []T, n int, grown *int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	s = slices.Grow(s, max(n, cap(s), 16))
	*grown += cap(s) * int(reflect.TypeFor[T]().Size())
	return s
}

// arenaSlack is the free space kept at the end of the arena after every
// copy, so that the short pieces written between copies need not check.
const arenaSlack = 16

// put appends p to out, keeping arenaSlack bytes free after it.
func (c *canon) put(out, p []byte) []byte {
	if cap(out)-len(out) < len(p)+arenaSlack {
		out = grow(out, len(p)+arenaSlack, &c.grown)
	}
	return append(out, p...)
}

// flush copies the pending text up to src[to] to out.
func (c *canon) flush(out []byte, to int) []byte {
	out = c.put(out, c.src[c.run:to])
	c.run = to
	return out
}

// pos returns the arena offset of src[i], which is pending.
func (c *canon) pos(out []byte, i int) int { return len(out) + i - c.run }

// skipSpace skips the whitespace at src[i], if any, which is not canonical
// text: the pending text before it is copied out and the pending text
// resumes after it. Callers test src[i] <= ' ' first, so that the common
// case, no whitespace, costs no call.
func (c *canon) skipSpace(out []byte, i int) ([]byte, int) {
	if j := skipWS(c.src, i); j > i {
		out = c.flush(out, i)
		c.run = j
		i = j
	}
	return out, i
}

// parse checks src and leaves its canonical text in c.text, except that
// the members of the objects recorded in c.objs are still in input order.
// It returns false, with the reason in c.failure, if src is not accepted.
//
// It is one loop over three states, value, the closing brackets and commas
// after a value, and member (a member's name and colon), with its own stack
// of open arrays and objects, so that no input can exhaust the goroutine
// stack. Memory is used as text is copied rather than reserved for len(src)
// up front, so a large body which turns out not to be JSON costs none; most
// such bodies are rejected at their first byte.
func (c *canon) parse(src []byte) bool {
	c.src, c.text = src, nil
	c.stack = c.stack[:0]
	c.members = c.members[:0]
	c.keys = c.keys[:0]
	c.objs = c.objs[:0]
	c.spans = c.spans[:0]
	c.cmps, c.moves, c.grown = 0, 0, 0

	// The arena is kept in a local variable for speed and stored to
	// c.arena at the end.
	out := c.arena[:0]
	i := skipWS(src, 0)
	c.run = i
	var f *frame // the innermost open array or object, nil at the top level
	var ok bool

value:
	// A value starts at src[i].
	if i >= len(src) {
		c.failEOF(i)
		return false
	}
	switch b := src[i]; b {
	case '"':
		// Most strings are plain ASCII, which str need not look at.
		if j := plainRun(src, i+1); j < len(src) && src[j] == '"' {
			i = j + 1
		} else if out, i, _ = c.str(out, i); i < 0 {
			return false
		}
	case '{', '[':
		if len(c.stack) == MaxDepth {
			c.failClass(i, ErrTooDeep)
			return false
		}
		open, start := i, c.pos(out, i)
		if i++; i < len(src) && src[i] <= ' ' {
			out, i = c.skipSpace(out, i)
		}
		if i < len(src) && src[i] == b+2 { // '}' or ']'
			i++
			break
		}
		if f != nil && f.object && !f.recording {
			// The latest member of f gets this array or object as value.
			c.record(f, out)
		}
		if len(c.stack) == cap(c.stack) {
			c.stack = grow(c.stack, 1, &c.grown)
		}
		if b == '[' {
			c.stack = append(c.stack, frame{start: start})
			f = &c.stack[len(c.stack)-1]
			goto value
		}
		c.stack = append(c.stack, frame{
			object:   true,
			start:    start,
			srcStart: open,
			memBase:  len(c.members),
			keysBase: len(c.keys),
		})
		f = &c.stack[len(c.stack)-1]
		goto member
	case 't':
		i = c.literal(i, "true")
	case 'f':
		i = c.literal(i, "false")
	case 'n':
		i = c.literal(i, "null")
	default:
		if b-'1' < 9 {
			// A plain integer of at most 21 digits is canonical.
			j := i + 1
			for j < len(src) && src[j]-'0' < 10 {
				j++
			}
			if j-i <= 21 && (j == len(src) || src[j] != '.' && src[j]|0x20 != 'e') {
				i = j
				break
			}
		} else if b != '-' && b != '0' {
			c.failByte(i, b, "looking for beginning of value")
			return false
		}
		out, i = c.number(out, i)
	}
	if i < 0 {
		return false
	}

	// A value is complete: close every container that ends here.
	for {
		if f == nil {
			return c.finish(out, i)
		}
		if i < len(src) && src[i] <= ' ' {
			out, i = c.skipSpace(out, i)
		}
		if i >= len(src) {
			c.failEOF(i)
			return false
		}
		b := src[i]
		if b == ',' {
			if i++; i < len(src) && src[i] <= ' ' {
				out, i = c.skipSpace(out, i)
			}
			if f.object {
				goto member
			}
			goto value
		}
		if f.object {
			if b != '}' {
				c.failByte(i, b, "after object member value")
				return false
			}
			if out, ok = c.closeObject(f, out, i); !ok {
				return false
			}
		} else if b != ']' {
			c.failByte(i, b, "after array element")
			return false
		}
		n := len(c.stack)
		c.stack = c.stack[:n-1]
		if n > 1 {
			p := &c.stack[n-2]
			p.moved += f.moved
			p.deferred = p.deferred || f.deferred
			f = p
		} else {
			f = nil
		}
		i++
	}

member:
	// The name of a member of the object f starts at src[i]: record the
	// member, and check that the names are in order or note that they are
	// not.
	{
		if !c.expect(i, '"', "looking for beginning of object member name") {
			return false
		}
		m := member{start: c.pos(out, i), keyOff: i + 1}
		var next int
		var flags uint8
		// Most names are plain ASCII, which str need not look at.
		if j := plainRun(src, i+1); j < len(src) && src[j] == '"' {
			next = j + 1
			m.keyLen = j - i - 1
			if len(src)-m.keyOff >= 8 {
				// ASCII, so the prefix is the bytes themselves.
				m.prefix = binary.BigEndian.Uint64(src[m.keyOff:])
				if m.keyLen < 8 {
					m.prefix &^= 1<<(64-8*m.keyLen) - 1
				}
			} else {
				m.prefix = prefixOf(src[m.keyOff:], m.keyLen)
			}
		} else if out, next, flags = c.str(out, i); next < 0 {
			return false
		} else if flags&strBackslash == 0 {
			// The name is spelled as it is.
			m.keyLen = next - i - 2
			m.prefix = prefixOf(src[m.keyOff:], m.keyLen)
		} else {
			m.keyOff = len(c.keys)
			c.keys = appendUnescaped(grow(c.keys, next-i, &c.grown), src[i+1:next-1])
			m.keyLen = len(c.keys) - m.keyOff
			m.prefix = prefixOf(c.keys[m.keyOff:], m.keyLen)
			m.keyLen |= keyInKeys
		}
		if flags&strNonASCII != 0 {
			m.keyLen |= keyNonASCII
		}
		if f.count > 0 && !f.unsorted {
			c.cmps++
			if prev := &f.last; prev.prefix >= m.prefix {
				if prev.prefix > m.prefix {
					f.unsorted = true
				} else if d := c.compareNames(prev, &m); d >= 0 {
					if d == 0 {
						c.failClass(i, ErrDuplicateName)
						return false
					}
					f.unsorted = true
				}
				if f.unsorted && !f.recording {
					c.record(f, out)
				}
			}
		}
		if f.recording {
			if len(c.members) == cap(c.members) {
				c.members = grow(c.members, 1, &c.grown)
			}
			c.members = append(c.members, m)
		}
		f.last = m
		f.count++

		if i = next; i < len(src) && src[i] <= ' ' {
			out, i = c.skipSpace(out, i)
		}
		if !c.expect(i, ':', "after object member name") {
			return false
		}
		if i++; i < len(src) && src[i] <= ' ' {
			out, i = c.skipSpace(out, i)
		}
	}
	goto value
}

// expect reports whether src[i] is b, and records the failure if it is not,
// what describing where the parser was.
func (c *canon) expect(i int, b byte, what string) bool {
	switch {
	case i >= len(c.src):
		c.failEOF(i)
		return false
	case c.src[i] != b:
		c.failByte(i, c.src[i], what)
		return false
	}
	return true
}

// finish checks that only whitespace follows the top-level value, which
// ends at src[i], and sets c.text.
func (c *canon) finish(out []byte, i int) bool {
	if j := skipWS(c.src, i); j < len(c.src) {
		c.failByte(j, c.src[j], "after top-level value")
		return false
	}
	if len(out) == 0 && len(c.objs) == 0 {
		// Nothing had to change: the text is the input, less whitespace
		// around it.
		c.text = c.src[c.run:i]
		return true
	}
	out = c.flush(out, i)
	c.arena, c.text = out, out
	return true
}

// skipWS returns the index of the first byte at or after i that is not JSON
// whitespace.
func skipWS(src []byte, i int) int {
	for i < len(src) && src[i] <= ' ' {
		switch src[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// literal checks the literal word (true, false or null) whose first byte
// is at src[i], and returns the index just past it, or -1 on failure.
func (c *canon) literal(i int, word string) int {
	src := c.src
	if len(src)-i >= len(word) && string(src[i:i+len(word)]) == word {
		return i + len(word)
	}
	for j := 1; j < len(word); j++ {
		if i+j >= len(src) {
			return c.failEOF(len(src))
		}
		if src[i+j] != word[j] {
			return c.failByte(i+j, src[i+j], "in literal "+word)
		}
	}
	return c.failEOF(len(src)) // not reached: the word is there
}

// record makes f record its members in c.members: it recovers the records
// of the members before f.last from their canonical text, which is in
// input order and, as f has not been recording, holds scalar values only;
// then it appends f.last. The text is scanned once, so no byte is scanned
// this way more than once however objects nest.
func (c *canon) record(f *frame, out []byte) {
	f.recording = true
	c.members = grow(c.members, f.count, &c.grown)
	from, to := f.start+1, f.last.start // arena offsets
	if from < to {
		// t[a-base] is the text at arena offset a, in src if none of it
		// has been copied to the arena yet, in c.scratch otherwise.
		t, base := c.src, len(out)-c.run
		inSrc := from >= len(out)
		if !inSrc {
			c.scratch = append(grow(c.scratch[:0], to-from, &c.grown), out[from:min(to, len(out))]...)
			if to > len(out) {
				c.scratch = append(c.scratch, c.src[c.run:c.run+to-len(out)]...)
			}
			t, base = c.scratch, from
		}
		for a := from; a < to; {
			// A member: a quoted name, a colon, a scalar, a comma.
			m := member{start: a}
			j, flags := a+1-base, uint8(0)
			for ; t[j] != '"'; j++ {
				switch {
				case t[j] == '\\':
					flags |= strBackslash
					j++
				case t[j] >= utf8.RuneSelf:
					flags |= strNonASCII
				}
			}
			name := t[a+1-base : j]
			if inSrc && flags&strBackslash == 0 {
				m.keyOff, m.keyLen = a+1-base, len(name)
				m.prefix = prefixOf(t[m.keyOff:], m.keyLen)
			} else {
				m.keyOff = len(c.keys)
				c.keys = appendUnescaped(grow(c.keys, len(name)+8, &c.grown), name)
				m.keyLen = len(c.keys) - m.keyOff
				m.prefix = prefixOf(c.keys[m.keyOff:], m.keyLen)
				m.keyLen |= keyInKeys
			}
			if flags&strNonASCII != 0 {
				m.keyLen |= keyNonASCII
			}
			c.members = append(c.members, m)
			j += 2 // the quote and the colon
			if t[j] == '"' {
				j = skipString(t, j)
			}
			for t[j] != ',' {
				j++
			}
			a = j + 1 + base
		}
	}
	c.members = append(c.members, f.last)
}

// closeObject finishes the object f, whose closing brace is at src[i].
// Members that arrived in order need no further work. Otherwise they are
// sorted and checked for duplicates; then the object is written to the
// arena in sorted order if nothing inside it is recorded for emit and the
// objects reordered inside it (f.moved) are at most half its size in all,
// and recorded for emit otherwise. By induction, the objects reordered inside
// any value are then at most 1.5 times its size in all, and as reordering
// copies each byte of an object at most twice, reordering as a whole is
// linear.
func (c *canon) closeObject(f *frame, out []byte, i int) ([]byte, bool) {
	ms := c.members[f.memBase:]
	if f.unsorted {
		ks, dup := c.sortMembers(ms)
		if dup >= 0 {
			c.failClass(nameOffset(c.src, f.srcStart, dup), ErrDuplicateName)
			return out, false
		}
		end := c.pos(out, i+1)
		size := end - f.start
		if !f.deferred && f.moved <= size/2 {
			out = c.reorder(out, f.start, end, i+1, ms, ks)
			f.moved += size
		} else {
			c.objs = grow(c.objs, 1, &c.grown)
			c.objs = append(c.objs, objRec{start: f.start, end: end, spans: len(c.spans), n: len(ks)})
			c.spans = grow(c.spans, len(ks), &c.grown)
			for _, k := range ks {
				c.spans = append(c.spans, span{ms[k.member].start, memberEnd(ms, k.member, end)})
			}
			f.deferred = true
		}
	}
	c.members = c.members[:f.memBase]
	c.keys = c.keys[:f.keysBase]
	return out, true
}

// memberEnd returns the arena offset just past the value of ms[j], the
// members of the object that ends at arena offset end: the comma before
// the next member, or the closing brace.
func memberEnd(ms []member, j, end int) int {
	if j+1 < len(ms) {
		return ms[j+1].start - 1
	}
	return end - 1
}

// reorder writes the object at arena offsets [start, end), whose text ends
// at src[srcEnd-1], to the arena with its members ms in the order ks, and
// returns the arena. The part of the object already in the arena is moved
// aside to c.scratch first; the pending part is copied straight from src.
func (c *canon) reorder(out []byte, start, end, srcEnd int, ms []member, ks []sortKey) []byte {
	if len(out) < start {
		out = c.flush(out, c.run+start-len(out))
	}
	// The object's text is now out[start:] followed by src[c.run:srcEnd].
	mid := len(out)
	c.scratch = append(grow(c.scratch[:0], mid-start, &c.grown), out[start:mid]...)
	c.moves += 2*(mid-start) + (end - mid)
	base := c.run - mid // src[a+base] is the byte at arena offset a >= mid
	src := c.src[:len(c.src):len(c.src)]
	out = grow(out[:start], end-start+arenaSlack, &c.grown)
	out = append(out, '{')
	for j, k := range ks {
		if j > 0 {
			out = append(out, ',')
		}
		from, to := ms[k.member].start, memberEnd(ms, k.member, end)
		if from < mid {
			out = appendPiece(out, c.scratch[from-start:min(to, mid)-start])
			from = mid
		}
		if from < to {
			out = appendPiece(out, src[from+base:to+base])
		}
	}
	c.run = srcEnd
	return append(out, '}')
}

// appendPiece appends p to out, which has at least arenaSlack bytes to spare
// after it. Pieces of at most 16 bytes whose slice has the capacity are
// copied as two words, the bytes past them landing in the slack.
func appendPiece(out, p []byte) []byte {
	if n := len(out); len(p) <= 16 && cap(p) >= 16 {
		w := out[n : n+16]
		binary.LittleEndian.PutUint64(w, binary.LittleEndian.Uint64(p[:8]))
		binary.LittleEndian.PutUint64(w[8:], binary.LittleEndian.Uint64(p[8:16]))
		return out[:n+len(p)]
	}
	return append(out, p...)
}

// sortMembers returns the members ms ordered by name, as keys indexing ms,
// and -1; or, if some names are equal, nil and the index in ms of the
// second occurrence, in input order, of the smallest name that occurs more
// than once.
//
// When the prefixes of the names differ pairwise, they alone decide the
// order, so the order found is kept in c.shapes for the next object with the
// same prefixes in the same order: the next record of an array of records
// costs one prefix comparison per member. Other small objects are sorted by
// insertion, which notices equal names on the way; larger ones by pdqsort,
// in O(m log m) comparisons.
func (c *canon) sortMembers(ms []member) ([]sortKey, int) {
	set := -1
	if len(ms) <= maxShape {
		h := (ms[0].prefix*0x9e3779b97f4a7c15 + ms[len(ms)-1].prefix + uint64(len(ms))) * 0xbf58476d1ce4e5b9
		set = int(h >> 61)
		for way := range 2 {
			sh := &c.shapes[set][way]
			if len(sh.prefixes) != len(ms) {
				continue
			}
			j := 0
			for j < len(ms) && ms[j].prefix == sh.prefixes[j] {
				j++
			}
			c.cmps += j
			if j == len(ms) {
				c.shapeLRU[set] = uint8(1 - way)
				return sh.order, -1
			}
		}
	}

	ks := grow(c.order[:0], len(ms), &c.grown)[:len(ms)]
	c.order = ks
	for j := range ms {
		ks[j] = sortKey{ms[j].prefix, j}
	}
	equal := true // whether ks may hold equal names
	if len(ks) > 16 {
		slices.SortFunc(ks, func(a, b sortKey) int { return c.compare(ms, a, b) })
	} else {
		// Two names that end up next to each other were compared when the
		// later of them was inserted, so equal names are always noticed.
		equal = false
		for i := 1; i < len(ks); i++ {
			k := ks[i]
			j := i
			for ; j > 0; j-- {
				if k.prefix != ks[j-1].prefix {
					c.cmps++
					if k.prefix > ks[j-1].prefix {
						break
					}
				} else if d := c.compare(ms, k, ks[j-1]); d >= 0 {
					equal = equal || d == 0
					break
				}
				ks[j] = ks[j-1]
			}
			ks[j] = k
		}
	}
	if !equal {
		if set >= 0 {
			c.remember(set, ms, ks)
		}
		return ks, -1
	}
	for j := 1; j < len(ks); j++ {
		if ks[j-1].prefix != ks[j].prefix || c.compare(ms, ks[j-1], ks[j]) != 0 {
			continue
		}
		// ks[j-1:j+1] starts a run of equal names, in no particular order:
		// find the two that come first in the input, which are the two
		// smallest indices.
		first, second := min(ks[j-1].member, ks[j].member), max(ks[j-1].member, ks[j].member)
		for j++; j < len(ks) && ks[j].prefix == ks[j-1].prefix && c.compare(ms, ks[j-1], ks[j]) == 0; j++ {
			m := ks[j].member
			first, second = min(first, m), max(min(second, m), first)
		}
		return nil, second
	}
	return ks, -1 // not reached: equal names were seen
}

// remember stores the order ks of the members ms in the cache set, if their
// prefixes differ pairwise.
func (c *canon) remember(set int, ms []member, ks []sortKey) {
	for j := 1; j < len(ks); j++ {
		if ks[j-1].prefix == ks[j].prefix {
			return
		}
	}
	way := c.shapeLRU[set]
	c.shapeLRU[set] = 1 - way
	sh := &c.shapes[set][way]
	sh.prefixes = sh.prefixes[:0]
	for j := range ms {
		sh.prefixes = append(sh.prefixes, ms[j].prefix)
	}
	sh.order = append(sh.order[:0], ks...)
}

// nameOffset returns the offset in src of the name of member n, counting
// from 0, of the object whose '{' is at src[open]. The object must have
// been parsed successfully up to that member. Only error reports need it,
// so member records do not carry it.
func nameOffset(src []byte, open, n int) int {
	i := open + 1
	for k := 0; ; k++ {
		i = skipWS(src, i)
		if k == n || i >= len(src) {
			return i
		}
		i = skipWS(src, skipString(src, i)) + 1 // the name and the colon
		i = skipWS(src, skipValue(src, skipWS(src, i))) + 1
	}
}

// skipString returns the index just past the valid string at src[i].
func skipString(src []byte, i int) int {
	for i++; i < len(src) && src[i] != '"'; i++ {
		if src[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// skipValue returns the index just past the valid value at src[i].
func skipValue(src []byte, i int) int {
	if i >= len(src) {
		return i
	}
	switch src[i] {
	case '"':
		return skipString(src, i)
	case '{', '[':
		depth := 0
		for i < len(src) {
			switch src[i] {
			case '"':
				i = skipString(src, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(src) && src[i] != ',' && src[i] != '}' && src[i] != ']' && src[i] > ' ' {
		i++
	}
	return i
}

// key returns the decoded name of m.
func (c *canon) key(m *member) []byte {
	n := m.keyLen & keyLenMask
	if m.keyLen&keyInKeys != 0 {
		return c.keys[m.keyOff : m.keyOff+n]
	}
	return c.src[m.keyOff : m.keyOff+n]
}

// compare orders the names of the members ms[a.member] and ms[b.member] as
// RFC 8785 §3.2.3 requires.
func (c *canon) compare(ms []member, a, b sortKey) int {
	c.cmps++
	switch {
	case a.prefix < b.prefix:
		return -1
	case a.prefix > b.prefix:
		return +1
	}
	return c.compareNames(&ms[a.member], &ms[b.member])
}

// compareNames compares the full names of a and b.
func (c *canon) compareNames(a, b *member) int {
	if (a.keyLen|b.keyLen)&keyNonASCII == 0 {
		return bytes.Compare(c.key(a), c.key(b))
	}
	return compareUTF16(c.key(a), c.key(b))
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

// prefixOf returns the orderKey of the first 8 bytes of the name buf[:n]
// as a big-endian integer, padded with zero bytes. Names whose prefixes
// differ compare as their prefixes do. buf may extend past the name; when
// it holds at least 8 bytes they are read at once and the ones past the
// name ignored.
func prefixOf(buf []byte, n int) uint64 {
	var p uint64
	if len(buf) >= 8 {
		p = binary.BigEndian.Uint64(buf)
		if n < 8 {
			p &^= 1<<(64-8*n) - 1 // 1<<64 is 0 in Go: n == 0 clears all
		}
	} else {
		var b [8]byte
		copy(b[:], buf[:n])
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
