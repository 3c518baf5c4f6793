package dynamostore

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// indexCursorWithKeys returns a cursor of table in region whose shards
// stand at every phase, some after a key.
func indexCursorWithKeys(t *testing.T, table, region string) *indexCursor {
	t.Helper()
	after, ok := sweepKeyToCursor(map[string]types.AttributeValue{
		"pk": attrS("8:tenant-ak1"), ExpiryBucketAttribute: attrS("03"), "exp": attrN(1_800_000_000), "b": attrB([]byte{0, 255}),
	})
	require.True(t, ok)
	c := &indexCursor{Table: table, Region: region}
	for i := range c.Shards {
		c.Shards[i].Phase = indexPhase(i % 3)
		if i%3 == 0 && c.Shards[i].Phase != phaseDone {
			c.Shards[i].After = after
		}
	}
	c.Unindexed, c.UnindexedSince, c.Seen, c.Next = unindexedFound, 1_800_000_000_123, true, unindexedPart
	c.UnindexedAfter, ok = sweepKeyToCursor(map[string]types.AttributeValue{"pk": attrS("8:tenant-ak2")})
	require.True(t, ok)
	return c
}

func TestIndexCursorRoundTripsEveryPhaseAndKey(t *testing.T) {
	for _, region := range []string{"", "eu-west-1"} {
		c := indexCursorWithKeys(t, "keys", region)
		back, err := decodeIndexCursor(c.encode(), "keys", region)
		require.NoError(t, err, region)
		assert.Equal(t, c, back, region)
	}
	for _, state := range []unindexedScan{unindexedNone, unindexedClean} {
		c := &indexCursor{Table: "keys", Unindexed: state}
		if state != unindexedNone {
			c.UnindexedSince = 1
		}
		back, err := decodeIndexCursor(c.encode(), "keys", "")
		require.NoError(t, err)
		assert.Equal(t, c, back, "a scan from its start, or none")
	}
}

func TestCursorsOfOneModeAreRefusedByTheOtherWithAMessageNamingBoth(t *testing.T) {
	scan := newSweepCursor("keys", "", 4).encode()
	_, err := decodeIndexCursor(scan, "keys", "")
	require.ErrorIs(t, err, ErrInvalidCursor)
	assert.Contains(t, err.Error(), "it belongs to a sweep in scan mode, this one is in index mode")

	index := (&indexCursor{Table: "keys"}).encode()
	_, err = sweepDecodeCursor(index, "keys", "")
	require.ErrorIs(t, err, ErrInvalidCursor)
	assert.Contains(t, err.Error(), "it belongs to a sweep in index mode, this one is in scan mode")
}

func TestDecodeIndexCursorRejectsEverythingItDidNotWrite(t *testing.T) {
	valid := indexCursorWithKeys(t, "keys", "r1").encode()
	raw, err := base64.RawURLEncoding.DecodeString(valid)
	require.NoError(t, err)
	enc := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	header := func(shards int) []byte {
		b := appendBytes(appendBytes([]byte{sweepIndexCursorVersion}, []byte("keys")), nil)
		return binary.AppendUvarint(b, uint64(shards))
	}
	allDone := func(b []byte, n int) []byte {
		for range n {
			b = append(b, byte(phaseDone))
		}
		return b
	}
	// The last shard in its first phase after a key "pk" of an empty
	// String: no DynamoDB key has one.
	emptyValue := append(allDone(header(ExpiryIndexShards), ExpiryIndexShards-1), byte(phaseExpired))
	emptyValue = appendBytes(append(appendBytes(binary.AppendUvarint(emptyValue, 1), []byte("pk")), 'S'), nil)
	emptyValue = append(emptyValue, byte(unindexedNone))
	scanState := func(state byte) []byte {
		return append(allDone(header(ExpiryIndexShards), ExpiryIndexShards), state, 0, 1)
	}
	cases := map[string]string{
		"empty":          "",
		"not base64":     "***",
		"version 4":      enc(append([]byte{4}, raw[1:]...)), // unreleased: three phases, other buckets
		"version 5":      enc(append([]byte{5}, raw[1:]...)), // unreleased: no scan for records outside the index
		"version 7":      enc(append([]byte{7}, raw[1:]...)),
		"unknown scan":   enc(scanState(3)),
		"scan cut short": enc(scanState(1)[:len(scanState(1))-1]),
		"cut short":      enc(raw[:len(raw)/2]),
		"trailing bytes": enc(append(append([]byte{}, raw...), 0)),
		"other table":    indexCursorWithKeys(t, "other", "r1").encode(),
		"other region":   indexCursorWithKeys(t, "keys", "r2").encode(),
		"no region":      indexCursorWithKeys(t, "keys", "").encode(),
		"fewer shards":   enc(allDone(header(ExpiryIndexShards-1), ExpiryIndexShards-1)),
		"more shards":    enc(allDone(header(ExpiryIndexShards+1), ExpiryIndexShards+1)),
		"unknown phase":  enc(append(allDone(header(ExpiryIndexShards), ExpiryIndexShards-1), 3)),
		"empty value":    enc(emptyValue),
		"too long":       strings.Repeat("A", maxCursorLen+1),
	}
	for name, s := range cases {
		c, err := decodeIndexCursor(s, "keys", "r1")
		assert.ErrorIs(t, err, ErrInvalidCursor, name)
		assert.Nil(t, c, name)
	}
}

func TestWorstCaseIndexCursorFitsInTheCursorItem(t *testing.T) {
	c := &indexCursor{Table: strings.Repeat("t", maxTableNameBytes), Region: strings.Repeat("r", MaxSweepRegionLen)}
	worst := map[string]types.AttributeValue{
		"PK": attrS(strings.Repeat("k", maxPartitionKeyBytes)), "SK": attrS(strings.Repeat("s", maxSortKeyBytes)),
		ExpiryBucketAttribute: attrS(strings.Repeat("b", 64+1+2)), "ttl": attrN(-1 << 62),
	}
	after, ok := sweepKeyToCursor(worst)
	require.True(t, ok)
	for i := range c.Shards {
		c.Shards[i].After = after
	}
	c.Unindexed, c.UnindexedAfter, c.UnindexedSince = unindexedFound, after, math.MaxInt64
	l := newLayout(KeySchema{PartitionKey: "PK", SortKey: "SK", SortKeyValue: strings.Repeat("v", 256), Prefix: strings.Repeat("p", 64), TTLAttribute: "ttl"}.internal())
	size := l.cursorItemBytes(len(c.encode()), c.Region)
	assert.Less(t, size, cursorItemLimit/2, "33 keys of 3.2 KB, in base64: about 145 KB")
}
