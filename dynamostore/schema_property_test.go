package dynamostore

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/internal/keyschema"
)

// adversarial draws a string from bytes that the encodings themselves use
// (digits, ':', '#', prefixes' letters), so that near-collisions are
// frequent.
func adversarial(r *rand.Rand, max int) string {
	const alphabet = "0123456789:#abidemkyX\x00\xff"
	b := make([]byte, r.IntN(max+1))
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

// adversarialPrefix draws a valid prefix: a non-empty string without '#'
// or ':'.
func adversarialPrefix(r *rand.Rand) string {
	for {
		p := strings.NewReplacer("#", "", ":", "").Replace(adversarial(r, 8))
		p = strings.Map(func(c rune) rune {
			if c < 0x21 || c > 0x7e {
				return 'x'
			}
			return c
		}, p)
		if p != "" {
			return p
		}
	}
}

// No (scope, key) under one prefix maps onto the item of another prefix's
// (scope, key), nor onto an application item (an item whose partition key
// does not begin with the prefix and '#'), nor onto another (scope, key)
// of its own prefix; and what a sweep or a read recognises under a prefix
// is exactly what that prefix's encoding produces.
func TestPropertyKeyRecordsOfOnePrefixNeverMapOntoAnotherPrefixOrAnApplicationItem(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 2026))
	for i := 0; i < 20000; i++ {
		p, q := adversarialPrefix(r), adversarialPrefix(r)
		sp := KeySchema{PartitionKey: "PK", SortKey: "SK", SortKeyValue: "K", Prefix: p, TTLAttribute: "ttl"}.internal()
		sq := sp
		sq.Prefix = q
		require.NoError(t, KeySchema(sp).Validate())
		scope, key := adversarial(r, 6), adversarial(r, 6)+"k"
		scope2, key2 := adversarial(r, 6), adversarial(r, 6)+"k"
		vp := sp.Value(scope, key)

		// Injective within a prefix, and Parse inverts it.
		gs, gk, ok := sp.Parse(vp)
		require.True(t, ok)
		require.Equal(t, [2]string{scope, key}, [2]string{gs, gk})
		if (scope != scope2 || key != key2) && vp == sp.Value(scope2, key2) {
			t.Fatalf("(%q, %q) and (%q, %q) share %q", scope, key, scope2, key2, vp)
		}
		// Disjoint across prefixes.
		if p != q {
			require.NotEqual(t, vp, sq.Value(scope2, key2), "prefixes %q and %q", p, q)
			_, ok := sq.InNamespace(sp.Key(scope, key))
			require.False(t, ok, "%q is in %q's namespace", vp, q)
		}
		// An application item: any key value outside p's namespace is
		// never a value of p's encoding, nor recognised as p's.
		user := adversarial(r, 20)
		if !strings.HasPrefix(user, p+"#") {
			_, _, ok := sp.Parse(user)
			require.False(t, ok, "application key %q parsed under %q", user, p)
			_, ok = sp.InNamespace(map[string]types.AttributeValue{"PK": attrS(user), "SK": attrS("K")})
			require.False(t, ok)
			require.NotEqual(t, user, vp)
		}
		// The default layout (no prefix) never produces a value in a
		// prefix's namespace: its values begin with a digit.
		def := keyschema.PartitionKey(scope, key)
		_, ok = sp.InNamespace(map[string]types.AttributeValue{"PK": attrS(def), "SK": attrS("K")})
		require.False(t, ok)
		// Nor does it read a prefix's value as one of its own.
		_, _, ok = defaultLayout.Parse(vp)
		require.False(t, ok, "%q of prefix %q parses without a prefix", vp, p)
	}
}

func TestSweepSegmentsAreClampedSoAWorstCaseCursorOfTheSchemaFitsInOneItem(t *testing.T) {
	for _, schema := range []KeySchema{
		{},
		{Prefix: "idemkey"},
		{PartitionKey: "PK", SortKey: "SK", SortKeyValue: strings.Repeat("s", keyschema.MaxSortKeyValueBytes), Prefix: strings.Repeat("p", keyschema.MaxPrefixBytes), TTLAttribute: "ttl"},
	} {
		l := newLayout(schema.internal())
		n := l.maxSweepSegments()
		region := strings.Repeat("r", MaxSweepRegionLen)
		seg := 2 + keyAttrWorstBytes(l.PartitionKey, maxPartitionKeyBytes)
		if l.SortKey != "" {
			seg += keyAttrWorstBytes(l.SortKey, maxSortKeyBytes)
		}
		// A real worst-case cursor: every segment after a key of the
		// largest values.
		c := newSweepCursor(strings.Repeat("t", maxTableNameBytes), region, n)
		for i := range c.Segments {
			after := map[string]types.AttributeValue{l.PartitionKey: attrS(strings.Repeat("\x01", maxPartitionKeyBytes))}
			if l.SortKey != "" {
				after[l.SortKey] = attrS(strings.Repeat("\x02", maxSortKeyBytes))
			}
			c.Segments[i].After, _ = sweepKeyToCursor(after)
		}
		enc := c.encode()
		assert.LessOrEqual(t, l.cursorItemBytes(len(enc), region), cursorItemLimit, "%+v at %d segments", schema, n)
		if n < MaxSweepSegments {
			assert.Greater(t, l.cursorItemBytes(len(enc)+seg*4/3, region), cursorItemLimit, "one more segment would not fit")
		}
		s := NewSweeper(dummySweepClient{}, "t", func(o *SweepOptions) { o.Schema = schema; o.Segments = MaxSweepSegments })
		assert.Equal(t, n, s.Options().Segments)
	}
	assert.Equal(t, MaxSweepSegments, defaultLayout.maxSweepSegments())
}
