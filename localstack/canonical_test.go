package localstack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// referenceCanonical is the canonical form by encoding/json: the body
// decoded (numbers as written), ClientRequestToken deleted, and encoded
// again (which sorts object members).
func referenceCanonical(body []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v map[string]any
	if dec.Decode(&v) != nil || dec.More() || v == nil {
		return nil, false
	}
	delete(v, "ClientRequestToken")
	b, err := json.Marshal(v)
	return b, err == nil
}

// randomJSON writes a random JSON value of at most depth levels, with
// names and strings from a small alphabet so that values often repeat,
// in a random member order and spacing, sometimes repeating a member.
func randomJSON(r *rand.Rand, sb *strings.Builder, depth int) {
	space := func() {
		if r.IntN(4) == 0 {
			sb.WriteString([]string{" ", "\n", "\t", "  "}[r.IntN(4)])
		}
	}
	str := func() {
		sb.WriteString([]string{`"a"`, `"b"`, `"ClientRequestToken"`, `"\u0061"`, `"é"`, `"\u00e9"`, `"a\"b"`, `""`, `"S"`, `"N"`}[r.IntN(10)])
	}
	space()
	switch k := r.IntN(8); {
	case depth > 0 && k < 2:
		sb.WriteByte('{')
		for i := range r.IntN(4) {
			if i > 0 {
				sb.WriteByte(',')
			}
			space()
			str()
			space()
			sb.WriteByte(':')
			randomJSON(r, sb, depth-1)
		}
		space()
		sb.WriteByte('}')
	case depth > 0 && k < 4:
		sb.WriteByte('[')
		for i := range r.IntN(4) {
			if i > 0 {
				sb.WriteByte(',')
			}
			randomJSON(r, sb, depth-1)
		}
		sb.WriteByte(']')
	case k == 4:
		sb.WriteString([]string{"1", "1.0", "-2e3", "0", "10"}[r.IntN(5)])
	case k == 5:
		sb.WriteString([]string{"true", "false", "null"}[r.IntN(3)])
	default:
		str()
	}
	space()
}

func TestRequestDigestEqualsExactlyWhenTheCanonicalJSONDoes(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 0))
	bodies := make([][]byte, 0, 400)
	for len(bodies) < cap(bodies) {
		var sb strings.Builder
		sb.WriteString(`{"ClientRequestToken":"t` + fmt.Sprint(r.IntN(3)) + `","TransactItems":`)
		randomJSON(r, &sb, 3)
		if r.IntN(2) == 0 {
			sb.WriteString(`,"x":`)
			randomJSON(r, &sb, 2)
		}
		sb.WriteByte('}')
		bodies = append(bodies, []byte(sb.String()))
	}
	refs := make([][]byte, len(bodies))
	digests := make([][32]byte, len(bodies))
	for i, b := range bodies {
		ref, ok := referenceCanonical(b)
		if !ok {
			t.Fatalf("generated body is not a JSON object: %s", b)
		}
		refs[i], digests[i] = ref, requestDigest(b)
	}
	equal := 0
	for i := range bodies {
		for j := range i + 1 {
			want := bytes.Equal(refs[i], refs[j])
			if got := digests[i] == digests[j]; got != want {
				t.Fatalf("digests equal: %v, canonical JSON equal: %v\n%s\n%s", got, want, bodies[i], bodies[j])
			}
			if want {
				equal++
			}
		}
	}
	if equal < len(bodies)+50 {
		t.Errorf("only %d equal pairs among %d bodies (the generator repeats too little)", equal, len(bodies))
	}
	for _, tc := range []struct {
		a, b  string
		equal bool
	}{
		{`{"a":1,"a":2}`, `{"a":2}`, true},
		{`{"a":1,"a":2}`, `{"a":1}`, false},
		{`{"b":1,"a":2,"b":3}`, `{"a":2,"b":3}`, true},
		{`{"b":[1,{"d":1,"c":2}],"a":2}`, ` { "a" : 2 , "b" : [ 1 , { "c" : 2 , "d" : 1 } ] } `, true},
		{`{"b":[1,2]}`, `{"b":[2,1]}`, false},
		{`{"\u0061":"\u00e9"}`, `{"a":"é"}`, true},
		{`{"ClientRequestToken":"x","a":1}`, `{"a":1,"ClientRequestToken":"y"}`, true},
		{`{"a":{"ClientRequestToken":"x"}}`, `{"a":{}}`, false},
		{`{"a":1}`, `{"a":1.0}`, false},
		{`{"a":"1"}`, `{"a":1}`, false},
		{`{"a":[]}`, `{"a":{}}`, false},
		{`{"a":null}`, `{}`, false},
		{`{"ab":"c"}`, `{"a":"bc"}`, false},
	} {
		if got := requestDigest([]byte(tc.a)) == requestDigest([]byte(tc.b)); got != tc.equal {
			t.Errorf("digests of %s and %s equal: %v, want %v", tc.a, tc.b, got, tc.equal)
		}
	}
	for _, bad := range []string{`{`, `{"a":}`, `{"a":1,}`, `[1]`, `{"a":"\x01"}`, `{"a":tru}`, `{"a":1} x`, `{"a" 1}`, `{"a":[1 2]}`} {
		if _, ok := new(canonicalizer).request(nil, []byte(bad)); ok {
			t.Errorf("the canonical encoding accepted %q, which is not a JSON object", bad)
		}
	}
}
