package fingerprint_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/fingerprint"
)

// field is the length-prefixed encoding of the documented digest layout.
func field(s string) []byte {
	return append(binary.BigEndian.AppendUint64(nil, uint64(len(s))), s...)
}

// layoutDigest builds a request digest from the layout documented on
// Request.Digest, independently of the implementation.
func layoutDigest(method, path string, queryTag byte, query string, mediaTag byte, media string, bodyTag byte, body string) fingerprint.Digest {
	var b []byte
	b = append(b, field("idemkey/fingerprint/v2/request")...)
	b = append(b, field(method)...)
	b = append(b, field(path)...)
	b = append(append(b, queryTag), field(query)...)
	b = append(append(b, mediaTag), field(media)...)
	b = append(append(b, bodyTag), field(body)...)
	return sha256.Sum256(b)
}

func TestRequestDigestFollowsDocumentedLayout(t *testing.T) {
	for _, c := range []struct {
		req  fingerprint.Request
		want fingerprint.Digest
	}{
		{
			fingerprint.Request{Method: "POST", Path: "/orders", Query: "b=2&a=1", ContentType: "application/json", Body: []byte(`{"y":1, "x":[1.0]}`)},
			layoutDigest("POST", "/orders", 'f', "a=1&b=2", 'm', "application/json", 'j', `{"x":[1],"y":1}`),
		},
		{
			fingerprint.Request{Method: "PUT", Path: "/p", Query: "a=%zz", ContentType: "application/json", Body: []byte(`{"x":`)},
			layoutDigest("PUT", "/p", 'r', "a=%zz", 'm', "application/json", 'r', `{"x":`),
		},
		{
			fingerprint.Request{Method: "POST"},
			layoutDigest("POST", "", 'f', "", 'r', "", 'r', ""),
		},
		{
			fingerprint.Request{Method: "POST", ContentType: " Application/Merge-Patch+JSON; Charset=UTF-8 ", Body: []byte(`{"b":1,"a":2}`)},
			layoutDigest("POST", "", 'f', "", 'm', "application/merge-patch+json", 'j', `{"a":2,"b":1}`),
		},
		{
			fingerprint.Request{Method: "POST", ContentType: `Text/Plain; Format=Flowed; CHARSET="UTF-8"`, Body: []byte(`1.0`)},
			layoutDigest("POST", "", 'f', "", 'm', "text/plain; charset=utf-8; format=Flowed", 'r', `1.0`),
		},
		{
			fingerprint.Request{Method: "POST", ContentType: "text/plain; charset=a; charset=b", Body: []byte(`1`)},
			layoutDigest("POST", "", 'f', "", 'r', "text/plain; charset=a; charset=b", 'r', `1`),
		},
	} {
		if got := c.req.Digest(); got != c.want {
			t.Errorf("%+v: Digest = %s, want %s", c.req, got, c.want)
		}
	}
}

// The encoding is part of what idemkey stores: a change to it must be a
// deliberate new version, not an accident.
func TestRequestDigestIsStableAcrossReleases(t *testing.T) {
	req := fingerprint.Request{Method: "POST", Path: "/v1/payments", Query: "currency=EUR", ContentType: "application/json", Body: []byte(`{"amount":100,"to":"acct_1"}`)}
	const want = "e1adfc69ffc312a44d1f8a04123acc438a2c316fb96d1da579cd1e43d0fea7c2"
	if got := req.Digest().String(); got != want {
		t.Errorf("Digest = %s, want %s", got, want)
	}
}

func TestJSONDigestIsStableAcrossReleases(t *testing.T) {
	d, err := fingerprint.JSON([]byte(`{"detail":{"id":"42"},"source":"aws.events"}`))
	if err != nil {
		t.Fatal(err)
	}
	const want = "4fc099e51a1355b47afcf0d1b62b09cd8f370b59d24f5fa4bc95a3b7ffa0fd72"
	if got := d.String(); got != want {
		t.Errorf("JSON digest = %s, want %s", got, want)
	}
}

func TestRequestDigestSeparatesFields(t *testing.T) {
	pairs := [][2]fingerprint.Request{
		{{Method: "PO", Path: "ST/x"}, {Method: "POST", Path: "/x"}},
		{{Method: "POST", Path: "/a?b=1"}, {Method: "POST", Path: "/a", Query: "b=1"}},
		{{Method: "POST", Path: "/a", Query: "b"}, {Method: "POST", Path: "/ab"}},
		{{Method: "POST", Query: "a=1", Body: []byte("x")}, {Method: "POST", Query: "a=1x"}},
		{{Method: "POST", Path: "/x", Body: []byte("1")}, {Method: "POST", Path: "/x1"}},
		{{Method: "POST"}, {Method: "post"}},
		{{Method: "POST", Path: "/x"}, {Method: "POST", Path: "/X"}},
		{{Method: "POST", Path: "/x", Body: []byte("")}, {Method: "POST", Path: "/x", Body: []byte(`""`)}},
		{{Method: "POST", ContentType: "a/b", Body: []byte("x")}, {Method: "POST", ContentType: "a/bx"}},
		{{Method: "POST", ContentType: "a/b"}, {Method: "POST", Path: "a/b"}},
	}
	for _, p := range pairs {
		if p[0].Digest() == p[1].Digest() {
			t.Errorf("equal digests for %+v and %+v", p[0], p[1])
		}
	}
}

// A body that is JSON is hashed with the JSON tag, so it can never collide
// with a raw body that has the same bytes as its canonical form.
func TestRequestDigestTagsJSONAndRawBodiesApart(t *testing.T) {
	canonical := `{"a":1}`
	got := fingerprint.Request{Method: "POST", ContentType: "application/json", Body: []byte(canonical)}.Digest()
	if got != layoutDigest("POST", "", 'f', "", 'm', "application/json", 'j', canonical) {
		t.Error("JSON body not hashed under the JSON tag")
	}
	if got == layoutDigest("POST", "", 'f', "", 'm', "application/json", 'r', canonical) {
		t.Error("JSON body hashed like a raw body")
	}
}

func TestRequestDigestHashesNonJSONBodiesRaw(t *testing.T) {
	for _, body := range []string{
		"", `{"a":1`, `{"a":1,"a":2}`, "hello world", "\x00\x01\xff\xfe", "  ", "\"\xff\"",
		strings.Repeat("[", fingerprint.MaxDepth+1) + strings.Repeat("]", fingerprint.MaxDepth+1),
	} {
		got := fingerprint.Request{Method: "POST", ContentType: "application/json", Body: []byte(body)}.Digest()
		if want := layoutDigest("POST", "", 'f', "", 'm', "application/json", 'r', body); got != want {
			t.Errorf("body %.20q: Digest = %s, want the raw digest %s", body, got, want)
		}
	}
}

func TestRequestDigestComparesJSONBodiesByMeaning(t *testing.T) {
	same := []string{
		`{"amount":100,"currency":"EUR","items":[{"sku":"a","qty":1}]}`,
		`{ "items" : [ { "qty" : 1.0, "sku" : "\u0061" } ], "currency" : "EUR", "amount" : 1e2 }`,
		"{\n\t\"currency\": \"\\u0045UR\",\n\t\"amount\": 100,\n\t\"items\": [{\"qty\": 10e-1, \"sku\": \"a\"}]\n}\n",
	}
	want := fingerprint.Request{Method: "POST", Path: "/orders", ContentType: "application/json", Body: []byte(same[0])}.Digest()
	for _, body := range same[1:] {
		if got := (fingerprint.Request{Method: "POST", Path: "/orders", ContentType: "application/json", Body: []byte(body)}).Digest(); got != want {
			t.Errorf("body %q: digest differs from %q", body, same[0])
		}
	}
	for _, body := range []string{
		`{"amount":101,"currency":"EUR","items":[{"sku":"a","qty":1}]}`,
		`{"amount":100,"currency":"EUR","items":[{"sku":"a","qty":1}],"x":null}`,
		`{"amount":"100","currency":"EUR","items":[{"sku":"a","qty":1}]}`,
		`{"amount":100,"currency":"eur","items":[{"sku":"a","qty":1}]}`,
		`{"amount":100,"currency":"EUR","items":[{"qty":1,"sku":"a"},{"qty":1,"sku":"a"}]}`,
	} {
		if got := (fingerprint.Request{Method: "POST", Path: "/orders", ContentType: "application/json", Body: []byte(body)}).Digest(); got == want {
			t.Errorf("body %q: digest equals that of %q", body, same[0])
		}
	}
}

func TestRequestDigestDistinguishesNumbersDoublesConflate(t *testing.T) {
	a := fingerprint.Request{Method: "POST", ContentType: "application/json", Body: []byte(`{"id":9007199254740993}`)}.Digest()
	b := fingerprint.Request{Method: "POST", ContentType: "application/json", Body: []byte(`{"id":9007199254740992}`)}.Digest()
	if a == b {
		t.Error("9007199254740993 and 9007199254740992 give the same digest")
	}
}

func TestRequestDigestTreatsNumericEquivalentsAsEqual(t *testing.T) {
	var first fingerprint.Digest
	for i, n := range []string{"1", "1.0", "1e0", "10e-1", "0.1e1", "1.000E+0"} {
		d := fingerprint.Request{Method: "POST", ContentType: "application/json", Body: []byte(`{"n":` + n + `}`)}.Digest()
		if i == 0 {
			first = d
		} else if d != first {
			t.Errorf("%s: digest differs from that of 1", n)
		}
	}
}

func TestRequestDigestComparesQueryParameters(t *testing.T) {
	digest := func(q string) fingerprint.Digest {
		return fingerprint.Request{Method: "GET", Path: "/", Query: q}.Digest()
	}
	for _, eq := range [][2]string{
		{"a=1&b=2", "b=2&a=1"},
		{"a=1&b=2&a=3", "b=2&a=1&a=3"},
		{"a=%41", "a=A"},
		{"q=a+b", "q=a%20b"},
		{"a", "a="},
		{"", "&"},
	} {
		if digest(eq[0]) != digest(eq[1]) {
			t.Errorf("queries %q and %q differ", eq[0], eq[1])
		}
	}
	for _, ne := range [][2]string{
		{"a=1&a=2", "a=2&a=1"}, // repeated values keep their order
		{"a=1", "a=2"},
		{"a=1", "A=1"},
		{"a=1", ""},
		{"a=%zz&b=1", "b=1&a=%zz"}, // unparseable: compared raw
		{"a=1;b=2", "a=1&b=2"},
		{"a=%zz", "a=%25zz"},
	} {
		if digest(ne[0]) == digest(ne[1]) {
			t.Errorf("queries %q and %q are equal", ne[0], ne[1])
		}
	}
}

func TestRequestDigestTreatsNilAndEmptyBodyAlike(t *testing.T) {
	a := fingerprint.Request{Method: "POST", Path: "/x"}.Digest()
	b := fingerprint.Request{Method: "POST", Path: "/x", Body: []byte{}}.Digest()
	if a != b {
		t.Error("nil and empty bodies differ")
	}
}

func TestJSONDigestUsesItsOwnDomain(t *testing.T) {
	body := []byte(`{"a":1}`)
	d, err := fingerprint.JSON(body)
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(append(field("idemkey/fingerprint/v1/json"), field(`{"a":1}`)...))
	if d != want {
		t.Errorf("JSON = %s, want %s", d, hex.EncodeToString(want[:]))
	}
	if d == (fingerprint.Request{ContentType: "application/json", Body: body}).Digest() {
		t.Error("JSON digest equals a request digest")
	}
}

func TestJSONDigestRejectsInvalidJSON(t *testing.T) {
	d, err := fingerprint.JSON([]byte(`{"a":1,"a":2}`))
	if !errors.Is(err, fingerprint.ErrDuplicateName) {
		t.Errorf("error = %v, want ErrDuplicateName", err)
	}
	if d != (fingerprint.Digest{}) {
		t.Errorf("digest = %s, want zero on error", d)
	}
}

func TestDigestStringIsLowercaseHex(t *testing.T) {
	d := fingerprint.Request{Method: "POST"}.Digest()
	s := d.String()
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(s) {
		t.Errorf("String = %q", s)
	}
	if b, err := hex.DecodeString(s); err != nil || string(b) != string(d[:]) {
		t.Errorf("String %q does not decode to the digest", s)
	}
}

func TestEqualComparesBytes(t *testing.T) {
	a := fingerprint.Request{Method: "POST", Body: []byte("x")}.Digest()
	b := fingerprint.Request{Method: "POST", Body: []byte("y")}.Digest()
	switch {
	case !fingerprint.Equal(a[:], a[:]):
		t.Error("digest not equal to itself")
	case fingerprint.Equal(a[:], b[:]):
		t.Error("different digests are equal")
	case fingerprint.Equal(a[:], a[:31]):
		t.Error("digest equal to its prefix")
	case !fingerprint.Equal([]byte(a.String()), []byte(a.String())):
		t.Error("hex form not equal to itself")
	case !fingerprint.Equal(nil, []byte{}):
		t.Error("nil and empty differ")
	}
}

// JSON and Request.Digest hash the canonical text where it lies, putting
// the members of deferred objects in order on the way through a bounded
// buffer; the digest must equal that of the text Canonical returns, for
// pieces shorter and longer than the buffer and for texts that need no
// change at all.
func TestDigestsHashTheCanonicalText(t *testing.T) {
	long := strings.Repeat("x", 20<<10)
	for name, in := range map[string][]byte{
		"small":        []byte(`{"b":1,"a":2}`),
		"canonical":    []byte(`{"a":[1,"x",{"b":null}],"b":true}`),
		"records":      genBody(64 << 10),
		"records-1MiB": genBody(1 << 20),
		"nested":       nestedUnsorted(),
		"long-members": []byte(`{"z":"` + long + `","y":{"b":"` + long[:600] + `","a":[1,{"d":0,"c":"` + long[:3000] + `"}]},"x":0}`),
	} {
		canon, err := fingerprint.Canonical(in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		d, err := fingerprint.JSON(in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := sha256.Sum256(append(field("idemkey/fingerprint/v1/json"), field(string(canon))...)); d != want {
			t.Errorf("%s: JSON digest differs from the digest of the canonical text", name)
		}
		r := fingerprint.Request{Method: "POST", Path: "/p", ContentType: "application/json", Body: in}
		if got, want := r.Digest(), layoutDigest("POST", "/p", 'f', "", 'm', "application/json", 'j', string(canon)); got != want {
			t.Errorf("%s: request digest differs from the digest of the canonical text", name)
		}
	}
}
