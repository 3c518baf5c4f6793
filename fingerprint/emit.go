package fingerprint

import (
	"cmp"
	"hash"
	"slices"
)

// emitFrame is a reordered object that emit is in the middle of writing.
type emitFrame struct {
	obj    int // index in canon.objs
	member int // index, in sorted order, of the member being written
	// Where to carry on once the object is complete: the rest of the
	// enclosing range and the first reordered object in it.
	pos, end, next int
}

// Hashing streams the canonical text through a buffer of hashChunk bytes;
// pieces of at least directHash bytes go straight from the text to the
// hash, which costs less than copying them.
const (
	hashChunk  = 16 << 10
	directHash = 512
)

// sink receives the canonical text from emit: it appends everything to buf
// when h is nil, and otherwise passes it to h, buffering small pieces in buf.
type sink struct {
	buf []byte
	h   hash.Hash
}

func (s *sink) write(p []byte) {
	if s.h != nil {
		if len(p) >= directHash {
			s.flush()
			s.h.Write(p)
			return
		}
		if len(s.buf)+len(p) > cap(s.buf) {
			s.flush()
		}
	}
	s.buf = append(s.buf, p...)
}

func (s *sink) writeByte(b byte) {
	if s.h != nil && len(s.buf) == cap(s.buf) {
		s.flush()
	}
	s.buf = append(s.buf, b)
}

func (s *sink) flush() {
	s.h.Write(s.buf)
	s.buf = s.buf[:0]
}

// emit appends the canonical text to dst and returns the extended slice:
// c.text with the members of every object in c.objs put in sorted order.
func (c *canon) emit(dst []byte) []byte {
	dst = slices.Grow(dst, len(c.text))
	if len(c.objs) == 0 {
		return append(dst, c.text...)
	}
	s := sink{buf: dst}
	c.walk(&s)
	return s.buf
}

// hashCanonical writes the canonical text of the last successful parse to
// h. Its length is len(c.text): reordering members does not change it. The
// text is hashed where it lies, in the order emit would copy it, with short
// pieces gathered in a buffer of hashChunk bytes, so hashing needs no
// reordered copy of the whole text.
func (c *canon) hashCanonical(h hash.Hash) {
	if len(c.objs) == 0 {
		h.Write(c.text)
		return
	}
	s := sink{buf: grow(c.scratch[:0], hashChunk, &c.grown)[:0], h: h}
	c.walk(&s)
	s.flush()
	c.scratch = s.buf
}

// walk writes c.text to s with the members of every object in c.objs in
// sorted order.
//
// Every byte of the text is written exactly once. Reordered objects are
// visited in order of their position, so the ones nested in a member are
// found by binary search; the total work is O(len(text) + r log r) for r
// reordered objects and members.
func (c *canon) walk(s *sink) {
	a := c.text
	// Objects were recorded as they closed, inner ones first; sorting by
	// start offset puts every object before the objects nested in it.
	objs := c.objs
	slices.SortFunc(objs, func(x, y objRec) int { return cmp.Compare(x.start, y.start) })
	// firstAt returns the index of the first object at or after lo that
	// starts at or after offset off.
	firstAt := func(lo, off int) int {
		hi := len(objs)
		for lo < hi {
			h := int(uint(lo+hi) >> 1)
			if objs[h].start < off {
				lo = h + 1
			} else {
				hi = h
			}
		}
		return lo
	}

	stack := c.emitStack[:0]
	// The range being copied is a[pos:end]; objs[next] is the first
	// reordered object that may start inside it.
	pos, end, next := 0, len(a), 0
	for {
		if next < len(objs) && objs[next].start < end {
			o := &objs[next]
			s.write(a[pos:o.start])
			s.writeByte('{')
			if len(stack) == cap(stack) {
				stack = grow(stack, 1, &c.grown)
			}
			stack = append(stack, emitFrame{obj: next, pos: o.end, end: end, next: firstAt(next+1, o.end)})
			sp := c.spans[o.spans]
			pos, end, next = sp.start, sp.end, firstAt(next+1, sp.start)
			continue
		}
		s.write(a[pos:end])
		if len(stack) == 0 {
			break
		}
		f := &stack[len(stack)-1]
		o := &objs[f.obj]
		if f.member++; f.member < o.n {
			s.writeByte(',')
			sp := c.spans[o.spans+f.member]
			pos, end, next = sp.start, sp.end, firstAt(f.obj+1, sp.start)
			continue
		}
		s.writeByte('}')
		pos, end, next = f.pos, f.end, f.next
		stack = stack[:len(stack)-1]
	}
	c.emitStack = stack
}
