package fingerprint_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/idemkey/idemkey/fingerprint"
)

const propertyRounds = 3000

// Every random spelling of a random value canonicalises to what the model
// oracle writes from the package's definition.
func TestCanonicalMatchesModelOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	g := &gen{r: r, maxDepth: 5}
	for range propertyRounds {
		v := g.value(0)
		in := spellJSON(r, v)
		want := modelCanonical(v)
		got, err := fingerprint.Canonical([]byte(in))
		if err != nil {
			t.Fatalf("Canonical(%q): %v", in, err)
		}
		if string(got) != want {
			t.Fatalf("Canonical(%q)\n got %q\nwant %q", in, got, want)
		}
		if !json.Valid(got) {
			t.Fatalf("Canonical(%q) = %q is not valid JSON", in, got)
		}
	}
}

// On documents whose numbers are all shortest round-trip decimals of
// doubles, the output is byte-identical to RFC 8785 as implemented by
// github.com/gowebpki/jcs.
func TestCanonicalMatchesJCSOnDocumentsOfDoubles(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	g := &gen{r: r, maxDepth: 5, doubles: true}
	for range propertyRounds {
		v := g.value(0)
		in := spellJSON(r, v)
		if exact, known := numbersExact([]byte(in)); !exact || !known {
			t.Fatalf("generated a number that is not exact: %q", in)
		}
		want, err := jcs.Transform([]byte(in))
		if err != nil {
			t.Fatalf("jcs.Transform(%q): %v", in, err)
		}
		got, err := fingerprint.Canonical([]byte(in))
		if err != nil {
			t.Fatalf("Canonical(%q): %v", in, err)
		}
		if string(got) != string(want) {
			t.Fatalf("Canonical(%q)\n got %q\n jcs %q", in, got, want)
		}
	}
}

// Member order, whitespace, escapes and number notation never change a
// digest.
func TestDigestIgnoresSpelling(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	g := &gen{r: r, maxDepth: 5}
	for range propertyRounds {
		v := g.value(0)
		a, b := spellJSON(r, v), spellJSON(r, v)
		da, err := fingerprint.JSON([]byte(a))
		if err != nil {
			t.Fatalf("JSON(%q): %v", a, err)
		}
		db, err := fingerprint.JSON([]byte(b))
		if err != nil {
			t.Fatalf("JSON(%q): %v", b, err)
		}
		if da != db {
			t.Fatalf("JSON digests differ for\n%q\n%q", a, b)
		}
		ra := fingerprint.Request{Method: "POST", Path: "/orders", ContentType: "application/json", Body: []byte(a)}
		rb := fingerprint.Request{Method: "POST", Path: "/orders", ContentType: "application/json", Body: []byte(b)}
		if ra.Digest() != rb.Digest() {
			t.Fatalf("request digests differ for bodies\n%q\n%q", a, b)
		}
	}
}

// Changing any scalar (a string character, a number, true to false, null
// to 0) or any member name changes the digest.
func TestDigestChangesWithAnyScalarOrName(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	g := &gen{r: r, maxDepth: 4}
	mutated := 0
	for range propertyRounds {
		v := g.value(0)
		before := spellJSON(r, v)
		sites := mutationSites(&v)
		if len(sites) == 0 {
			continue // an empty array or object has nothing to change
		}
		sites[r.IntN(len(sites))](r)
		after := spellJSON(r, v)

		d1, err := fingerprint.JSON([]byte(before))
		if err != nil {
			t.Fatalf("JSON(%q): %v", before, err)
		}
		d2, err := fingerprint.JSON([]byte(after))
		if err != nil {
			t.Fatalf("JSON(%q): %v", after, err)
		}
		if d1 == d2 {
			t.Fatalf("equal digests after a change:\n%q\n%q", before, after)
		}
		r1 := fingerprint.Request{Method: "POST", Path: "/", ContentType: "application/json", Body: []byte(before)}
		r2 := fingerprint.Request{Method: "POST", Path: "/", ContentType: "application/json", Body: []byte(after)}
		if r1.Digest() == r2.Digest() {
			t.Fatalf("equal request digests after a change:\n%q\n%q", before, after)
		}
		mutated++
	}
	if mutated < propertyRounds/2 {
		t.Fatalf("only %d of %d rounds mutated", mutated, propertyRounds)
	}
}

// Two numbers canonicalise alike exactly when the model says their values
// are equal: drawing from few digits and exponents makes equal values common.
func TestCanonicalNumbersEqualExactlyWhenValuesEqual(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	s := &speller{r}
	pick := func() num {
		digits := []string{"", "1", "12", "2", "1000000000000000000001"}[r.IntN(5)]
		return num{neg: r.IntN(4) == 0, digits: digits, exp: r.IntN(5) - 2}
	}
	equalSeen, differentSeen := 0, 0
	for range 20_000 {
		a, b := pick(), pick()
		var sa, sb stringsBuilder
		s.num(&sa.Builder, a)
		s.num(&sb.Builder, b)
		ca, err := fingerprint.Canonical([]byte(sa.String()))
		if err != nil {
			t.Fatalf("Canonical(%s): %v", sa.String(), err)
		}
		cb, err := fingerprint.Canonical([]byte(sb.String()))
		if err != nil {
			t.Fatalf("Canonical(%s): %v", sb.String(), err)
		}
		same := a.digits == b.digits && (a.digits == "" || a.exp == b.exp && a.neg == b.neg)
		if (string(ca) == string(cb)) != same {
			t.Fatalf("%s -> %s and %s -> %s; values equal: %v", sa.String(), ca, sb.String(), cb, same)
		}
		if same {
			equalSeen++
		} else {
			differentSeen++
		}
	}
	if equalSeen < 100 || differentSeen < 100 {
		t.Fatalf("degenerate sample: %d equal, %d different", equalSeen, differentSeen)
	}
}
