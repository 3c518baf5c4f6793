package handler_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/idemkey/idemkey/handler"
)

func TestParseKeyAcceptsSfStringsAndBareTokens(t *testing.T) {
	for in, want := range map[string]string{
		`"abc"`:                              "abc",
		`abc`:                                "abc",
		`  "a b c"  `:                        "a b c",
		`"a\"b\\c"`:                          `a"b\c`,
		`8e03978e-40d5-43e8`:                 "8e03978e-40d5-43e8",
		`"` + strings.Repeat("k", 255) + `"`: strings.Repeat("k", 255),
		strings.Repeat("k", 255):             strings.Repeat("k", 255),
	} {
		got, err := handler.ParseKey(in)
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, got, in)
		}
	}
}

func TestParseKeyRejectsMalformedValues(t *testing.T) {
	for _, in := range []string{
		``, `   `, `""`, `"abc`, `"abc"def`, `"abc";p=1`, `"a\nb"`, `"a\qb"`, `"é"`,
		`a b`, `a"b`, `a\b`, "a\x00b", "caf\xc3\xa9",
		`"` + strings.Repeat("k", 256) + `"`, strings.Repeat("k", 256),
	} {
		_, err := handler.ParseKey(in)
		assert.ErrorIs(t, err, handler.ErrInvalidKey, "%q", in)
		var ke *handler.KeyError
		assert.ErrorAs(t, err, &ke, "%q", in)
	}
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{`"abc"`, `abc`, `"a\"b"`, `""`, `"`, `\`, strings.Repeat("x", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		key, err := handler.ParseKey(v)
		if err != nil {
			return
		}
		if len(key) == 0 || len(key) > handler.MaxKeyLength {
			t.Fatalf("accepted key of length %d from %q", len(key), v)
		}
		for i := 0; i < len(key); i++ {
			if key[i] < 0x20 || key[i] > 0x7e {
				t.Fatalf("accepted non-printable byte %#x from %q", key[i], v)
			}
		}
		// Quoting the key as an sf-string gives it back.
		quoted := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
		again, err := handler.ParseKey(quoted)
		if err != nil || again != key {
			t.Fatalf("round trip of %q: %q, %v", key, again, err)
		}
	})
}
