package localstack

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strings"
	"unicode/utf8"

	"github.com/truora/minidyn/types"
)

// item is an item, key or projection. Values are minidyn's types.Item,
// whose fields are named as DynamoDB's JSON members, so requests decode
// into it as they are.
type item map[string]*types.Item

// MarshalJSON encodes the item in DynamoDB's JSON format.
func (it item) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(it))
	for name, v := range it {
		m[name] = wire(v)
	}
	return json.Marshal(m)
}

// wire is v as the JSON of its one member (validation leaves one).
func wire(v *types.Item) map[string]any {
	switch {
	case v.S != nil:
		return map[string]any{"S": *v.S}
	case v.N != nil:
		return map[string]any{"N": *v.N}
	case v.B != nil:
		return map[string]any{"B": v.B}
	case v.BOOL != nil:
		return map[string]any{"BOOL": *v.BOOL}
	case v.NULL != nil:
		return map[string]any{"NULL": true}
	case v.SS != nil:
		return map[string]any{"SS": v.SS}
	case v.NS != nil:
		return map[string]any{"NS": v.NS}
	case v.BS != nil:
		return map[string]any{"BS": v.BS}
	case v.L != nil:
		l := make([]any, len(v.L))
		for i, e := range v.L {
			l[i] = wire(e)
		}
		return map[string]any{"L": l}
	}
	return map[string]any{"M": item(v.M)}
}

// checkItem returns DynamoDB's message for an invalid value of it, or "".
func checkItem(it map[string]*types.Item) string {
	for _, v := range it {
		if msg := checkValue(v); msg != "" {
			return msg
		}
	}
	return ""
}

func checkValue(v *types.Item) string {
	if v == nil {
		return "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes"
	}
	set := 0
	for _, present := range []bool{v.S != nil, v.N != nil, v.B != nil, v.BOOL != nil, v.NULL != nil,
		v.SS != nil, v.NS != nil, v.BS != nil, v.L != nil, v.M != nil} {
		if present {
			set++
		}
	}
	switch {
	case set != 1:
		return "Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes"
	case v.NULL != nil && !*v.NULL:
		return "One or more parameter values were invalid: Null attribute value types must have the value of true"
	case v.SS != nil && len(v.SS) == 0, v.NS != nil && len(v.NS) == 0, v.BS != nil && len(v.BS) == 0:
		return "One or more parameter values were invalid: An number set  may not be empty"
	case v.N != nil && !isNumber(*v.N):
		return "The parameter cannot be converted to a numeric value: " + *v.N
	}
	for _, n := range v.NS {
		if n == nil || !isNumber(*n) {
			return "The parameter cannot be converted to a numeric value"
		}
	}
	for _, s := range v.SS {
		if s == nil {
			return "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes"
		}
	}
	for _, e := range v.L {
		if msg := checkValue(e); msg != "" {
			return msg
		}
	}
	return checkItem(v.M)
}

// isNumber reports whether s is [-]digits[.digits][e[+-]digits].
func isNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	mantissa, exp, hasExp := strings.Cut(strings.ToLower(s), "e")
	whole, frac, _ := strings.Cut(mantissa, ".")
	digits := func(d string) bool {
		return strings.Trim(d, "0123456789") == ""
	}
	exp = strings.TrimLeft(exp, "+-")
	return digits(whole) && digits(frac) && whole+frac != "" && (!hasExp || (exp != "" && digits(exp)))
}

// maxItemSize is DynamoDB's limit on the size of an item.
const maxItemSize = 400 * 1024

// itemSize is DynamoDB's size of it: names' UTF-8 bytes plus values'.
func itemSize(it map[string]*types.Item) int {
	n := 0
	for name, v := range it {
		n += len(name) + valueSize(v)
	}
	return n
}

// valueSize is DynamoDB's size of v: a string its UTF-8 bytes, a binary
// its bytes, a number one byte per two significant digits plus one, a
// Boolean or null one byte, a set the sum of its elements, a list or map
// 3 bytes plus one per element plus the elements (a map's with names).
func valueSize(v *types.Item) int {
	n := 0
	switch {
	case v.S != nil:
		return len(*v.S)
	case v.N != nil:
		return numberSize(*v.N)
	case v.B != nil:
		return len(v.B)
	case v.BOOL != nil, v.NULL != nil:
		return 1
	case v.L != nil:
		n = 3
		for _, e := range v.L {
			n += 1 + valueSize(e)
		}
	case v.M != nil:
		n = 3 + len(v.M) + itemSize(v.M)
	}
	for _, s := range v.SS {
		n += len(*s)
	}
	for _, s := range v.NS {
		n += numberSize(*s)
	}
	for _, b := range v.BS {
		n += len(b)
	}
	return n
}

func numberSize(s string) int {
	s = strings.TrimLeft(s, "+-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	digits := strings.Trim(strings.Replace(s, ".", "", 1), "0")
	return (utf8.RuneCountInString(digits)+1)/2 + 1
}

// typeName is the type of v ("S", "NS", "M"...): its member's name.
func typeName(v *types.Item) string {
	for name := range wire(v) {
		return name
	}
	return ""
}

// scalarType is the key type (S, N or B) of v, or "".
func scalarType(v *types.Item) string {
	switch {
	case v == nil:
		return ""
	case v.S != nil:
		return "S"
	case v.N != nil:
		return "N"
	case v.B != nil:
		return "B"
	}
	return ""
}

// keyString encodes a key value; equal values (1 and 1.0) encode equally.
func keyString(v *types.Item) string {
	switch {
	case v.S != nil:
		return "S" + *v.S
	case v.N != nil:
		r, _ := new(big.Rat).SetString(*v.N)
		return "N" + r.RatString()
	}
	return "B" + string(v.B)
}

// compareKeys orders sort keys of one type: numbers by value, else bytes.
func compareKeys(a, b *types.Item) int {
	if a.N != nil && b.N != nil {
		x, _ := new(big.Rat).SetString(*a.N)
		y, _ := new(big.Rat).SetString(*b.N)
		return x.Cmp(y)
	}
	return strings.Compare(keyString(a)[1:], keyString(b)[1:])
}

// copyItem returns a deep copy of it, sharing nothing with it.
func copyItem(it map[string]*types.Item) (out item) {
	b, _ := json.Marshal(item(it))
	_ = json.Unmarshal(b, &out) // what validation let in round-trips
	return out
}

// sameItem reports whether a and b hold the same attributes and values.
func sameItem(a, b map[string]*types.Item) bool {
	x, _ := json.Marshal(item(a))
	y, _ := json.Marshal(item(b))
	return bytes.Equal(x, y)
}
