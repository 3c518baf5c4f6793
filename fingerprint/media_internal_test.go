package fingerprint

import (
	"mime"
	"testing"
)

// FuzzMediaTypeShortcut checks that the shortcut taken for a media type
// without parameters normalises exactly as the general path does, and that
// a normalised media type normalises to itself.
func FuzzMediaTypeShortcut(f *testing.F) {
	for _, v := range []string{"application/json", "Application/Merge-Patch+JSON", "a/b", "a/", "/b", "a/b/c", "text/plain; charset=UTF-8", "a/b;x=1;X=2"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got := parseMediaType(v)
		if simpleMediaType(v) {
			typ, params, err := mime.ParseMediaType(v)
			if err != nil {
				t.Fatalf("%q: shortcut taken but mime.ParseMediaType fails: %v", v, err)
			}
			if want := mime.FormatMediaType(typ, params); got.text != want || !got.parsed {
				t.Fatalf("%q: shortcut gives %+v, general path %q", v, got, want)
			}
		}
		if got.parsed {
			if again := parseMediaType(got.text); again != got {
				t.Fatalf("%q: normalised to %+v, which normalises to %+v", v, got, again)
			}
		}
	})
}
