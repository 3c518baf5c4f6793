package fingerprint

import "strconv"

// MaxExponent bounds the magnitude of non-zero numbers: a non-zero number x
// is accepted when 10^-MaxExponent <= |x| < 10^(MaxExponent+1), that is when
// its scientific-notation exponent lies in [-MaxExponent, MaxExponent].
// Other non-zero numbers are rejected with [ErrNumberRange]. Zero is accepted
// with any exponent. The bound keeps every canonical number short (its
// exponent has at most nine digits) without limiting any number an IEEE-754
// double can hold.
const MaxExponent = 999_999_999

// expSaturate caps the exponent accumulated while parsing, so that the
// arithmetic cannot overflow however many exponent digits the input has. Any
// exponent that reaches it is far outside MaxExponent for every input that
// fits in memory.
const expSaturate = 1 << 50

// zeros is a run of '0' as long as any run the canonical form pads with.
const zeros = "000000000000000000000"

// number checks the number at src[i] and returns the index just past it,
// or -1 on failure. A number that is not in canonical form is copied to out
// in canonical form; one that is stays pending.
//
// The canonical form depends only on the exact decimal value: with the value
// written as s × 10^(n-k), where s is a string of k significant digits
// without leading or trailing zeros, s and n are laid out by the rules of
// ECMAScript Number::toString (ECMA-262, 6th edition, §7.1.12.1) that
// RFC 8785 §3.2.2.3 prescribes for the digits of the nearest double. Zero,
// including negative zero, is "0".
func (c *canon) number(out []byte, i int) ([]byte, int) {
	src := c.src
	start := i
	neg := src[i] == '-'
	if neg {
		i++
	}

	intStart := i
	switch {
	case i >= len(src):
		return out, c.failEOF(i)
	case src[i] == '0':
		i++
	case src[i] >= '1' && src[i] <= '9':
		i++
		for i < len(src) && isDigit(src[i]) {
			i++
		}
	default:
		return out, c.failByte(i, src[i], "in numeric literal")
	}
	intEnd := i

	fracStart, fracEnd := i, i
	if i < len(src) && src[i] == '.' {
		i++
		fracStart = i
		for i < len(src) && isDigit(src[i]) {
			i++
		}
		if i == fracStart {
			return out, c.failDigit(i, "after decimal point in numeric literal")
		}
		fracEnd = i
	}

	hasExp := false
	var exp int64
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		hasExp = true
		i++
		expNeg := false
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			expNeg = src[i] == '-'
			i++
		}
		expStart := i
		for i < len(src) && isDigit(src[i]) {
			if exp < expSaturate {
				exp = exp*10 + int64(src[i]-'0')
			}
			i++
		}
		if i == expStart {
			return out, c.failDigit(i, "in exponent of numeric literal")
		}
		if expNeg {
			exp = -exp
		}
	}

	// Fast paths: literals that are already canonical stay as they are. An
	// integer of at most 21 digits is written out in full; so is a number
	// with a fraction that has no trailing zero, unless its integer part is
	// 0 and the fraction starts with six zeros or more.
	if !hasExp && intEnd-intStart <= 21 {
		if fracStart == fracEnd {
			if src[intStart] != '0' || i-start == 1 {
				return out, i
			}
			// -0
			out = append(c.flush(out, start), '0')
			c.run = i
			return out, i
		}
		if src[fracEnd-1] != '0' {
			if src[intStart] != '0' {
				return out, i
			}
			// 0.f: canonical when f has at most five leading zeros.
			lead := 0
			for lead < 6 && src[fracStart+lead] == '0' {
				lead++
			}
			if lead < 6 {
				return out, i
			}
		}
	}

	d := digits{int: src[intStart:intEnd], frac: src[fracStart:fracEnd]}
	total := d.len()
	lz := 0 // first significant digit
	for lz < total && d.at(lz) == '0' {
		lz++
	}
	if lz == total {
		out = append(c.flush(out, start), '0')
		c.run = i
		return out, i
	}
	tz := total - 1 // last significant digit
	for d.at(tz) == '0' {
		tz--
	}
	k := int64(tz - lz + 1)
	// The value is s × 10^q with q the exponent of the last significant digit.
	q := exp - int64(len(d.frac)) + int64(total-1-tz)
	n := q + k
	if n-1 > MaxExponent || n-1 < -MaxExponent {
		return out, c.failClass(start, ErrNumberRange)
	}

	out = c.flush(out, start)
	c.run = i
	// The digits, a sign, a point, 21 zeros and an exponent.
	if room := int(k) + 64; cap(out)-len(out) < room {
		out = grow(out, room, &c.grown)
	}
	if neg {
		out = append(out, '-')
	}
	switch {
	case k <= n && n <= 21:
		out = d.appendRange(out, lz, tz+1)
		out = append(out, zeros[:n-k]...)
	case 0 < n && n <= 21:
		out = d.appendRange(out, lz, lz+int(n))
		out = append(out, '.')
		out = d.appendRange(out, lz+int(n), tz+1)
	case -6 < n && n <= 0:
		out = append(out, '0', '.')
		out = append(out, zeros[:-n]...)
		out = d.appendRange(out, lz, tz+1)
	default:
		out = d.appendRange(out, lz, lz+1)
		if k > 1 {
			out = append(out, '.')
			out = d.appendRange(out, lz+1, tz+1)
		}
		out = append(out, 'e')
		if n-1 < 0 {
			out = append(out, '-')
			out = strconv.AppendInt(out, -(n - 1), 10)
		} else {
			out = append(out, '+')
			out = strconv.AppendInt(out, n-1, 10)
		}
	}
	return out, i
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// failDigit reports a missing digit at src[i].
func (c *canon) failDigit(i int, where string) int {
	if i >= len(c.src) {
		return c.failEOF(i)
	}
	return c.failByte(i, c.src[i], where)
}

// digits is the digit string of a number literal: the integer part followed
// by the fraction part, without the decimal point between them.
type digits struct{ int, frac []byte }

func (d digits) len() int { return len(d.int) + len(d.frac) }

func (d digits) at(j int) byte {
	if j < len(d.int) {
		return d.int[j]
	}
	return d.frac[j-len(d.int)]
}

// appendRange appends digits lo up to hi (exclusive) to out.
func (d digits) appendRange(out []byte, lo, hi int) []byte {
	if lo < len(d.int) {
		out = append(out, d.int[lo:min(hi, len(d.int))]...)
	}
	if hi > len(d.int) {
		out = append(out, d.frac[max(lo, len(d.int))-len(d.int):hi-len(d.int)]...)
	}
	return out
}
