package fingerprint

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// Flags reported by canon.str about the string it parsed.
const (
	strNonASCII  uint8 = 1 << iota // some character is outside ASCII
	strBackslash                   // the string has an escape sequence
)

// plain[b] reports whether the byte b stands for itself both inside a JSON
// string and in its canonical form: printable ASCII other than '"' and '\\'.
var plain = func() (t [256]bool) {
	for b := 0x20; b < 0x80; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// specialBytes returns a mask with the high bit set in the lanes of the
// eight bytes packed in x (little-endian) that are not plain: control
// characters, '"', '\\' and bytes of non-ASCII characters.
//
// Subtracting 0x20 from each lane sets the high bit of the lanes below
// 0x20, and subtracting 1 from x^'"' (x^'\\') that of the lanes holding '"'
// ('\\'); it also sets it in lanes at or above 0x80, and in lanes above one
// that borrowed, but those are flagged anyway (by x itself) or lie above a
// lane that really is special. So the mask is zero exactly when all eight
// bytes are plain, and its lowest set bit always marks the first byte that
// is not.
func specialBytes(x uint64) uint64 {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	control := x - ones*0x20
	quote := (x ^ ones*'"') - ones
	backslash := (x ^ ones*'\\') - ones
	return (control | quote | backslash | x) & highs
}

// plainRun returns the index of the first byte at or after j that is not
// plain, scanning eight bytes at a time; it stops early, at a plain byte,
// when fewer than eight bytes are left. It is small enough to be inlined.
func plainRun(src []byte, j int) int {
	for ; j+8 <= len(src); j += 8 {
		if x := specialBytes(binary.LittleEndian.Uint64(src[j : j+8])); x != 0 {
			return j + bits.TrailingZeros64(x)>>3
		}
	}
	return j
}

// hexVal[b] is the value of the hexadecimal digit b, or -1.
var hexVal = func() (t [256]int8) {
	for i := range t {
		t[i] = -1
	}
	for b := '0'; b <= '9'; b++ {
		t[b] = int8(b - '0')
	}
	for b := 'a'; b <= 'f'; b++ {
		t[b] = int8(b - 'a' + 10)
		t[b-'a'+'A'] = int8(b - 'a' + 10)
	}
	return t
}()

// str checks the string whose opening quote is at src[i] and returns the
// index just past its closing quote, or -1 on failure.
//
// A string is its own canonical form (RFC 8785 §3.2.2.2) except for its \/
// and \u escapes, which are decoded and written to out in canonical form.
// The rest stays pending: plain ASCII, well-formed UTF-8 and the escapes
// that are their own canonical form (\" \\ \b \f \n \r \t).
func (c *canon) str(out []byte, i int) ([]byte, int, uint8) {
	src := c.src
	var flags uint8
	i++
	for {
		// Skip plain bytes eight at a time, and one at a time at the end.
		for {
			if len(src)-i < 8 {
				for i < len(src) && plain[src[i]] {
					i++
				}
				break
			}
			if m := specialBytes(binary.LittleEndian.Uint64(src[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(src) {
			return out, c.failEOF(len(src)), 0
		}
		switch b := src[i]; {
		case b == '"':
			return out, i + 1, flags
		case b == '\\':
			if i+1 >= len(src) {
				return out, c.failEOF(len(src)), 0
			}
			flags |= strBackslash
			switch e := src[i+1]; e {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				i += 2
			case '/':
				out = append(c.flush(out, i), '/')
				i += 2
				c.run = i
			case 'u':
				if out, i, flags = c.unicodeEscape(c.flush(out, i), i, flags); i < 0 {
					return out, -1, 0
				}
				c.run = i
			default:
				return out, c.failByte(i+1, e, "in string escape code"), 0
			}
		case b >= utf8.RuneSelf:
			// Well-formed UTF-8 is its own canonical form.
			size := utf8Size(src[i:])
			if size == 0 {
				return out, c.failClass(i, ErrInvalidUTF8), 0
			}
			flags |= strNonASCII
			i += size
		default:
			return out, c.failByte(i, b, "in string literal"), 0
		}
	}
}

// utf8Size returns the length of the well-formed UTF-8 sequence at the
// start of p, whose first byte is not ASCII, or 0 if it is ill-formed,
// including encoded surrogates and overlong forms.
func utf8Size(p []byte) int {
	switch b := p[0]; {
	case b >= 0xC2 && b < 0xE0:
		if len(p) >= 2 && p[1]&0xC0 == 0x80 {
			return 2
		}
		return 0
	case b >= 0xE0 && b < 0xF0 && len(p) >= 3:
		// Three bytes, the second one restricted after E0 (no overlong
		// forms) and ED (no surrogates).
		lo, hi := byte(0x80), byte(0xBF)
		if b == 0xE0 {
			lo = 0xA0
		} else if b == 0xED {
			hi = 0x9F
		}
		if p[1] >= lo && p[1] <= hi && p[2]&0xC0 == 0x80 {
			return 3
		}
		return 0
	}
	// DecodeRune reports size 1 for every ill-formed sequence.
	if _, size := utf8.DecodeRune(p); size > 1 {
		return size
	}
	return 0
}

// unicodeEscape decodes the \u escape at src[i], with the low surrogate
// escape that must follow a high one, appends the canonical form of the
// character to out and returns the index just past the escape, or -1 on
// failure.
func (c *canon) unicodeEscape(out []byte, i int, flags uint8) ([]byte, int, uint8) {
	src := c.src
	r, ok := hex4(src, i+2)
	if !ok {
		return out, c.fail(i, "invalid \\u escape in string literal"), 0
	}
	next := i + 6
	switch {
	case r >= 0xD800 && r < 0xDC00:
		// A high surrogate counts only together with a low one.
		if next+1 < len(src) && src[next] == '\\' && src[next+1] == 'u' {
			lo, ok := hex4(src, next+2)
			if !ok {
				return out, c.fail(next, "invalid \\u escape in string literal"), 0
			}
			if lo >= 0xDC00 && lo < 0xE000 {
				r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
				next += 6
				break
			}
		}
		return out, c.failClass(i, ErrLoneSurrogate), 0
	case r >= 0xDC00 && r < 0xE000:
		return out, c.failClass(i, ErrLoneSurrogate), 0
	}
	out, flags = appendCanonicalRune(out, r, flags) // within the slack of out
	return out, next, flags
}

// hex4 decodes the four hexadecimal digits at src[i:i+4].
func hex4(src []byte, i int) (rune, bool) {
	if len(src)-i < 4 {
		return 0, false
	}
	a, b, c, d := hexVal[src[i]], hexVal[src[i+1]], hexVal[src[i+2]], hexVal[src[i+3]]
	if a|b|c|d < 0 {
		return 0, false
	}
	return rune(a)<<12 | rune(b)<<8 | rune(c)<<4 | rune(d), true
}

// appendCanonicalRune appends the canonical form of the character r, given
// by an escape sequence, to out, and adds strNonASCII to flags if r is not
// ASCII. It appends at most six bytes.
func appendCanonicalRune(out []byte, r rune, flags uint8) ([]byte, uint8) {
	switch {
	case r < 0x20:
		return appendControl(out, byte(r)), flags
	case r == '"' || r == '\\':
		return append(out, '\\', byte(r)), flags
	case r < utf8.RuneSelf:
		return append(out, byte(r)), flags
	}
	return utf8.AppendRune(out, r), flags | strNonASCII
}

// appendControl appends the RFC 8785 escape for the control character b:
// the two-character form where JSON has one, \u00xx with lowercase hex
// digits otherwise.
func appendControl(out []byte, b byte) []byte {
	switch b {
	case '\b':
		return append(out, '\\', 'b')
	case '\t':
		return append(out, '\\', 't')
	case '\n':
		return append(out, '\\', 'n')
	case '\f':
		return append(out, '\\', 'f')
	case '\r':
		return append(out, '\\', 'r')
	}
	const hex = "0123456789abcdef"
	return append(out, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xf])
}

// appendUnescaped appends to dst the characters denoted by s, the text
// between the quotes of a string that str has accepted, or of a string in
// canonical form.
func appendUnescaped(dst, s []byte) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			dst = append(dst, s[i])
			continue
		}
		i++
		switch s[i] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, _ := hex4(s, i+1)
			i += 4
			if r >= 0xD800 && r < 0xDC00 {
				// str accepted it, so a low surrogate escape follows.
				lo, _ := hex4(s, i+3)
				r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
				i += 6
			}
			dst = utf8.AppendRune(dst, r)
		default: // '"', '\\' or '/'
			dst = append(dst, s[i])
		}
	}
	return dst
}
