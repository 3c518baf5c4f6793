package fingerprint

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// referenceCompareUTF16 is the definition of RFC 8785 §3.2.3: encode both
// names as UTF-16 and compare the code units.
func referenceCompareUTF16(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

// orderAlphabet holds characters on both sides of every boundary where UTF-8
// and UTF-16 orders could disagree.
var orderAlphabet = []rune{
	0, 'a', 'b', 0x7f, 0xe9, 0x101, 0x7ff, 0x800, 0xd7ff, 0xe000, 0xfb33,
	0xfffd, 0xffff, 0x10000, 0x1f600, 0x1f601, 0x10ffff,
}

func randomName(r *rand.Rand, alphabet []rune, maxLen int) string {
	var sb strings.Builder
	for n := r.IntN(maxLen + 1); n > 0; n-- {
		sb.WriteRune(alphabet[r.IntN(len(alphabet))])
	}
	return sb.String()
}

func TestCompareUTF16MatchesUTF16Encoding(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		a, b := randomName(r, orderAlphabet, 4), randomName(r, orderAlphabet, 4)
		if r.IntN(4) == 0 {
			b = a + b // shared prefixes are the interesting case
		}
		want := referenceCompareUTF16(a, b)
		if got := compareUTF16([]byte(a), []byte(b)); got != want {
			t.Fatalf("compareUTF16(%+q, %+q) = %d, want %d", a, b, got, want)
		}
	}
}

// Comparing by orderKey must agree with UTF-16 order for single characters
// on both sides of every boundary, and for their prefixes.
func TestNamePrefixOrdersLikeUTF16(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 100_000 {
		a, b := randomName(r, orderAlphabet, 3), randomName(r, orderAlphabet, 3)
		want := referenceCompareUTF16(a, b)
		pa, pb := prefixOf([]byte(a), len(a)), prefixOf([]byte(b), len(b))
		if pa != pb && (pa < pb) != (want < 0) {
			t.Fatalf("prefixOf orders %+q and %+q wrongly", a, b)
		}
		if len(a) <= 8 && len(b) <= 8 && !strings.ContainsRune(a+b, 0) && (pa == pb) != (want == 0) {
			t.Fatalf("prefixOf(%+q) == prefixOf(%+q) is %v", a, b, pa == pb)
		}
	}
}

func TestMemberCompareMatchesUTF16Encoding(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	c := new(canon)
	for range 100_000 {
		a, b := randomName(r, orderAlphabet, 12), randomName(r, orderAlphabet, 12)
		if r.IntN(3) == 0 {
			b = a + b
		}
		c.src = append(append(c.src[:0], a...), b...)
		c.members = append(c.members[:0], member{keyOff: 0, keyLen: len(a)}, member{keyOff: len(a), keyLen: len(b)})
		if !isASCII(a) {
			c.members[0].keyLen |= keyNonASCII
		}
		if !isASCII(b) {
			c.members[1].keyLen |= keyNonASCII
		}
		ka := sortKey{prefix: prefixOf([]byte(a), len(a)), member: 0}
		kb := sortKey{prefix: prefixOf([]byte(b), len(b)), member: 1}
		if got, want := c.compare(c.members, ka, kb), referenceCompareUTF16(a, b); got != want {
			t.Fatalf("compare(%+q, %+q) = %d, want %d", a, b, got, want)
		}
	}
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// sortedObject returns an object with n members named k0000000, k0000001, ...
// in ascending or descending order.
func sortedObject(n int, descending bool) []byte {
	var sb strings.Builder
	sb.WriteByte('{')
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		j := i
		if descending {
			j = n - 1 - i
		}
		fmt.Fprintf(&sb, `"k%07d":%d`, j, j)
	}
	sb.WriteByte('}')
	return []byte(sb.String())
}

// shuffledObject returns an object with n members in a random order.
func shuffledObject(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	perm := r.Perm(n)
	var sb strings.Builder
	sb.WriteByte('{')
	for i, j := range perm {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"k%07d":%d`, j, j)
	}
	sb.WriteByte('}')
	return []byte(sb.String())
}

func parseCounting(t *testing.T, src []byte) *canon {
	t.Helper()
	c := new(canon)
	if !c.parse(src) {
		t.Fatal(c.failure.err())
	}
	return c
}

// Members that arrive in order are checked with one comparison each and
// never sorted or reordered.
func TestSortedMembersCostOneComparisonEach(t *testing.T) {
	const n = 100_000
	src := sortedObject(n, false)
	c := parseCounting(t, src)
	if got := c.emit(nil); string(got) != string(src) {
		t.Errorf("output differs from the already canonical input")
	}
	if c.cmps != n-1 {
		t.Errorf("%d comparisons for %d sorted members, want %d", c.cmps, n, n-1)
	}
	if len(c.objs) != 0 {
		t.Errorf("%d objects recorded for reordering, want 0", len(c.objs))
	}
}

// Members out of order are sorted once: O(n log n) comparisons, whatever
// the order they arrive in.
func TestUnsortedMembersCostNLogNComparisons(t *testing.T) {
	const n = 100_000
	limit := 3 * n * bits.Len(n) // 3 n log2 n
	want := string(sortedObject(n, false))
	for name, src := range map[string][]byte{
		"descending": sortedObject(n, true),
		"shuffled":   shuffledObject(n, 7),
	} {
		c := parseCounting(t, src)
		if got := c.emit(nil); string(got) != want {
			t.Errorf("%s: output is not the sorted object", name)
		}
		if c.cmps > limit {
			t.Errorf("%s: %d comparisons for %d members, want at most %d", name, c.cmps, n, limit)
		}
		if limit := 3 * len(c.text); c.moves > limit {
			t.Errorf("%s: %d bytes moved reordering %d bytes, want at most %d", name, c.moves, len(c.text), limit)
		}
	}
}

// Many small objects cost comparisons in proportion to their members.
func TestManySmallObjectsCostLinearComparisons(t *testing.T) {
	const n = 20_000
	src := "[" + strings.Repeat(`{"c":1,"b":2,"a":3},`, n-1) + `{"c":1,"b":2,"a":3}]`
	c := parseCounting(t, []byte(src))
	if c.cmps > 10*n {
		t.Errorf("%d comparisons for %d objects of 3 members", c.cmps, n)
	}
}

// nestedLevels returns depth nested objects built from the level template,
// whose "%s" is replaced by the next level, and the innermost value.
func nestedLevels(depth int, level, innermost string) string {
	open, close, _ := strings.Cut(level, "%s")
	return strings.Repeat(open, depth) + innermost + strings.Repeat(close, depth)
}

// Reordering nested objects moves each byte a bounded number of times, so
// it is linear however deep the out-of-order objects nest.
func TestReorderingMovesEachByteBoundedTimes(t *testing.T) {
	big := strings.Repeat("x", 300)
	for _, c := range []struct{ level, innermost, want string }{
		{`{"z":"` + big + `","a":%s}`, "0", `{"a":%s,"z":"` + big + `"}`},
		{`{"b":%s,"a":"` + big + `"}`, "0", `{"a":"` + big + `","b":%s}`},
		{`{"b":%s,"a":1}`, "0", `{"a":1,"b":%s}`},
		{`[{"b":%s,"a":[1,2,3]},{"d":0,"c":1}]`, "{}", `[{"a":[1,2,3],"b":%s},{"c":1,"d":0}]`},
		{`{"c":{"y":1,"x":2},"b":%s,"a":{"q":[{"n":1,"m":2}],"p":0}}`, "null", `{"a":{"p":0,"q":[{"m":2,"n":1}]},"b":%s,"c":{"x":2,"y":1}}`},
	} {
		depth := (MaxDepth - 1) / strings.Count(c.level, "{")
		src := nestedLevels(depth, c.level, c.innermost)
		want := nestedLevels(depth, c.want, c.innermost)
		p := parseCounting(t, []byte(src))
		if limit := 3 * len(p.text); p.moves > limit {
			t.Errorf("%.20s: %d bytes moved reordering %d bytes, want at most %d", c.level, p.moves, len(p.text), limit)
		}
		if got := string(p.emit(nil)); got != want {
			t.Errorf("%.20s: wrong output\n got %.200s\nwant %.200s", c.level, got, want)
		}
	}
}

func TestAppendCanonicalDoesNotAllocatePerMember(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	for name, src := range map[string][]byte{
		"sorted":          sortedObject(10_000, false),
		"shuffled":        shuffledObject(10_000, 3),
		"nested":          []byte(strings.Repeat(`{"b":[1,"x",{"d":0,"c":1}],"a":`, 500) + "0" + strings.Repeat("}", 500)),
		"sorted-100000":   sortedObject(100_000, false),
		"reversed-100000": sortedObject(100_000, true),
	} {
		dst := make([]byte, 0, 2*len(src))
		allocs := testing.AllocsPerRun(20, func() {
			if _, err := AppendCanonical(dst[:0], src); err != nil {
				t.Fatal(err)
			}
		})
		// The pool may have been emptied by a garbage collection; a few
		// allocations refill it, never one per member.
		if allocs > 1 {
			t.Errorf("%s: %.1f allocations per AppendCanonical, want at most 1", name, allocs)
		}
		allocs = testing.AllocsPerRun(20, func() {
			if _, err := JSON(src); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 1 {
			t.Errorf("%s: %.1f allocations per JSON, want at most 1", name, allocs)
		}
	}
}

// workloads returns objects of n members in the orders and spellings that
// take different paths: in order (nothing to record, copy or sort), in
// reverse, shuffled, spaced (every member copied out around whitespace) and
// as an array of small records with escapes, nested values and a number to
// rewrite.
func workloads(n int) map[string][]byte {
	spaced := strings.ReplaceAll(string(sortedObject(n, true)), ",", " ,\n ")
	records := "[" + strings.Repeat(`{"b":1e0,"a":{"d":[1,2],"c":"x\u00e9"}},`, n/4) + `{}]`
	return map[string][]byte{
		"sorted":   sortedObject(n, false),
		"reversed": sortedObject(n, true),
		"shuffled": shuffledObject(n, 5),
		"spaced":   []byte(spaced),
		"records":  []byte(records),
	}
}

// The work per member does not grow with the number of members: memory is
// at most a constant number of bytes per input byte, and none at all for
// members that arrive in order; a second canonicalisation of the same size
// allocates nothing, also after the canon has passed through the pool's
// trimming; bytes moved per byte and comparisons per member are bounded
// (log n comparisons for a shuffled object). The counts are exact, so the
// test is deterministic.
func TestWorkPerMemberIsBounded(t *testing.T) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		for name, src := range workloads(n) {
			c := new(canon)
			if !c.parse(src) {
				t.Fatalf("%s-%d: %v", name, n, c.failure.err())
			}
			if limit := 12*len(src) + 64<<10; c.grown > limit {
				t.Errorf("%s-%d: %d bytes allocated for %d input bytes, want at most %d", name, n, c.grown, len(src), limit)
			}
			if name == "sorted" && c.grown > 4<<10 {
				t.Errorf("%s-%d: %d bytes allocated for members in order, want at most 4 KiB", name, n, c.grown)
			}
			if limit := 2 * len(c.text); c.moves > limit {
				t.Errorf("%s-%d: %d bytes moved reordering %d bytes, want at most %d", name, n, c.moves, len(c.text), limit)
			}
			limit := 3 * n * bits.Len(uint(n))
			if name != "shuffled" {
				limit = 2 * n
			}
			if c.cmps > limit {
				t.Errorf("%s-%d: %d comparisons, want at most %d", name, n, c.cmps, limit)
			}
			c.release()
			if !c.parse(src) || c.grown != 0 {
				t.Errorf("%s-%d: %d bytes allocated canonicalising the same input again, want 0", name, n, c.grown)
			}
		}
	}
}

// Reordered objects nested in reordered members are emitted correctly
// however they interleave with objects that are already in order.
func TestEmitNestedReorderedObjects(t *testing.T) {
	src := `{"z":{"b":{"y":1,"x":{"n":[{"q":1,"p":2},{"a":1}],"m":0}},"a":[{"d":{},"c":{"f":1,"e":2}}]},"y":{"a":1,"b":{"d":2,"c":1}},"x":[]}`
	want := `{"x":[],"y":{"a":1,"b":{"c":1,"d":2}},"z":{"a":[{"c":{"e":2,"f":1},"d":{}}],"b":{"x":{"m":0,"n":[{"p":2,"q":1},{"a":1}]},"y":1}}}`
	got, err := Canonical([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("Canonical:\n got %s\nwant %s", got, want)
	}
}

// The pool keeps buffers in proportion to the inputs recently served: a
// large buffer survives small inputs in between large ones, is released
// after a run of small inputs, and is never kept beyond maxPooledBytes.
func TestPoolKeepsBuffersInProportionToRecentInputs(t *testing.T) {
	small, large := make([]byte, 100), make([]byte, 1<<20)
	c := new(canon)
	c.src = large
	c.arena = make([]byte, 0, 8<<20)
	c.members = make([]member, 0, 100)
	c.release()
	if cap(c.arena) != 8<<20 || cap(c.members) != 100 {
		t.Fatal("buffers of a large input were not kept")
	}
	c.src = small
	c.release()
	if cap(c.arena) != 8<<20 {
		t.Fatal("a large buffer was released after one small input")
	}
	for range 40 {
		c.src = small
		c.release()
	}
	if c.arena != nil {
		t.Error("a large buffer was kept after 40 small inputs")
	}
	if cap(c.members) != 100 {
		t.Error("a small buffer was released")
	}
	c.src = make([]byte, maxPooledBytes)
	c.arena = make([]byte, 0, maxPooledBytes+1)
	c.release()
	if c.arena != nil {
		t.Error("a buffer beyond maxPooledBytes was kept")
	}
}

// The eight-byte test agrees with the table of plain bytes for every byte
// value in every lane, and on random words: the mask is zero exactly when all
// bytes are plain, and its lowest set bit marks the first byte that is not.
func TestSpecialBytesMatchesPlainTable(t *testing.T) {
	check := func(w [8]byte) {
		first := -1
		for i, b := range w {
			if !plain[b] {
				first = i
				break
			}
		}
		x := uint64(0)
		for i := 7; i >= 0; i-- {
			x = x<<8 | uint64(w[i])
		}
		m := specialBytes(x)
		switch {
		case first < 0 && m != 0:
			t.Fatalf("specialBytes(%q) = %#x, want 0", w[:], m)
		case first >= 0 && (m == 0 || bits.TrailingZeros64(m)>>3 != first):
			t.Fatalf("specialBytes(%q) = %#x, want lowest lane %d", w[:], m, first)
		}
	}
	for b := range 256 {
		for lane := range 8 {
			w := [8]byte{'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a'}
			w[lane] = byte(b)
			check(w)
			w = [8]byte{0x7f, ' ', '!', '#', '[', ']', '~', 0x21}
			w[lane] = byte(b)
			check(w)
		}
	}
	r := rand.New(rand.NewPCG(7, 8))
	for range 200_000 {
		var w [8]byte
		for i := range w {
			w[i] = byte(r.IntN(256))
			if r.IntN(4) != 0 {
				w[i] = byte(0x1c + r.IntN(0x70)) // mostly plain
			}
		}
		check(w)
	}
}

// utf8Size accepts exactly the sequences that utf8.DecodeRune decodes, for
// every lead byte that is not ASCII and every following pair of bytes, also
// when the input ends early.
func TestUTF8SizeMatchesDecodeRune(t *testing.T) {
	for a := 0x80; a < 0x100; a++ {
		for b := range 0x100 {
			for c := range 0x100 {
				p := []byte{byte(a), byte(b), byte(c), 0x80}
				for _, n := range []int{1, 2, 4} {
					want := 0
					if _, size := utf8.DecodeRune(p[:n]); size > 1 {
						want = size
					}
					if got := utf8Size(p[:n]); got != want {
						t.Fatalf("utf8Size(% x) = %d, want %d", p[:n], got, want)
					}
				}
			}
		}
	}
}
