package localstack

import (
	"strings"
	"unicode/utf8"

	mtypes "github.com/truora/minidyn/types"
)

// itemSize returns the size of item by DynamoDB's rules (Developer Guide,
// "Item sizes and formats",
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html):
// the sum over its attributes of the attribute name's length in UTF-8
// bytes plus the size of its value. A string is its UTF-8 length; a number
// about one byte per two significant digits plus one; a binary value its
// length; a Boolean or null one byte; a list or map 3 bytes plus one byte
// per element plus its elements (a map's with their names); a set the sum
// of its elements.
func itemSize(item map[string]*mtypes.Item) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v *mtypes.Item) int {
	if v == nil {
		return 0
	}
	switch {
	case v.S != nil:
		return len(*v.S)
	case v.N != nil:
		return numberSize(*v.N)
	case v.B != nil:
		return len(v.B)
	case v.BOOL != nil, v.NULL != nil:
		return 1
	case v.SS != nil:
		n := 0
		for _, s := range v.SS {
			if s != nil {
				n += len(*s)
			}
		}
		return n
	case v.NS != nil:
		n := 0
		for _, s := range v.NS {
			if s != nil {
				n += numberSize(*s)
			}
		}
		return n
	case v.BS != nil:
		n := 0
		for _, b := range v.BS {
			n += len(b)
		}
		return n
	case v.L != nil:
		n := 3
		for _, e := range v.L {
			n += 1 + valueSize(e)
		}
		return n
	case v.M != nil:
		n := 3
		for k, e := range v.M {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 0
}

// numberSize is the stored size of the number s: its significant digits
// (leading and trailing zeros trimmed), two to a byte, plus one.
func numberSize(s string) int {
	s = strings.TrimLeft(s, "+-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	// Leading and trailing zeros are not stored: 1000 is 1e3.
	digits := strings.Trim(strings.Replace(s, ".", "", 1), "0")
	n := utf8.RuneCountInString(digits)
	if n == 0 {
		return 1
	}
	return (n+1)/2 + 1
}
