// Package keyschema maps (scope, key) onto the primary key of a key
// record, shared by the store, its sweeper, the multi-region routing and
// the tools. Schema is the configurable layout; PartitionKey and Split are
// its encoding of (scope, key).
package keyschema

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// PartitionKey returns the encoding of (scope, key): the decimal byte
// length of scope, a colon, scope, then key. Distinct pairs never share a
// value, whatever bytes they hold.
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

// Defaults of a Schema: the layout of a dedicated key table.
const (
	DefaultPartitionKey = "pk"
	DefaultTTLAttribute = "exp"
	// Marker is the attribute every key record carries on a schema with a
	// Prefix (a String, the record format); the sweeper deletes only items
	// that have it.
	Marker = "idemkey"
	// MaxPrefixBytes bounds Schema.Prefix.
	MaxPrefixBytes = 64
	// MaxSortKeyValueBytes bounds Schema.SortKeyValue.
	MaxSortKeyValueBytes = 256
)

// Schema is the layout of key records in a table. Its fields mirror those
// of dynamostore.KeySchema, which converts to it.
type Schema struct {
	PartitionKey string
	SortKey      string
	SortKeyValue string
	Prefix       string
	TTLAttribute string
}

// WithDefaults returns s with empty PartitionKey and TTLAttribute set to
// their defaults.
func (s Schema) WithDefaults() Schema {
	if s.PartitionKey == "" {
		s.PartitionKey = DefaultPartitionKey
	}
	if s.TTLAttribute == "" {
		s.TTLAttribute = DefaultTTLAttribute
	}
	return s
}

// Check reports what makes s (with defaults applied) unusable; reserved
// lists the attribute names key records use besides the key and TTL
// attributes.
func (s Schema) Check(reserved []string) error {
	s = s.WithDefaults()
	switch {
	case s.SortKey == s.PartitionKey:
		return fmt.Errorf("SortKey %q is the PartitionKey", s.SortKey)
	case s.TTLAttribute == s.PartitionKey || s.TTLAttribute == s.SortKey:
		return fmt.Errorf("TTLAttribute %q is a key attribute", s.TTLAttribute)
	case s.SortKey == "" && s.SortKeyValue != "":
		return fmt.Errorf("SortKeyValue %q without a SortKey", s.SortKeyValue)
	case s.SortKey != "" && s.SortKeyValue == "":
		return fmt.Errorf("SortKey %q needs a SortKeyValue (the constant sort key of every key record)", s.SortKey)
	case len(s.SortKeyValue) > MaxSortKeyValueBytes:
		return fmt.Errorf("SortKeyValue of %d bytes, more than %d", len(s.SortKeyValue), MaxSortKeyValueBytes)
	case s.Shared() && s.Prefix == "":
		return fmt.Errorf("a schema with a SortKey or a PartitionKey other than %q is a shared table's and needs a Prefix", DefaultPartitionKey)
	case len(s.Prefix) > MaxPrefixBytes:
		return fmt.Errorf("Prefix of %d bytes, more than %d", len(s.Prefix), MaxPrefixBytes)
	case strings.ContainsRune(s.Prefix, '#'):
		return fmt.Errorf("Prefix %q contains '#', which ends a prefix: two prefixes could then share key values", s.Prefix)
	case strings.ContainsRune(s.Prefix, ':'):
		return fmt.Errorf("Prefix %q contains ':', which ends the scope's length in a value without a Prefix: "+
			"a store without a Prefix on the same table could then read this schema's records as its own", s.Prefix)
	}
	for _, r := range s.Prefix {
		if r < 0x21 || r > 0x7e {
			return fmt.Errorf("Prefix %q: only printable ASCII without spaces", s.Prefix)
		}
	}
	for _, name := range append([]string{s.PartitionKey, s.SortKey, s.TTLAttribute}, reserved...) {
		if strings.ContainsRune(name, 0) {
			return fmt.Errorf("attribute name %q contains a NUL byte", name)
		}
		if !utf8.ValidString(name) {
			return fmt.Errorf("attribute name %q is not valid UTF-8: DynamoDB would store it as another name", name)
		}
	}
	if !utf8.ValidString(s.SortKeyValue) {
		return fmt.Errorf("SortKeyValue %q is not valid UTF-8: DynamoDB would store another value, and no record would read back", s.SortKeyValue)
	}
	for _, own := range []string{s.PartitionKey, s.SortKey, s.TTLAttribute} {
		if slices.Contains(reserved, own) {
			return fmt.Errorf("attribute %q is a key record attribute; choose another name", own)
		}
	}
	return nil
}

// Shared reports whether s is the layout of a table shared with other
// items: a sort key, or a partition key other than the default.
func (s Schema) Shared() bool {
	s = s.WithDefaults()
	return s.SortKey != "" || s.PartitionKey != DefaultPartitionKey
}

// Namespaced returns v in the schema's namespace: v itself without a
// Prefix, Prefix + "#" + v with one. Key records, the sweeper's cursor
// items and the multi-region topology record all live in the namespace.
func (s Schema) Namespaced(v string) string {
	if s.Prefix == "" {
		return v
	}
	return s.Prefix + "#" + v
}

// Value returns the partition key value of (scope, key).
func (s Schema) Value(scope, key string) string { return s.Namespaced(PartitionKey(scope, key)) }

// Parse inverts Value; ok is false for a value Value never returns.
func (s Schema) Parse(v string) (scope, key string, ok bool) {
	if s.Prefix != "" {
		var found bool
		if v, found = strings.CutPrefix(v, s.Prefix+"#"); !found {
			return "", "", false
		}
	}
	return Split(v)
}

// ItemKey returns the primary key of the item whose partition key value is
// v: v and, with a SortKey, SortKeyValue.
func (s Schema) ItemKey(v string) map[string]types.AttributeValue {
	s = s.WithDefaults()
	k := make(map[string]types.AttributeValue, 2)
	k[s.PartitionKey] = &types.AttributeValueMemberS{Value: v}
	if s.SortKey != "" {
		k[s.SortKey] = &types.AttributeValueMemberS{Value: s.SortKeyValue}
	}
	return k
}

// Key returns the primary key of the record of (scope, key).
func (s Schema) Key(scope, key string) map[string]types.AttributeValue {
	return s.ItemKey(s.Value(scope, key))
}

// InNamespace reports whether item's primary key is in the schema's
// namespace: its partition key value begins with Prefix + "#" (any value
// without a Prefix) and, with a SortKey, its sort key is SortKeyValue.
// It says nothing of the other attributes.
func (s Schema) InNamespace(item map[string]types.AttributeValue) (pk string, ok bool) {
	s = s.WithDefaults()
	v, ok := item[s.PartitionKey].(*types.AttributeValueMemberS)
	if !ok {
		return "", false
	}
	if s.Prefix != "" && !strings.HasPrefix(v.Value, s.Prefix+"#") {
		return "", false
	}
	if s.SortKey != "" {
		sk, ok := item[s.SortKey].(*types.AttributeValueMemberS)
		if !ok || sk.Value != s.SortKeyValue {
			return "", false
		}
	}
	return v.Value, true
}

// KeyProjection returns a ProjectionExpression that reads the primary key
// ("#pk", and "#sk" with a SortKey) and its ExpressionAttributeNames.
func (s Schema) KeyProjection() (string, map[string]string) {
	s = s.WithDefaults()
	names := map[string]string{"#pk": s.PartitionKey}
	if s.SortKey == "" {
		return "#pk", names
	}
	names["#sk"] = s.SortKey
	return "#pk, #sk", names
}
