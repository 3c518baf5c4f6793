package fingerprint_test

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/fingerprint"
)

// canonicalCases maps inputs to their expected canonical form.
type canonicalCase struct{ in, want string }

func checkCanonical(t *testing.T, cases []canonicalCase) {
	t.Helper()
	for _, c := range cases {
		got, err := fingerprint.Canonical([]byte(c.in))
		if err != nil {
			t.Errorf("Canonical(%q): %v", c.in, err)
			continue
		}
		if string(got) != c.want {
			t.Errorf("Canonical(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCanonicalRemovesInsignificantWhitespace(t *testing.T) {
	checkCanonical(t, []canonicalCase{
		{" \t\r\n{ \"a\" : [ 1 , true , null , { } , [ ] ] } \n", `{"a":[1,true,null,{},[]]}`},
		{"\n\"x\"\n", `"x"`},
		{"  false", "false"},
		{`" a  b "`, `" a  b "`},
	})
}

func TestCanonicalSortsMembersRecursively(t *testing.T) {
	checkCanonical(t, []canonicalCase{
		{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{`{"a":2,"b":1}`, `{"a":2,"b":1}`},
		{`{"c":{"z":[{"y":1,"x":2}],"a":0},"b":[{"d":1,"c":2}],"a":{}}`,
			`{"a":{},"b":[{"c":2,"d":1}],"c":{"a":0,"z":[{"x":2,"y":1}]}}`},
		{`[{"b":{"b":{"b":1,"a":2},"a":3},"a":4},{"b":1,"a":[{"b":1,"a":2}]}]`,
			`[{"a":4,"b":{"a":3,"b":{"a":2,"b":1}}},{"a":[{"a":2,"b":1}],"b":1}]`},
		{`{"":0," ":1,"a":2,"A":3,"aa":4,"a ":5}`, `{"":0," ":1,"A":3,"a":2,"a ":5,"aa":4}`},
		// A name that needs escaping sorts by its decoded characters:
		// '\n' (0x0A) before '"' (0x22) before '\\' (0x5C).
		{`{"\\":1,"\"":2,"\n":3}`, `{"\n":3,"\"":2,"\\":1}`},
		{`{"b\u0000":1,"b":2,"a\t":3}`, `{"a\t":3,"b":2,"b\u0000":1}`},
	})
}

// RFC 8785 §3.2.3 orders names by UTF-16 code units, which differs from
// UTF-8 byte order for supplementary characters against U+E000-U+FFFF.
func TestCanonicalSortsNamesByUTF16CodeUnits(t *testing.T) {
	checkCanonical(t, []canonicalCase{
		// U+E000 is EE 80 80 in UTF-8, below U+1F600 (F0 9F 98 80); in
		// UTF-16 it is E000, above U+1F600's D83D DE00.
		{"{\"\ue000\":1,\"\U0001F600\":2}", "{\"\U0001F600\":2,\"\ue000\":1}"},
		{"{\"\U0001F600\":2,\"\ue000\":1}", "{\"\U0001F600\":2,\"\ue000\":1}"},
		{"{\"\uffff\":1,\"\U00010000\":2,\"\ud7ff\":3}", "{\"\ud7ff\":3,\"\U00010000\":2,\"\uffff\":1}"},
		// Within the BMP and within the supplementary planes the orders agree.
		{"{\"\u00e9\":1,\"e\":2,\"\u0100\":3,\"z\":4}", "{\"e\":2,\"z\":4,\"\u00e9\":1,\"\u0100\":3}"},
		{"{\"\U0001F601\":1,\"\U0001F600\":2,\"\U00010000\":3}", "{\"\U00010000\":3,\"\U0001F600\":2,\"\U0001F601\":1}"},
		// Same prefix, difference in a later character.
		{"{\"x\ue000\":1,\"x\U0001F600\":2,\"x\":3}", "{\"x\":3,\"x\U0001F600\":2,\"x\ue000\":1}"},
		// Escaped names sort by what they decode to.
		{`{"\ue000":1,"\ud83d\ude00":2}`, "{\"\U0001F600\":2,\"\ue000\":1}"},
	})
}

func TestCanonicalKeepsArrayOrder(t *testing.T) {
	checkCanonical(t, []canonicalCase{
		{`[3,1,2]`, `[3,1,2]`},
		{`[{"b":1},{"a":1}]`, `[{"b":1},{"a":1}]`},
	})
}

func TestCanonicalStringEscaping(t *testing.T) {
	checkCanonical(t, []canonicalCase{
		// Short forms for the five controls that have one.
		{`"\u0008\u0009\u000a\u000c\u000d"`, `"\b\t\n\f\r"`},
		{`"\b\t\n\f\r"`, `"\b\t\n\f\r"`},
		// Other controls as \u00xx with lowercase hex digits.
		{`"\u0000\u0001\u001F\u001f\u000B\u000E"`, `"\u0000\u0001\u001f\u001f\u000b\u000e"`},
		// Of the other characters only '"' and '\\' are escaped.
		{`"\"\\\/\u0022\u005C\u002F"`, `"\"\\/\"\\/"`},
		// U+007F, U+2028, U+2029 and '/' are written literally.
		{`"\u007f\u2028\u2029/"`, "\"\u007f\u2028\u2029/\""},
		// Non-ASCII escapes are decoded, with hex digits in either case.
		{`"\u00e9\u00E9\u20AC\uFFFF"`, "\"\u00e9\u00e9\u20ac\uffff\""},
		// A surrogate pair is decoded to one character.
		{`"\ud83d\ude00\uD83D\uDE00"`, "\"\U0001F600\U0001F600\""},
		{`"\udbff\udfff"`, "\"\U0010FFFF\""},
		// Raw UTF-8 passes unchanged; no Unicode normalisation happens.
		{"\"A\u030a \u00c5\"", "\"A\u030a \u00c5\""},
		{"\"\xef\xbf\xbd\"", "\"\ufffd\""},
		{`""`, `""`},
	})
}

func TestCanonicalNumbersCompareByExactDecimalValue(t *testing.T) {
	checkCanonical(t, []canonicalCase{
		// Equal values, different spellings.
		{"1", "1"}, {"1.0", "1"}, {"1e0", "1"}, {"1E+0", "1"}, {"10e-1", "1"},
		{"0.1e1", "1"}, {"100e-2", "1"}, {"1.000e00", "1"}, {"0.0001e4", "1"},
		{"-0", "0"}, {"-0.0", "0"}, {"0e10", "0"}, {"-0E-10", "0"}, {"0.000", "0"},
		{"0e99999999999999999999999999", "0"},
		{"4.50", "4.5"}, {"45e-1", "4.5"}, {"0.45e1", "4.5"},
		{"-12.5", "-12.5"}, {"-125e-1", "-12.5"},
		{"1200", "1200"}, {"12e2", "1200"}, {"1.2e3", "1200"},
		// Values that IEEE-754 doubles cannot tell apart stay apart.
		{"9007199254740993", "9007199254740993"},
		{"9007199254740992", "9007199254740992"},
		{"-9007199254740993", "-9007199254740993"},
		{"1.00000000000000000001", "1.00000000000000000001"},
		{"0.1000000000000000055511151231257827", "0.1000000000000000055511151231257827"},
		{"333333333.33333329", "333333333.33333329"},
		// Layout switches exactly where ECMAScript Number::toString does.
		{"100000000000000000000", "100000000000000000000"}, // n = 21
		{"1e20", "100000000000000000000"},
		{"1e21", "1e+21"},
		{"123456789012345678901", "123456789012345678901"},
		{"1234567890123456789012", "1.234567890123456789012e+21"},
		{"12345678901234567890.5", "12345678901234567890.5"},
		{"123456789012345678901.5", "123456789012345678901.5"},
		{"1234567890123456789012.5", "1.2345678901234567890125e+21"},
		{"0.000001", "0.000001"}, // n = -5
		{"0.0000001", "1e-7"},    // n = -6
		{"0.00000123", "0.00000123"},
		{"0.000000123", "1.23e-7"},
		{"1e-7", "1e-7"}, {"-1.5E-7", "-1.5e-7"}, {"2e-3", "0.002"},
		{"1E30", "1e+30"}, {"1.5e300", "1.5e+300"},
		// Outside the range of doubles.
		{"1e400", "1e+400"}, {"-1e400", "-1e+400"}, {"1e-400", "1e-400"},
		{"4.9e-324", "4.9e-324"},
		// The extremes of the accepted range, reached by different spellings.
		{"1e999999999", "1e+999999999"},
		{"10e999999998", "1e+999999999"},
		{"9.9e999999999", "9.9e+999999999"},
		{"1e-999999999", "1e-999999999"},
		{"0.1e-999999998", "1e-999999999"},
		{"1e0000000000000000000000000005", "100000"},
	})
}

func TestCanonicalNumberRangeIsBounded(t *testing.T) {
	for _, in := range []string{
		"1e1000000000", "10e999999999", "-1e1000000000", "1e-1000000000",
		"0.1e-999999999", "1e99999999999999999999999999999",
		"1e-99999999999999999999999999999", "[1,2,1e1000000000]",
	} {
		_, err := fingerprint.Canonical([]byte(in))
		if !errors.Is(err, fingerprint.ErrNumberRange) {
			t.Errorf("Canonical(%s) error = %v, want ErrNumberRange", in, err)
		}
	}
}

func TestCanonicalRejectsInvalidUTF8(t *testing.T) {
	for _, in := range []string{
		"\"\xff\"",             // never valid
		"\"a\xc3\"",            // truncated sequence
		"\"\xc3\x28\"",         // bad continuation byte
		"\"\xc0\xaf\"",         // overlong '/'
		"\"\xe0\x80\xaf\"",     // overlong '/'
		"\"\xed\xa0\x80\"",     // UTF-8 encoded surrogate U+D800
		"\"\xf4\x90\x80\x80\"", // beyond U+10FFFF
		"{\"\xff\":1}",         // in a name
		"[\"ok\",\"\x80\"]",
	} {
		_, err := fingerprint.Canonical([]byte(in))
		if !errors.Is(err, fingerprint.ErrInvalidUTF8) {
			t.Errorf("Canonical(%q) error = %v, want ErrInvalidUTF8", in, err)
		}
	}
}

func TestCanonicalRejectsLoneSurrogateEscapes(t *testing.T) {
	for _, in := range []string{
		`"\ud83d"`, `"\ud83dx"`, `"\ud83d\u0041"`, `"\ud83d\ud83d\ude00"`,
		`"\ude00"`, `"\ude00\ud83d"`, `"\udfff"`, `{"\ud800":1}`, `"\ud83d\n"`,
	} {
		_, err := fingerprint.Canonical([]byte(in))
		if !errors.Is(err, fingerprint.ErrLoneSurrogate) {
			t.Errorf("Canonical(%s) error = %v, want ErrLoneSurrogate", in, err)
		}
	}
}

func TestCanonicalRejectsDuplicateNames(t *testing.T) {
	for _, c := range []struct {
		in     string
		offset int64 // of the second occurrence
	}{
		{`{"a":1,"a":2}`, 7},
		{`{"b":1,"a":2,"b":3}`, 13},
		{`{"b":1,"a":2,"a":3}`, 13},
		{`{"a":1,"\u0061":2}`, 7},
		{`{"\n":1,"\u000a":2}`, 8},
		{`{"é":1,"\u00e9":2}`, 8},
		{`{"😀":1,"\ud83d\ude00":2}`, 10},
		{`[{"x":{"y":{}},"y":1,"x":2}]`, 21},
	} {
		_, err := fingerprint.Canonical([]byte(c.in))
		if !errors.Is(err, fingerprint.ErrDuplicateName) {
			t.Errorf("Canonical(%s) error = %v, want ErrDuplicateName", c.in, err)
			continue
		}
		var se *fingerprint.SyntaxError
		if !errors.As(err, &se) || se.Offset != c.offset {
			t.Errorf("Canonical(%s) error = %v, want offset %d", c.in, err, c.offset)
		}
	}
	// The same name in different objects is fine.
	checkCanonical(t, []canonicalCase{{`{"a":{"a":{"a":1}},"b":{"a":2}}`, `{"a":{"a":{"a":1}},"b":{"a":2}}`}})
}

// With several repeated names, the offset is that of the second occurrence
// of the first repeat found: the first repeated name while the names are in
// order, the smallest repeated name once they are not, however large the
// object and however often the name repeats.
func TestCanonicalReportsWhichDuplicateNameDeterministically(t *testing.T) {
	var wide strings.Builder
	wide.WriteString(`{"zz":0`)
	for i := range 40 {
		fmt.Fprintf(&wide, `,"n%02d":%d`, 39-i, i)
	}
	wideBase := wide.Len()
	wide.WriteString(`,"n07":1,"n03":1,"n03":2,"n07":2}`)
	for _, c := range []struct {
		in     string
		offset int64
	}{
		{`{"a":1,"b":1,"b":2,"a":3}`, 13},             // in order up to the repeat
		{`{"b":1,"x":1,"a":1,"x":2,"x":3,"a":2}`, 31}, // "a" sorts first
		{`{"x":1,"b":1,"x":2,"x":3,"b":2}`, 25},       // "b", not "x"
		{`{"x":1,"b":1,"x":2,"x":3}`, 13},             // the second of three
		{`{"b":0, "x" :1 ,"a":1,"x":2}`, 22},          // offsets count whitespace
		{wide.String(), int64(wideBase) + 9},          // pdqsort path: "n03" again
	} {
		_, err := fingerprint.Canonical([]byte(c.in))
		var se *fingerprint.SyntaxError
		if !errors.As(err, &se) || !errors.Is(err, fingerprint.ErrDuplicateName) || se.Offset != c.offset {
			t.Errorf("Canonical(%.60s) error = %v, want ErrDuplicateName at offset %d", c.in, err, c.offset)
		}
	}
}

// rankedMember is a member of a test object: its text as given and in
// canonical form, and its rank in canonical order.
type rankedMember struct {
	in, want string
	rank     int
}

// rankedObject returns the object of the members ms, in the order given and
// separated by sep, and its canonical form.
func rankedObject(sep string, ms ...rankedMember) (in, want string) {
	ins := make([]string, len(ms))
	for j, m := range ms {
		ins[j] = m.in
	}
	sorted := slices.SortedFunc(slices.Values(ms), func(a, b rankedMember) int { return cmp.Compare(a.rank, b.rank) })
	wants := make([]string, len(sorted))
	for j, m := range sorted {
		wants[j] = m.want
	}
	return "{" + strings.Join(ins, sep) + "}", "{" + strings.Join(wants, ",") + "}"
}

// Objects record their members only once the names leave canonical order or
// a value is an array or object; the members before that point are recovered
// from their text, whatever had to be respelled in it.
func TestCanonicalSortsObjectsThatLeaveOrderLate(t *testing.T) {
	values := []struct{ in, want string }{
		{`1`, `1`}, {`1.50`, `1.5`}, {`-0`, `0`}, {`1e2`, `100`}, {`"x"`, `"x"`},
		{`"\u00e9\/\n"`, `"é/\n"`}, {`"\u0001"`, `"\u0001"`}, {`true`, `true`},
		{`{}`, `{}`}, {`[ ]`, `[]`}, {`[1,{"b":1,"a":2}]`, `[1,{"a":2,"b":1}]`}, {`{"d":{},"c":[]}`, `{"c":[],"d":{}}`},
	}
	// In canonical order. The first ones are spelled canonically, so that
	// with canonical values they are recovered from src, and two of them
	// share their first eight bytes; the others are respelled, so that the
	// members before them are recovered from the arena.
	names := []struct{ in, want string }{
		{`aa`, `aa`}, {`ab_name_1`, `ab_name_1`}, {`ab_name_2`, `ab_name_2`}, {`ac`, `ac`},
		{`\u0062b`, `bb`}, {`c\"`, `c\"`}, {`d\/`, `d/`}, {`e\u0000`, `e\u0000`}, {`f\u00e9`, `fé`},
		{`h\n`, `h\n`}, {`ii`, `ii`},
	}
	// member returns names[n] followed by suffix, which is "" or "0" (and
	// then sorts right after names[n]), with values[v] as value, wrapped in
	// brackets if array is set.
	member := func(n int, suffix string, v int, array bool) rankedMember {
		val := values[v%len(values)]
		if array {
			val.in, val.want = "["+val.in+"]", "["+val.want+"]"
		}
		return rankedMember{
			in:   `"` + names[n].in + suffix + `":` + val.in,
			want: `"` + names[n].want + suffix + `":` + val.want,
			rank: 2*n + len(suffix),
		}
	}
	last := len(names) - 1
	for k := 1; k < len(names); k++ {
		for v := range values {
			for _, sep := range []string{",", " ,\n "} {
				// The last name first, then names[:k] in order with
				// various values: the object leaves order at once.
				ms := []rankedMember{member(last, "", v, false)}
				for j := range k {
					ms = append(ms, member(j, "", v+j, false))
				}
				in, want := rankedObject(sep, ms...)
				checkCanonical(t, []canonicalCase{{in, want}})

				// names[:k] in order, the last name with an array value,
				// then a name that belongs before it: the object starts
				// recording at the array and leaves order at its end.
				ms = ms[1:]
				in, want = rankedObject(sep, append(ms, member(last, "", v, true), member(k-1, "0", v, false))...)
				checkCanonical(t, []canonicalCase{{in, want}})

				// names[:k] in order, all with the same scalar value (so
				// that with a canonical one the members are recovered from
				// src), then "aa0": the object leaves order at its end.
				ms = ms[:0]
				for j := range k {
					ms = append(ms, member(j, "", v, false))
				}
				in, want = rankedObject(sep, append(ms, member(0, "0", v, false))...)
				checkCanonical(t, []canonicalCase{{in, want}})
			}
		}
	}
}

func TestCanonicalSyntaxErrorsReportOffset(t *testing.T) {
	for _, c := range []struct {
		in     string
		offset int64
	}{
		{"", 0},
		{"   ", 3},
		{"{", 1},
		{"[", 1},
		{"]", 0},
		{"}", 0},
		{"[1,]", 3},
		{"[,1]", 1},
		{"[1 2]", 3},
		{`{"a":1,}`, 7},
		{`{"a" 1}`, 5},
		{`{"a"`, 4},
		{`{"a":1`, 6},
		{`"\`, 2},
		{`{"a":}`, 5},
		{`{a:1}`, 1},
		{`{1:2}`, 1},
		{`{"a":1 "b":2}`, 7},
		{`{"a":1]`, 6},
		{`[1}`, 2},
		{"01", 1},
		{"-01", 2},
		{"1.", 2},
		{"1.e5", 2},
		{".5", 0},
		{"+1", 0},
		{"-", 1},
		{"-a", 1},
		{"1e", 2},
		{"1e+", 3},
		{"1ex", 2},
		{"0x10", 1},
		{"tru", 3},
		{"trUe", 2},
		{"truex", 4},
		{"nul", 3},
		{"nulll", 4},
		{"falsy", 4},
		{`"abc`, 4},
		{`"\x"`, 2},
		{`"\u12G4"`, 1},
		{`"\u12"`, 1},
		{`"\ud83d\u12G4"`, 7},
		{"\"\x01\"", 1},
		{"\"a\nb\"", 2},
		{"[1]x", 3},
		{"1 2", 2},
		{`{} {}`, 3},
		{"\xef\xbb\xbf{}", 0}, // a byte order mark is not JSON
		{"\u00a0{}", 0},       // nor is non-ASCII whitespace
		{"\v1", 0},
		{"[\"a\"\"b\"]", 4},
	} {
		_, err := fingerprint.Canonical([]byte(c.in))
		var se *fingerprint.SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Canonical(%q) error = %v, want *SyntaxError", c.in, err)
			continue
		}
		if se.Err != nil {
			t.Errorf("Canonical(%q) error = %v, want a grammar error without sentinel", c.in, err)
		}
		if se.Offset != c.offset {
			t.Errorf("Canonical(%q) error = %v, want offset %d", c.in, err, c.offset)
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "fingerprint: ") || !strings.HasSuffix(msg, fmt.Sprintf(" at offset %d", c.offset)) {
			t.Errorf("Canonical(%q) error message %q lacks prefix or offset", c.in, msg)
		}
	}
}

func TestSentinelErrorsArePrefixed(t *testing.T) {
	for _, err := range []error{
		fingerprint.ErrTooDeep, fingerprint.ErrDuplicateName, fingerprint.ErrInvalidUTF8,
		fingerprint.ErrLoneSurrogate, fingerprint.ErrNumberRange,
	} {
		if !strings.HasPrefix(err.Error(), "fingerprint: ") {
			t.Errorf("%q lacks the package prefix", err)
		}
	}
	_, err := fingerprint.Canonical([]byte(`{"a":1,"a":1}`))
	if msg := err.Error(); strings.Count(msg, "fingerprint: ") != 1 {
		t.Errorf("wrapped message %q repeats the prefix", msg)
	}
}

func TestErrorMessagesQuoteAtMostOneInputByte(t *testing.T) {
	secret := "s3cr3t-t0k3n-value"
	for _, in := range []string{"[" + secret + "]", `{"a":1,` + secret + `}`, `"` + secret + "\x01\""} {
		_, err := fingerprint.Canonical([]byte(in))
		if err == nil {
			t.Fatalf("Canonical(%q) succeeded", in)
		}
		if strings.Contains(err.Error(), secret[:2]) {
			t.Errorf("error %q quotes more than one byte of the input", err)
		}
	}
}

func nested(depth int, open, close, leaf string) []byte {
	return []byte(strings.Repeat(open, depth) + leaf + strings.Repeat(close, depth))
}

func TestCanonicalAcceptsMaxDepth(t *testing.T) {
	const d = fingerprint.MaxDepth
	for _, c := range []struct{ in, want []byte }{
		{nested(d, "[", "]", ""), nested(d, "[", "]", "")},
		{nested(d, "[", "]", "1"), nested(d, "[", "]", "1")},
		{nested(d, `{"a":`, "}", "1"), nested(d, `{"a":`, "}", "1")},
		{nested(d-1, `{"a":`, "}", "{}"), nested(d-1, `{"a":`, "}", "{}")},
		// Every level out of order.
		{nested(d/2, `[{"b":0,"a":`, "}]", "null"), nested(d/2, `[{"a":`, `,"b":0}]`, "null")},
	} {
		got, err := fingerprint.Canonical(c.in)
		if err != nil {
			t.Fatalf("Canonical(%.20s...): %v", c.in, err)
		}
		if !bytes.Equal(got, c.want) {
			t.Errorf("Canonical(%.20s...) = %.40s..., want %.40s...", c.in, got, c.want)
		}
	}
}

func TestCanonicalRejectsDepthBeyondMaxDepth(t *testing.T) {
	for _, in := range [][]byte{
		nested(fingerprint.MaxDepth+1, "[", "]", ""),
		nested(fingerprint.MaxDepth+1, `{"a":`, "}", "1"),
		nested(fingerprint.MaxDepth, `{"a":`, "}", "[]"),
		nested(fingerprint.MaxDepth/2+1, `[{"a":`, "}]", "1"),
		// Far deeper than any stack would allow if the parser recursed;
		// also unterminated, but the depth is detected first.
		bytes.Repeat([]byte("["), 10_000_000),
	} {
		_, err := fingerprint.Canonical(in)
		if !errors.Is(err, fingerprint.ErrTooDeep) {
			t.Fatalf("error = %v, want ErrTooDeep", err)
		}
		var se *fingerprint.SyntaxError
		if !errors.As(err, &se) || se.Offset <= int64(fingerprint.MaxDepth-1) {
			t.Errorf("error = %v, want the offset of the bracket beyond MaxDepth", err)
		}
	}
}

func TestAppendCanonicalAppendsToDst(t *testing.T) {
	dst := []byte("prefix:")
	got, err := fingerprint.AppendCanonical(dst, []byte(`{"b":1, "a":2}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `prefix:{"a":2,"b":1}` {
		t.Errorf("AppendCanonical = %q", got)
	}
}

func TestAppendCanonicalReturnsDstUnchangedOnError(t *testing.T) {
	dst := make([]byte, 3, 64)
	copy(dst, "abc")
	got, err := fingerprint.AppendCanonical(dst, []byte(`{"b":1,"a":2,`))
	if err == nil {
		t.Fatal("AppendCanonical accepted a truncated object")
	}
	if string(got) != "abc" || string(dst[:cap(dst)][3:4]) != "\x00" {
		t.Errorf("AppendCanonical = %q, want dst unchanged and its spare capacity untouched", got)
	}
}

func TestAppendCanonicalInPlace(t *testing.T) {
	buf := []byte(` { "b" : [ 1.0 , "\u0041" ] , "a" : 1e0 } `)
	got, err := fingerprint.AppendCanonical(buf[:0], buf)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":1,"b":[1,"A"]}`; string(got) != want {
		t.Errorf("AppendCanonical in place = %q, want %q", got, want)
	}
}

// In-place canonicalisation works when the canonical text is the input
// itself, when members are reordered, and when reordering is deferred to
// the output.
func TestAppendCanonicalInPlaceWhateverItChanges(t *testing.T) {
	for _, in := range []string{
		`{"a":[1,"x",{"b":null}],"b":true}`,
		` {"a":[1,"x",{"b":null}],"b":true} `,
		`{"b":1,"a":{"d":[1,2],"c":"\u00e9"}}`,
		string(nestedUnsorted()),
	} {
		want, err := fingerprint.Canonical([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		buf := []byte(in)
		got, err := fingerprint.AppendCanonical(buf[:0], buf)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("AppendCanonical in place of %.40s = %.60s, want %.60s", in, got, want)
		}
	}
}

func TestCanonicalReturnsNilOnError(t *testing.T) {
	got, err := fingerprint.Canonical([]byte("[1,"))
	if err == nil || got != nil {
		t.Errorf("Canonical = %q, %v; want nil and an error", got, err)
	}
}

func TestCanonicalDoesNotModifyInput(t *testing.T) {
	in := []byte(`{"z":[1.0,"\u00e9"],"a":{"y":1,"x":2}}`)
	orig := bytes.Clone(in)
	if _, err := fingerprint.Canonical(in); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(in, orig) {
		t.Errorf("input changed to %q", in)
	}
}
