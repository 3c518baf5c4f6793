package fingerprint

import (
	"mime"
	"strings"
)

// mediaType is the normalised form of a Content-Type value.
type mediaType struct {
	text   string // what the digest binds
	parsed bool   // text is the normalised media type, not the value as sent
	json   bool   // the body is compared in canonical JSON form
}

// parseMediaType normalises the Content-Type value v as documented on
// [Request.Digest].
func parseMediaType(v string) mediaType {
	v = strings.Trim(v, " \t")
	if v == "" {
		return mediaType{}
	}
	if simpleMediaType(v) {
		// The common case, such as "application/json": no parameters and
		// only characters that every media type grammar accepts, so
		// lowercasing is all of the normalisation (and costs nothing when
		// v is lowercase already).
		t := strings.ToLower(v)
		return mediaType{text: t, parsed: true, json: isJSONMediaType(t)}
	}
	t, params, err := mime.ParseMediaType(v)
	if err != nil {
		return mediaType{text: v}
	}
	isJSON := isJSONMediaType(t)
	if cs, ok := params["charset"]; ok {
		cs = strings.ToLower(cs)
		if isJSON && cs == "utf-8" {
			// RFC 8259 defines no charset for JSON, whose text is UTF-8:
			// "charset=utf-8" says nothing, so it is not bound.
			delete(params, "charset")
		} else {
			params["charset"] = cs
		}
	}
	text := mime.FormatMediaType(t, params)
	if text == "" {
		return mediaType{text: v}
	}
	return mediaType{text: text, parsed: true, json: isJSON}
}

// simpleMediaType reports whether v is type "/" subtype made of ASCII
// letters, digits, '-', '.' and '+' only.
func simpleMediaType(v string) bool {
	slash := -1
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.', c == '+':
		case c == '/' && slash < 0:
			slash = i
		default:
			return false
		}
	}
	return slash > 0 && slash < len(v)-1
}

// isJSONMediaType reports whether the lowercase media type t is JSON:
// application/json, or any type whose subtype has the +json suffix
// (RFC 6839), such as application/merge-patch+json.
func isJSONMediaType(t string) bool {
	typ, sub, ok := strings.Cut(t, "/")
	if !ok || typ == "" || sub == "" {
		return false
	}
	return t == "application/json" || (strings.HasSuffix(sub, "+json") && len(sub) > len("+json"))
}
