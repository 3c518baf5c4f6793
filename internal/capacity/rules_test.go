// Package capacity (test code only) computes the DynamoDB capacity units that calls consume,
// from the exact requests, by DynamoDB's documented rules. It is a
// measuring instrument for benchmarks and tests (scripts/bench.sh), not a
// bill: it knows the rules for the operations idemkey sends (PutItem,
// DeleteItem, GetItem, TransactWriteItems with Put and Delete actions).
//
// The rules (Amazon DynamoDB Developer Guide):
//
//   - Item size (CapacityUnitCalculations.html): the sum of the attribute
//     names' UTF-8 lengths and the values' sizes: a String its UTF-8
//     length, a Binary its raw length, a Number 1 byte per two significant
//     digits plus 1, a Boolean or Null 1 byte, a List or Map 3 bytes plus
//     its elements plus 1 byte per element (a Map's element counting its
//     name), a set the sum of its elements.
//   - Writes (read-write-operations.html): 1 WCU per 1 KB, rounded up, at
//     least 1. PutItem is charged for the larger of the item it writes and
//     the item it replaces, DeleteItem for the deleted item. A conditional
//     write whose condition fails still consumes write capacity, for the
//     larger of the existing item and the new one (at least 1).
//   - Reads: a consistent GetItem 1 RCU per 4 KB of the item, rounded up, at
//     least 1 (an eventually consistent one half that).
//     ReturnValuesOnConditionCheckFailure costs no read capacity (API
//     reference: "No read capacity units are consumed").
//   - Transactions (transaction-apis.html): every item is read or written
//     twice, to prepare and to commit, so a TransactWriteItems consumes
//     twice the units of its actions as separate writes. What a cancelled
//     transaction consumes is not documented; Meter charges its prepare
//     phase: the units of its actions as separate writes, once.
package capacity_test

import (
	"math"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ItemSize returns the size of item in bytes by DynamoDB's rules.
func ItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += numberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	}
	return 0
}

// numberSize is a Number's size: 1 byte per two significant digits,
// rounded up, plus 1. Leading and trailing zeroes are not significant.
func numberSize(s string) int {
	s = strings.TrimLeft(s, "+-")
	mant, _, _ := strings.Cut(strings.ToLower(s), "e")
	digits := strings.Replace(mant, ".", "", 1)
	digits = strings.Trim(digits, "0")
	n := utf8.RuneCountInString(digits)
	return (n+1)/2 + 1
}

// WriteUnits returns the WCU of a non-transactional write of an item of
// size bytes: 1 per KB, rounded up, at least 1.
func WriteUnits(size int) float64 { return math.Max(1, math.Ceil(float64(size)/1024)) }

// ReadUnits returns the RCU of a GetItem of an item of size bytes: 1 per
// 4 KB, rounded up, at least 1, halved when not consistent.
func ReadUnits(size int, consistent bool) float64 {
	u := math.Max(1, math.Ceil(float64(size)/4096))
	if !consistent {
		u /= 2
	}
	return u
}
