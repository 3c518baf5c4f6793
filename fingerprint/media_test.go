package fingerprint_test

import (
	"testing"

	"github.com/idemkey/idemkey/fingerprint"
)

func post(contentType, body string) fingerprint.Digest {
	return fingerprint.Request{Method: "POST", Path: "/orders", ContentType: contentType, Body: []byte(body)}.Digest()
}

// Only a JSON media type makes a body JSON: "1.0" and "1.00" are the same
// JSON number but different text.
func TestRequestDigestComparesNonJSONMediaTypesByteForByte(t *testing.T) {
	for _, ne := range []struct{ contentType, a, b string }{
		{"text/plain", "1.0", "1.00"},
		{"text/plain; charset=utf-8", `{"a":1,"b":2}`, `{"b":2,"a":1}`},
		{"application/x-www-form-urlencoded", `{"a":1}`, `{ "a": 1 }`},
		{"application/octet-stream", "[1]", "[1.0]"},
		{"", `{"a":1,"b":2}`, `{"b":2,"a":1}`},
		{"application/jsonx", "1.0", "1.00"},
		{"application/+json", "1.0", "1.00"},
		{"json", "1.0", "1.00"},
		{"application/json; charset", "1.0", "1.00"}, // does not parse: not a JSON media type
	} {
		if post(ne.contentType, ne.a) == post(ne.contentType, ne.b) {
			t.Errorf("%q: bodies %q and %q give the same digest", ne.contentType, ne.a, ne.b)
		}
	}
}

func TestRequestDigestComparesJSONMediaTypesByMeaning(t *testing.T) {
	for _, contentType := range []string{
		"application/json", "application/json; charset=utf-8", "application/problem+json",
		"application/merge-patch+json", "text/vnd.example+json", "APPLICATION/JSON",
	} {
		if post(contentType, `{"a":1.0,"b":[2]}`) != post(contentType, "{ \"b\" : [ 2 ], \"a\" : 1 }\n") {
			t.Errorf("%q: member order, spacing or number spelling changed the digest", contentType)
		}
	}
}

// The same bytes declared as different media types are different requests.
func TestRequestDigestBindsTheMediaType(t *testing.T) {
	types := []string{
		"",
		"application/json",
		"application/json; charset=iso-8859-1",
		"application/merge-patch+json",
		"application/x-www-form-urlencoded",
		"text/plain",
		"text/plain; charset=utf-8",
		"text/plain; charset=iso-8859-1",
		"multipart/form-data; boundary=AbC",
		"multipart/form-data; boundary=abc",
		"text/plain; charset=a; charset=b", // does not parse: compared as sent
	}
	for _, body := range []string{`{"a":1}`, "1.0", ""} {
		seen := map[fingerprint.Digest]string{}
		for _, ct := range types {
			d := post(ct, body)
			if other, ok := seen[d]; ok {
				t.Errorf("body %q: %q and %q give the same digest", body, other, ct)
			}
			seen[d] = ct
		}
	}
}

// Spellings of one media type are one media type. For JSON, whose text is
// UTF-8 by definition (RFC 8259), "charset=utf-8" says nothing and is
// ignored, whatever its case or quoting.
func TestRequestDigestNormalisesMediaTypes(t *testing.T) {
	for _, same := range [][]string{
		{"application/json", "Application/JSON", " application/json\t", "application/json;", "application/json; charset=utf-8",
			`application/json;charset="UTF-8"`, "APPLICATION/JSON; CHARSET=Utf-8"},
		{"application/problem+json", "application/problem+json; charset=UTF-8"},
		{"text/plain; charset=utf-8", `TEXT/Plain;Charset="UTF-8"`, "text/plain ; charset=UTF-8"},
		{"a/b; x=1; y=2", "a/b;y=2;x=1", "A/B; Y=2; X=1"},
		{"text/plain; charset=a; charset=b", " text/plain; charset=a; charset=b "},
	} {
		for _, body := range []string{`{"a":1}`, "1.0"} {
			want := post(same[0], body)
			for _, ct := range same[1:] {
				if post(ct, body) != want {
					t.Errorf("body %q: %q and %q give different digests", body, same[0], ct)
				}
			}
		}
	}
}
