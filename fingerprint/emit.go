package fingerprint

import (
	"cmp"
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

// emit appends the canonical text to dst: c.arena with the members of every
// object in c.objs put in sorted order.
//
// Every byte of the arena is copied exactly once. Reordered objects are
// visited in order of their position, so the ones nested in a member are
// found by binary search; the total work is O(len(arena) + r log r) for r
// reordered objects and members.
func (c *canon) emit(dst []byte) []byte {
	a := c.arena
	dst = slices.Grow(dst, len(a))
	if len(c.objs) == 0 {
		return append(dst, a...)
	}
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
			dst = append(dst, a[pos:o.start]...)
			dst = append(dst, '{')
			stack = append(stack, emitFrame{obj: next, pos: o.end, end: end, next: firstAt(next+1, o.end)})
			s := c.spans[o.spans]
			pos, end, next = s.start, s.end, firstAt(next+1, s.start)
			continue
		}
		dst = append(dst, a[pos:end]...)
		if len(stack) == 0 {
			break
		}
		f := &stack[len(stack)-1]
		o := &objs[f.obj]
		if f.member++; f.member < o.n {
			dst = append(dst, ',')
			s := c.spans[o.spans+f.member]
			pos, end, next = s.start, s.end, firstAt(f.obj+1, s.start)
			continue
		}
		dst = append(dst, '}')
		pos, end, next = f.pos, f.end, f.next
		stack = stack[:len(stack)-1]
	}
	c.emitStack = stack
	return dst
}
