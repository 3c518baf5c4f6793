// Package keyschema holds the partition key value of a key record, shared
// by the store, its cache, the multi-region routing and the tools.
package keyschema

import (
	"strconv"
	"strings"
)

// PartitionKey returns the partition key value of (scope, key): the
// decimal byte length of scope, a colon, scope, then key. Distinct pairs
// never share a value, whatever bytes they hold.
func PartitionKey(scope, key string) string {
	return strconv.Itoa(len(scope)) + ":" + scope + key
}

// Split inverts PartitionKey; ok is false for a value PartitionKey never
// returns.
func Split(pk string) (scope, key string, ok bool) {
	colon := strings.IndexByte(pk, ':')
	if colon <= 0 || colon > 5 {
		return "", "", false
	}
	n, err := strconv.Atoi(pk[:colon])
	if err != nil || n < 0 || colon+1+n > len(pk) || strconv.Itoa(n) != pk[:colon] {
		return "", "", false
	}
	return pk[colon+1 : colon+1+n], pk[colon+1+n:], true
}
