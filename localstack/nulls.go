package localstack

import (
	"bytes"
	"encoding/json"
)

// Null attribute values. minidyn dereferences every attribute value it
// reads, so an item, key or expression value given as JSON null (which
// no SDK writes, but a hand-written client may) makes it panic. The front
// answers such a request as DynamoDB answers an attribute value without a
// type, before minidyn sees it.

// nullAttributeValue reports whether body, a request of op, holds null
// where minidyn reads an attribute value: a value of Item, Key,
// ExclusiveStartKey or ExpressionAttributeValues (at the top, in a
// transaction's actions, in a batch's requests or its Keys), or an element
// of a map or list value within them. Bodies without the bytes "null" are
// not decoded.
func nullAttributeValue(body []byte) bool {
	if !bytes.Contains(body, []byte("null")) {
		return false
	}
	var v any
	if json.Unmarshal(body, &v) != nil {
		return false // minidyn reports the malformed body
	}
	return nullUnder(v, false)
}

// nullUnder walks v; inValues says whether v's members are attribute
// values.
func nullUnder(v any, inValues bool) bool {
	switch x := v.(type) {
	case map[string]any:
		for name, m := range x {
			if inValues {
				if m == nil || attributeValueHasNull(m) {
					return true
				}
				continue
			}
			switch name {
			case "Item", "Key", "ExclusiveStartKey", "ExpressionAttributeValues":
				if nullUnder(m, true) {
					return true
				}
			case "Keys":
				if list, ok := m.([]any); ok {
					for _, k := range list {
						if k == nil || nullUnder(k, true) {
							return true
						}
					}
				}
			default:
				if nullUnder(m, false) {
					return true
				}
			}
		}
	case []any:
		for _, e := range x {
			if nullUnder(e, inValues) {
				return true
			}
		}
	}
	return false
}

// attributeValueHasNull reports whether the attribute value v has a null
// element in a map (M) or list (L) value, at any depth.
func attributeValueHasNull(v any) bool {
	av, ok := v.(map[string]any)
	if !ok {
		return false
	}
	if m, ok := av["M"].(map[string]any); ok {
		for _, e := range m {
			if e == nil || attributeValueHasNull(e) {
				return true
			}
		}
	}
	if l, ok := av["L"].([]any); ok {
		for _, e := range l {
			if e == nil || attributeValueHasNull(e) {
				return true
			}
		}
	}
	return false
}
