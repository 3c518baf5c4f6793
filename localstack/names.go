package localstack

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/truora/minidyn/server"
)

// Placeholders that name placeholders. minidyn resolves the attribute name
// an ExpressionAttributeNames entry gives, and each of its dot-separated
// parts, as a placeholder again, and again: {"#a": "#a"} recurses until
// the goroutine's stack overflows, a fatal error that no recover stops,
// ending the process the emulator runs in. DynamoDB reads such a name as
// the attribute's name. The front answers every request with an entry
// whose name is, or has a part that is, a placeholder of the same map
// with a ValidationException naming the entry, before minidyn sees it.

// chainedName returns an entry of an ExpressionAttributeNames of the
// request body (decoded in in, where the front decoded it) whose name or
// one of its dot-separated parts is a placeholder of the same map. Bodies
// without the bytes "ExpressionAttributeNames" are not decoded.
func chainedName(body []byte, in *decoded) (placeholder, name string, found bool) {
	switch {
	case in.put != nil:
		return chainIn(in.put.ExpressionAttributeNames)
	case in.transaction != nil && in.transaction.err == nil:
		for _, a := range in.transaction.req.TransactItems {
			var names []map[string]string
			if a.Put != nil {
				names = append(names, a.Put.ExpressionAttributeNames)
			}
			if a.Update != nil {
				names = append(names, a.Update.ExpressionAttributeNames)
			}
			for _, d := range [...]*server.DeleteItemInput{a.Delete, a.ConditionCheck} {
				if d != nil {
					names = append(names, d.ExpressionAttributeNames)
				}
			}
			for _, m := range names {
				if p, n, ok := chainIn(m); ok {
					return p, n, true
				}
			}
		}
		return "", "", false
	}
	if !bytes.Contains(body, []byte(`"ExpressionAttributeNames"`)) {
		return "", "", false
	}
	var v any
	if json.Unmarshal(body, &v) != nil {
		return "", "", false // minidyn reports the malformed body
	}
	return chainUnder(v)
}

// chainUnder looks for a chained entry in every ExpressionAttributeNames
// object within v.
func chainUnder(v any) (placeholder, name string, found bool) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if obj, ok := x[k].(map[string]any); ok && k == "ExpressionAttributeNames" {
				names := make(map[string]string, len(obj))
				for p, n := range obj {
					if s, ok := n.(string); ok {
						names[p] = s
					}
				}
				if p, n, ok := chainIn(names); ok {
					return p, n, true
				}
				continue
			}
			if p, n, ok := chainUnder(x[k]); ok {
				return p, n, true
			}
		}
	case []any:
		for _, e := range x {
			if p, n, ok := chainUnder(e); ok {
				return p, n, true
			}
		}
	}
	return "", "", false
}

// chainIn returns the first entry of names, in the order of the
// placeholders, whose name or one of its parts is a placeholder of names.
func chainIn(names map[string]string) (placeholder, name string, found bool) {
	chained := func(n string) bool {
		for part := range strings.SplitSeq(n, ".") {
			if _, ok := names[part]; ok {
				return true
			}
		}
		return false
	}
	for _, n := range names {
		if chained(n) {
			for _, p := range slices.Sorted(maps.Keys(names)) {
				if chained(names[p]) {
					return p, names[p], true
				}
			}
		}
	}
	return "", "", false
}

// chainedNameError is the answer to a request with a chained entry.
func chainedNameError(placeholder, name string) *response {
	return validationError("ExpressionAttributeNames maps %s to %q, which is (or has a part that is) a placeholder of the same map: "+
		"the embedded emulator (minidyn) would resolve that name as a placeholder again, without end (DynamoDB reads it as an attribute name)",
		placeholder, name)
}
