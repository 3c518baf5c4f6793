package dynamostore

import (
	"maps"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// FuzzNoTwoAcceptedSchemasShareAPartitionKey checks, over (schema, scope,
// key) triples of two schemas that Validate accepts on one table (the
// same key attribute names), that two triples address the same item only
// when they are the same (namespace, scope, key), and that neither schema
// recognises the other's record as one of its own keys. The seeds include
// the collision a Prefix with ':' made: "3:x#" + "2:ab" + "key" is the
// value of scope "x#2" and key ":abkey" under no Prefix.
func FuzzNoTwoAcceptedSchemasShareAPartitionKey(f *testing.F) {
	f.Add(false, "", "3:x", "", "", "x#2", ":abkey", "ab", "key")
	f.Add(false, "", "1:", "", "", "#2", ":abk", "ab", "k")
	f.Add(false, "a", "b", "", "", "b#1:x", "k", "x", "k")
	f.Add(true, "idemkey", "idemkey", "s1", "s2", "t", "k", "t", "k")
	f.Add(true, "12", "1", "s", "s", "2#3:abc", "k", "3:abc", "k")
	f.Add(false, "", "0", "", "", "0#", "k", "", "k")
	f.Fuzz(func(t *testing.T, sortKey bool, p1, p2, skv1, skv2, scope1, key1, scope2, key2 string) {
		s1, s2 := KeySchema{Prefix: p1}, KeySchema{Prefix: p2}
		if sortKey {
			s1 = KeySchema{PartitionKey: "PK", SortKey: "SK", SortKeyValue: skv1, Prefix: p1, TTLAttribute: "ttl"}
			s2 = KeySchema{PartitionKey: "PK", SortKey: "SK", SortKeyValue: skv2, Prefix: p2, TTLAttribute: "ttl"}
		}
		if s1.Validate() != nil || s2.Validate() != nil {
			return
		}
		// What a Store accepts: a non-empty key, scope and key valid UTF-8.
		for _, v := range []string{scope1, key1, scope2, key2} {
			if !utf8.ValidString(v) || len(v) > MaxScopeBytes {
				return
			}
		}
		if key1 == "" || key2 == "" {
			return
		}
		i1, i2 := s1.internal(), s2.internal()
		k1, k2 := i1.Key(scope1, key1), i2.Key(scope2, key2)
		same := i1.Prefix == i2.Prefix && i1.SortKeyValue == i2.SortKeyValue && scope1 == scope2 && key1 == key2
		require.Equal(t, same, maps.EqualFunc(k1, k2, func(a, b types.AttributeValue) bool {
			return a.(*types.AttributeValueMemberS).Value == b.(*types.AttributeValueMemberS).Value
		}), "%+v (%q, %q) and %+v (%q, %q): %v and %v", s1, scope1, key1, s2, scope2, key2, k1, k2)

		// Neither schema reads the other's record as one of its keys,
		// unless both are one namespace; then it reads back the same pair.
		for _, c := range [][2]KeySchema{{s1, s2}, {s2, s1}} {
			a, b := c[0].internal(), c[1].internal()
			scope, key := scope1, key1
			if c[0] == s2 {
				scope, key = scope2, key2
			}
			item := a.Key(scope, key)
			pk, inNS := b.InNamespace(item)
			if !inNS {
				continue
			}
			gotScope, gotKey, ok := b.Parse(pk)
			if !ok || gotKey == "" {
				continue
			}
			require.Equal(t, a.Prefix, b.Prefix, "%+v reads %q of %+v as (%q, %q)", c[1], pk, c[0], gotScope, gotKey)
			require.Equal(t, [2]string{scope, key}, [2]string{gotScope, gotKey})
		}
	})
}
