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
	walkObjects(v, func(x map[string]any) bool {
		obj, ok := x["ExpressionAttributeNames"].(map[string]any)
		if !ok {
			return false
		}
		names := make(map[string]string, len(obj))
		for p, n := range obj {
			if s, ok := n.(string); ok {
				names[p] = s
			}
		}
		placeholder, name, found = chainIn(names)
		return found
	})
	return placeholder, name, found
}

// walkObjects calls visit with every object within v, each before the
// objects within it and the members of an object in the order of their
// names, until visit returns true.
func walkObjects(v any, visit func(map[string]any) bool) bool {
	switch x := v.(type) {
	case map[string]any:
		if visit(x) {
			return true
		}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if walkObjects(x[k], visit) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if walkObjects(e, visit) {
				return true
			}
		}
	}
	return false
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

// Expression attribute values that no map defines. minidyn evaluates an
// expression's :placeholder that ExpressionAttributeValues does not define
// as an absent value, so a condition such as attribute_not_exists(#pk) OR
// #state = :in_progress without :in_progress succeeds on a new item;
// DynamoDB refuses the request with a ValidationException before it reads
// anything. The front answers as DynamoDB does, naming the first
// expression (in the order below) and placeholder.

// expressionFields are the members of a request (or of a transaction's
// action) that hold expressions, in the order they are checked.
var expressionFields = [...]string{"KeyConditionExpression", "ConditionExpression", "FilterExpression", "UpdateExpression"}

// undefinedValue returns the first expression of the request body (decoded
// in in, where the front decoded it) that uses a value placeholder its
// ExpressionAttributeValues does not define, and the placeholder.
func undefinedValue(body []byte, in *decoded) (field, placeholder string, found bool) {
	switch {
	case in.put != nil:
		return undefinedIn(in.put.ExpressionAttributeValues, map[string]*string{"ConditionExpression": in.put.ConditionExpression})
	case in.transaction != nil && in.transaction.err == nil:
		for _, a := range in.transaction.req.TransactItems {
			var f, p string
			var ok bool
			switch {
			case a.Put != nil:
				f, p, ok = undefinedIn(a.Put.ExpressionAttributeValues, map[string]*string{"ConditionExpression": a.Put.ConditionExpression})
			case a.Update != nil:
				f, p, ok = undefinedIn(a.Update.ExpressionAttributeValues, map[string]*string{
					"ConditionExpression": a.Update.ConditionExpression, "UpdateExpression": a.Update.UpdateExpression})
			case a.Delete != nil:
				f, p, ok = undefinedIn(a.Delete.ExpressionAttributeValues, map[string]*string{"ConditionExpression": a.Delete.ConditionExpression})
			case a.ConditionCheck != nil:
				f, p, ok = undefinedIn(a.ConditionCheck.ExpressionAttributeValues, map[string]*string{"ConditionExpression": a.ConditionCheck.ConditionExpression})
			}
			if ok {
				return f, p, true
			}
		}
		return "", "", false
	}
	if !bytes.Contains(body, []byte(`Expression"`)) {
		return "", "", false
	}
	var v any
	if json.Unmarshal(body, &v) != nil {
		return "", "", false // minidyn reports the malformed body
	}
	return undefinedUnder(v)
}

// undefinedUnder looks for an undefined value placeholder in every object
// within v that holds expressions.
func undefinedUnder(v any) (field, placeholder string, found bool) {
	walkObjects(v, func(x map[string]any) bool {
		exprs := map[string]*string{}
		for _, f := range expressionFields {
			if s, ok := x[f].(string); ok {
				exprs[f] = &s
			}
		}
		if len(exprs) == 0 {
			return false
		}
		values := map[string]*server.AttributeValue{}
		if obj, ok := x["ExpressionAttributeValues"].(map[string]any); ok {
			for k := range obj {
				values[k] = nil
			}
		}
		field, placeholder, found = undefinedIn(values, exprs)
		return found
	})
	return field, placeholder, found
}

// undefinedIn returns the first of exprs (in expressionFields order) that
// uses a value placeholder values does not hold.
func undefinedIn(values map[string]*server.AttributeValue, exprs map[string]*string) (field, placeholder string, found bool) {
	for _, f := range expressionFields {
		e := exprs[f]
		if e == nil {
			continue
		}
		for i := 0; i < len(*e); i++ {
			if (*e)[i] != ':' {
				continue
			}
			j := i + 1
			for j < len(*e) && placeholderByte((*e)[j]) {
				j++
			}
			if p := (*e)[i:j]; j > i+1 {
				if _, ok := values[p]; !ok {
					return f, p, true
				}
			}
			i = j - 1
		}
	}
	return "", "", false
}

// placeholderByte reports whether c may follow the ':' of a placeholder.
func placeholderByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// undefinedValueError is DynamoDB's answer to a request with an undefined
// value placeholder.
func undefinedValueError(field, placeholder string) *response {
	return validationError("Invalid %s: An expression attribute value used in expression is not defined; attribute value: %s", field, placeholder)
}
