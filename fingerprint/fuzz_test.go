package fingerprint_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"mime"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gowebpki/jcs"

	"github.com/idemkey/idemkey/fingerprint"
)

// fuzzSeeds returns the RFC 8785 vectors and inputs near the edges of the
// grammar, the number rule and the name order.
func fuzzSeeds(f *testing.F) [][]byte {
	seeds := [][]byte{
		[]byte(`{}`), []byte(`[]`), []byte(`null`), []byte(`true`), []byte(`false`),
		[]byte(`0`), []byte(`-0.0e-0`), []byte(`-1.5e-7`), []byte(`1e21`), []byte(`1e20`),
		[]byte(`[1e21,1e-6,1e-7,5e-324,1.7976931348623157e308,9007199254740993,0.1]`),
		[]byte(`[333333333.33333329,1E30,4.50,2e-3,1e400,1e-400]`),
		[]byte(`{"b":{"d":[{"f":1,"e":2}],"c":0},"a":[]}`),
		[]byte("{\"\ue000\":1,\"\U0001F600\":2,\"\u00e9\":3,\"e\":4}"),
		[]byte(`"\u0000\u001f\b\f\n\r\t\"\\\/\u2028\ud83d\ude00"`),
		[]byte(`{"a":1,"a":2}`), []byte(`"\ud800"`), []byte("\"\xff\""),
		[]byte(" \t\n\r[ 1 , 2 ] \n"), []byte(`[1,]`), []byte(`{"a":1,}`),
		[]byte(`1e999999999`), []byte(`1e1000000000`),
	}
	for _, name := range rfc8785Vectors {
		seeds = append(seeds, readVector(f, "input", name), readVector(f, "output", name))
	}
	return seeds
}

// FuzzCanonical checks that AppendCanonical never panics, that what it
// accepts a strict JSON parser accepts too, that its output is valid JSON
// and UTF-8 and is its own canonical form, and that its errors are
// *SyntaxError values with an offset inside the input.
func FuzzCanonical(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := fingerprint.Canonical(in)
		if err != nil {
			var se *fingerprint.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %v (%T) is not a *SyntaxError", err, err)
			}
			if se.Offset < 0 || se.Offset > int64(len(in)) {
				t.Fatalf("offset %d outside input of length %d", se.Offset, len(in))
			}
			if out != nil {
				t.Fatalf("output %q returned with error", out)
			}
			return
		}
		if !json.Valid(in) {
			t.Fatalf("accepted %q, which encoding/json rejects", in)
		}
		if !utf8.Valid(out) || !json.Valid(out) {
			t.Fatalf("output %q of %q is not valid UTF-8 JSON", out, in)
		}
		again, err := fingerprint.Canonical(out)
		if err != nil {
			t.Fatalf("output %q of %q rejected: %v", out, in, err)
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q -> %q -> %q", in, out, again)
		}
		prefixed, err := fingerprint.AppendCanonical([]byte("prefix"), in)
		if err != nil || string(prefixed) != "prefix"+string(out) {
			t.Fatalf("AppendCanonical = %q, %v; want prefix + %q", prefixed, err, out)
		}
	})
}

// FuzzCanonicalMatchesJCS compares AppendCanonical with the RFC 8785
// implementation github.com/gowebpki/jcs. Where every number in the input is
// exactly the shortest round-trip decimal of a double, both must accept the
// same inputs and produce the same bytes, except for the documented depth
// bound. Where some number is not, only this package may accept, and only
// because of that number.
func FuzzCanonicalMatchesJCS(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		want, jerr := jcs.Transform(in)
		got, err := fingerprint.Canonical(in)
		exact, known := numbersExact(in)
		switch {
		case jerr != nil && err != nil:
			return
		case jerr != nil:
			if known && exact {
				t.Fatalf("accepted %q, which jcs rejects: %v", in, jerr)
			}
			return
		case err != nil:
			if errors.Is(err, fingerprint.ErrTooDeep) || errors.Is(err, fingerprint.ErrNumberRange) {
				return // deliberately stricter: MaxDepth and MaxExponent
			}
			t.Fatalf("rejected %q, which jcs accepts as %q: %v", in, want, err)
		}
		if !known || !exact {
			return
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("Canonical(%q)\n got %q\njcs  %q", in, got, want)
		}
	})
}

// numbersExact reports whether every number in the JSON text in is exactly
// the shortest decimal that rounds to its nearest double, the case in which
// this package and RFC 8785 agree. known is false when that cannot be told
// cheaply: the text does not tokenise, or an exponent is very large.
func numbersExact(in []byte) (exact, known bool) {
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	exact = true
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return exact, true
		}
		if err != nil {
			return false, false
		}
		n, ok := tok.(json.Number)
		if !ok {
			continue
		}
		e, k := numberExact(string(n))
		if !k {
			return false, false
		}
		exact = exact && e
	}
}

func numberExact(lit string) (exact, known bool) {
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		exp := strings.TrimLeft(lit[i+1:], "+-0")
		if len(exp) > 4 {
			return false, false // big.Rat would build a huge power of ten
		}
	}
	value, ok := new(big.Rat).SetString(lit)
	if !ok {
		return false, false
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return false, true // beyond the doubles: not exact
	}
	nearest, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'e', -1, 64))
	if !ok {
		return false, false
	}
	return value.Cmp(nearest) == 0, true
}

// FuzzRequestDigest checks that Request.Digest never panics, is a function
// of its input, gives a JSON body of a JSON media type the digest of its
// canonical form, and hashes the body of any other media type raw.
func FuzzRequestDigest(f *testing.F) {
	f.Add("POST", "/orders", "b=2&a=1", "application/json", []byte(`{"b":1,"a":[1.0,"x"]}`))
	f.Add("POST", "/orders", "", "Application/Problem+JSON; Charset=UTF-8", []byte(`{"b":1}`))
	f.Add("POST", "/orders", "", "text/plain; charset=utf-8", []byte(`1.0`))
	f.Add("PUT", "/x", "a=%zz", "", []byte("\x00\xff raw"))
	f.Add("", "", "", "", []byte(nil))
	f.Add("POST", "/", "a;b", "a/b; c=1; c=2", []byte(`{"a":1,"a":2}`))
	f.Fuzz(func(t *testing.T, method, path, query, contentType string, body []byte) {
		r := fingerprint.Request{Method: method, Path: path, Query: query, ContentType: contentType, Body: body}
		d := r.Digest()
		if again := r.Digest(); again != d {
			t.Fatalf("digest changed between calls: %s, %s", d, again)
		}
		canonical, err := fingerprint.Canonical(body)
		if err != nil || string(canonical) == string(body) {
			return
		}
		r.Body = canonical
		isJSON := jsonMediaType(contentType)
		if same := r.Digest() == d; same != isJSON {
			t.Fatalf("content type %q (JSON: %v): body %q and its canonical form %q give equal digests: %v",
				contentType, isJSON, body, canonical, same)
		}
	})
}

// jsonMediaType is the documented rule for a JSON media type, written
// independently of the implementation.
func jsonMediaType(contentType string) bool {
	t, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	typ, sub, ok := strings.Cut(t, "/")
	if !ok || typ == "" {
		return false
	}
	return t == "application/json" || (len(sub) > len("+json") && strings.HasSuffix(sub, "+json"))
}
