package fingerprint

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// Flags reported by canon.str about the string it parsed.
const (
	strNonASCII uint8 = 1 << iota // some character is outside ASCII
	strEscaped                    // the canonical text contains an escape sequence
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
// characters, '"', '\\' and bytes of non-ASCII characters. It combines the
// "has a byte less than n" and "has a zero byte" tests, which can also flag
// lanes above a lane that really matches but never below it; so the mask is
// zero exactly when all eight bytes are plain, and its lowest set bit always
// marks the first byte that is not.
func specialBytes(x uint64) uint64 {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	control := (x - ones*0x20) &^ x
	q := x ^ (ones * '"')
	quote := (q - ones) &^ q
	b := x ^ (ones * '\\')
	backslash := (b - ones) &^ b
	return (control | quote | backslash | x) & highs
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

// str parses the string whose opening quote is at src[i], appends its
// canonical form (RFC 8785 §3.2.2.2) to out and returns the index just past
// the closing quote.
func (c *canon) str(out []byte, i int) ([]byte, int, uint8, error) {
	src := c.src
	var flags uint8
	run := i // start of the bytes that are copied unchanged
	i++
	for {
		// Skip plain bytes eight at a time, then one at a time.
		for len(src)-i >= 8 {
			if m := specialBytes(binary.LittleEndian.Uint64(src[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		for i < len(src) && plain[src[i]] {
			i++
		}
		if i >= len(src) {
			return out, 0, 0, errEOF(len(src))
		}
		b := src[i]
		if b >= utf8.RuneSelf {
			// Well-formed UTF-8 is copied unchanged. DecodeRune reports
			// size 1 for every ill-formed sequence, including encoded
			// surrogates and overlong forms.
			if _, size := utf8.DecodeRune(src[i:]); size > 1 {
				flags |= strNonASCII
				i += size
				continue
			}
			return out, 0, 0, classErr(i, ErrInvalidUTF8)
		}
		switch b {
		case '"':
			return append(out, src[run:i+1]...), i + 1, flags, nil
		case '\\':
			out = append(out, src[run:i]...)
			var err error
			if out, i, flags, err = c.escape(out, i, flags); err != nil {
				return out, 0, 0, err
			}
			run = i
		default:
			return out, 0, 0, unexpected(i, b, "in string literal")
		}
	}
}

// escape decodes the escape sequence at src[i] (a backslash), appends the
// canonical form of the character it stands for to out and returns the index
// just past the sequence.
func (c *canon) escape(out []byte, i int, flags uint8) ([]byte, int, uint8, error) {
	src := c.src
	if i+1 >= len(src) {
		return out, 0, 0, errEOF(len(src))
	}
	switch e := src[i+1]; e {
	case '"', '\\', 'b', 'f', 'n', 'r', 't':
		// These escapes are their own canonical form.
		return append(out, '\\', e), i + 2, flags | strEscaped, nil
	case '/':
		return append(out, '/'), i + 2, flags, nil
	case 'u':
		r, ok := hex4(src, i+2)
		if !ok {
			return out, 0, 0, syntaxErr(i, "invalid \\u escape in string literal")
		}
		next := i + 6
		switch {
		case r >= 0xD800 && r < 0xDC00:
			// A high surrogate counts only together with a low one.
			if next+1 < len(src) && src[next] == '\\' && src[next+1] == 'u' {
				lo, ok := hex4(src, next+2)
				if !ok {
					return out, 0, 0, syntaxErr(next, "invalid \\u escape in string literal")
				}
				if lo >= 0xDC00 && lo < 0xE000 {
					r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
					next += 6
					break
				}
			}
			return out, 0, 0, classErr(i, ErrLoneSurrogate)
		case r >= 0xDC00 && r < 0xE000:
			return out, 0, 0, classErr(i, ErrLoneSurrogate)
		}
		out, flags = appendCanonicalRune(out, r, flags)
		return out, next, flags, nil
	default:
		return out, 0, 0, unexpected(i+1, e, "in string escape code")
	}
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
// by an escape sequence, to out.
func appendCanonicalRune(out []byte, r rune, flags uint8) ([]byte, uint8) {
	switch {
	case r < 0x20:
		return appendControl(out, byte(r)), flags | strEscaped
	case r == '"' || r == '\\':
		return append(out, '\\', byte(r)), flags | strEscaped
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

// unescapeCanonical appends to dst the characters denoted by s, the text
// between the quotes of a string in canonical form, which contains no
// escapes other than \" \\ \b \f \n \r \t and \u00xx.
func unescapeCanonical(dst, s []byte) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
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
			dst = append(dst, byte(r))
			i += 4
		default: // '"' or '\\'
			dst = append(dst, s[i])
		}
	}
	return dst
}
