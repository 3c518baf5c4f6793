package fingerprint_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds an independent model of JSON values for the property
// tests: a random generator, a renderer that spells a value in many
// equivalent ways, and an oracle that writes the canonical form directly
// from the definitions in the package documentation.

// A model value is one of nil, bool, num, string, []any or obj.
type num struct {
	neg    bool
	digits string // significant digits: no leading or trailing zeros; "" is zero
	exp    int    // the value is digits × 10^exp
}

type obj []mem

type mem struct {
	name string
	val  any
}

// modelRunes are the characters strings are built from: ASCII, characters
// that need escaping, and characters around the UTF-8/UTF-16 order boundary.
var modelRunes = []rune{
	'a', 'b', 'z', 'A', '0', ' ', '/', '"', '\\', 0, '\b', '\t', '\n', '\f',
	'\r', 0x1f, 0x7f, 0xe9, 0x2028, 0xd7ff, 0xe000, 0xfb33, 0xfffd, 0xffff,
	0x10000, 0x1f600, 0x10ffff,
}

type gen struct {
	r        *rand.Rand
	maxDepth int
	doubles  bool // numbers are shortest round-trip decimals of doubles
}

func (g *gen) str(maxLen int) string {
	var sb strings.Builder
	for n := g.r.IntN(maxLen + 1); n > 0; n-- {
		sb.WriteRune(modelRunes[g.r.IntN(len(modelRunes))])
	}
	return sb.String()
}

func (g *gen) num() num {
	if g.r.IntN(8) == 0 {
		return num{neg: g.r.IntN(2) == 0}
	}
	if g.doubles {
		return g.double()
	}
	var sb strings.Builder
	sb.WriteByte(byte('1' + g.r.IntN(9)))
	for n := g.r.IntN(20); n > 0; n-- {
		sb.WriteByte(byte('0' + g.r.IntN(10)))
	}
	d := strings.TrimRight(sb.String(), "0")
	return num{neg: g.r.IntN(3) == 0, digits: d, exp: g.r.IntN(60) - 30}
}

// double returns the shortest round-trip decimal of a random finite double:
// a small integer, a short decimal fraction, or an arbitrary bit pattern.
func (g *gen) double() num {
	var f float64
	switch g.r.IntN(3) {
	case 0:
		f = float64(g.r.Int64N(1<<53)) * float64(1-2*g.r.IntN(2))
	case 1:
		f = float64(g.r.IntN(100000)) / 100
	default:
		for {
			f = math.Float64frombits(g.r.Uint64())
			if !math.IsNaN(f) && !math.IsInf(f, 0) {
				break
			}
		}
	}
	if f == 0 {
		return num{}
	}
	m, e, _ := strings.Cut(strconv.FormatFloat(math.Abs(f), 'e', -1, 64), "e")
	exp, _ := strconv.Atoi(e)
	digits := strings.Replace(m, ".", "", 1)
	exp -= len(digits) - 1
	trimmed := strings.TrimRight(digits, "0")
	return num{neg: f < 0, digits: trimmed, exp: exp + len(digits) - len(trimmed)}
}

func (g *gen) value(depth int) any {
	k := g.r.IntN(10)
	if depth >= g.maxDepth {
		k %= 5
	}
	switch k {
	case 0:
		return nil
	case 1:
		return g.r.IntN(2) == 0
	case 2, 3:
		return g.num()
	case 4:
		return g.str(6)
	case 5, 6:
		a := make([]any, g.r.IntN(5))
		for i := range a {
			a[i] = g.value(depth + 1)
		}
		return a
	default:
		var o obj
		seen := map[string]bool{}
		for n := g.r.IntN(7); n > 0; n-- {
			name := g.str(3)
			if seen[name] {
				continue
			}
			seen[name] = true
			o = append(o, mem{name, g.value(depth + 1)})
		}
		return o
	}
}

// spell renders v as JSON text, choosing at random among equivalent
// spellings: member order, whitespace, escapes and number notation.
type speller struct{ r *rand.Rand }

func (s *speller) ws(sb *strings.Builder) {
	for n := s.r.IntN(3); n > 0; n-- {
		sb.WriteByte(" \t\n\r"[s.r.IntN(4)])
	}
}

func (s *speller) spell(sb *strings.Builder, v any) {
	s.ws(sb)
	switch v := v.(type) {
	case nil:
		sb.WriteString("null")
	case bool:
		sb.WriteString(strconv.FormatBool(v))
	case num:
		s.num(sb, v)
	case string:
		s.str(sb, v)
	case []any:
		sb.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				sb.WriteByte(',')
			}
			s.spell(sb, e)
		}
		s.ws(sb)
		sb.WriteByte(']')
	case obj:
		sb.WriteByte('{')
		for i, j := range s.r.Perm(len(v)) {
			if i > 0 {
				sb.WriteByte(',')
			}
			s.ws(sb)
			s.str(sb, v[j].name)
			s.ws(sb)
			sb.WriteByte(':')
			s.spell(sb, v[j].val)
		}
		s.ws(sb)
		sb.WriteByte('}')
	default:
		panic(fmt.Sprintf("unknown model value %T", v))
	}
	s.ws(sb)
}

func (s *speller) str(sb *strings.Builder, v string) {
	sb.WriteByte('"')
	for _, r := range v {
		escape := s.r.IntN(3) == 0
		switch {
		case r == '"' || r == '\\':
			sb.WriteByte('\\')
			sb.WriteRune(r)
			continue
		case r == '/' && escape:
			sb.WriteString(`\/`)
			continue
		case r < 0x20 && !escape && strings.ContainsRune("\b\t\n\f\r", r):
			sb.WriteString(strconv.Quote(string(r))[1:3]) // \b \t \n \f \r
			continue
		case r >= 0x20 && !escape:
			sb.WriteRune(r)
			continue
		}
		hex := "%04x"
		if s.r.IntN(2) == 0 {
			hex = "%04X"
		}
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(sb, `\u`+hex+`\u`+hex, hi, lo)
		} else {
			fmt.Fprintf(sb, `\u`+hex, r)
		}
	}
	sb.WriteByte('"')
}

func (s *speller) num(sb *strings.Builder, v num) {
	if v.neg {
		sb.WriteByte('-')
	}
	if v.digits == "" {
		sb.WriteString([]string{"0", "0.0", "0e5", "0.000E-3"}[s.r.IntN(4)])
		return
	}
	// Pad with trailing zeros, then put the decimal point p digits from
	// the right (adding leading zeros when p exceeds the digit count), and
	// make up the difference in the exponent.
	t := s.r.IntN(3)
	m := v.digits + strings.Repeat("0", t)
	p := s.r.IntN(len(m) + 3)
	e := v.exp - t + p
	intPart, frac := "0", ""
	if p >= len(m) {
		frac = strings.Repeat("0", p-len(m)) + m
	} else {
		intPart, frac = m[:len(m)-p], m[len(m)-p:]
	}
	sb.WriteString(intPart)
	if frac != "" {
		sb.WriteByte('.')
		sb.WriteString(frac)
	}
	if e != 0 || s.r.IntN(3) == 0 {
		sb.WriteByte("eE"[s.r.IntN(2)])
		switch {
		case e < 0:
			sb.WriteByte('-')
			e = -e
		case s.r.IntN(2) == 0:
			sb.WriteByte('+')
		}
		sb.WriteString(strings.Repeat("0", s.r.IntN(3)))
		sb.WriteString(strconv.Itoa(e))
	}
}

// canonicalModel is the oracle: the canonical form of v written from the
// package's definition.
func canonicalModel(sb *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
		sb.WriteString("null")
	case bool:
		sb.WriteString(strconv.FormatBool(v))
	case num:
		sb.WriteString(canonicalNum(v))
	case string:
		canonicalStr(sb, v)
	case []any:
		sb.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				sb.WriteByte(',')
			}
			canonicalModel(sb, e)
		}
		sb.WriteByte(']')
	case obj:
		sorted := slices.Clone(v)
		slices.SortFunc(sorted, func(a, b mem) int {
			return slices.Compare(utf16.Encode([]rune(a.name)), utf16.Encode([]rune(b.name)))
		})
		sb.WriteByte('{')
		for i, m := range sorted {
			if i > 0 {
				sb.WriteByte(',')
			}
			canonicalStr(sb, m.name)
			sb.WriteByte(':')
			canonicalModel(sb, m.val)
		}
		sb.WriteByte('}')
	}
}

func canonicalStr(sb *strings.Builder, v string) {
	sb.WriteByte('"')
	for _, r := range v {
		switch {
		case r == '"' || r == '\\':
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case r == '\b':
			sb.WriteString(`\b`)
		case r == '\t':
			sb.WriteString(`\t`)
		case r == '\n':
			sb.WriteString(`\n`)
		case r == '\f':
			sb.WriteString(`\f`)
		case r == '\r':
			sb.WriteString(`\r`)
		case r < 0x20:
			fmt.Fprintf(sb, `\u%04x`, r)
		default:
			sb.WriteRune(r)
		}
	}
	sb.WriteByte('"')
}

// canonicalNum applies the ECMAScript Number::toString layout to the exact
// digits of v.
func canonicalNum(v num) string {
	if v.digits == "" {
		return "0"
	}
	s, k := v.digits, len(v.digits)
	n := v.exp + k
	var out string
	switch {
	case k <= n && n <= 21:
		out = s + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		out = s[:n] + "." + s[n:]
	case -6 < n && n <= 0:
		out = "0." + strings.Repeat("0", -n) + s
	default:
		out = s[:1]
		if k > 1 {
			out += "." + s[1:]
		}
		if n-1 >= 0 {
			out += "e+" + strconv.Itoa(n-1)
		} else {
			out += "e-" + strconv.Itoa(1-n)
		}
	}
	if v.neg {
		out = "-" + out
	}
	return out
}

func spellJSON(r *rand.Rand, v any) string {
	var sb strings.Builder
	(&speller{r}).spell(&sb, v)
	return sb.String()
}

func modelCanonical(v any) string {
	var sb strings.Builder
	canonicalModel(&sb, v)
	return sb.String()
}

// scalars returns pointers to the places in v that hold a scalar, for
// mutation, and to the member names.
func mutationSites(v *any) []func(r *rand.Rand) {
	var sites []func(r *rand.Rand)
	switch x := (*v).(type) {
	case []any:
		for i := range x {
			sites = append(sites, mutationSites(&x[i])...)
		}
	case obj:
		for i := range x {
			sites = append(sites, mutationSites(&x[i].val)...)
			sites = append(sites, func(r *rand.Rand) {
				// A new name that no other member has.
				for {
					name := mutateString(r, x[i].name)
					if !slices.ContainsFunc(x, func(m mem) bool { return m.name == name }) {
						x[i].name = name
						return
					}
				}
			})
		}
	default:
		sites = append(sites, func(r *rand.Rand) { *v = mutateScalar(r, *v) })
	}
	return sites
}

// mutateScalar returns a scalar with a different value from v.
func mutateScalar(r *rand.Rand, v any) any {
	switch x := v.(type) {
	case nil:
		return num{} // null -> 0
	case bool:
		return !x
	case num:
		if x.digits == "" {
			return num{digits: "1"}
		}
		switch r.IntN(3) {
		case 0: // change the last significant digit
			d := []byte(x.digits)
			last := &d[len(d)-1]
			*last = byte('0' + (int(*last-'0')+1+r.IntN(9))%10)
			x.digits = strings.TrimRight(string(d), "0")
			x.exp += len(d) - len(x.digits)
		case 1: // scale by a power of ten
			x.exp += 1 + r.IntN(3)
		default:
			x.neg = !x.neg
		}
		return x
	case string:
		return mutateString(r, x)
	}
	panic(fmt.Sprintf("not a scalar: %T", v))
}

// mutateString returns a different string: one character replaced, or one
// added when s is empty.
func mutateString(r *rand.Rand, s string) string {
	runes := []rune(s)
	if len(runes) == 0 {
		return string(modelRunes[r.IntN(len(modelRunes))])
	}
	i := r.IntN(len(runes))
	for {
		c := modelRunes[r.IntN(len(modelRunes))]
		if c != runes[i] && utf8.ValidRune(c) {
			runes[i] = c
			return string(runes)
		}
	}
}

// stringsBuilder lets tests declare builders side by side.
type stringsBuilder struct{ strings.Builder }
