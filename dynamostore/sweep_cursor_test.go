package dynamostore

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/localstack"
)

func TestCursorRoundTripsEveryKeyType(t *testing.T) {
	key := map[string]types.AttributeValue{
		"pk": attrS("7:tenant-ak"), "n": attrN(-12), "b": attrB([]byte{0, 1, 255}),
	}
	after, ok := sweepKeyToCursor(key)
	require.True(t, ok)
	c := &sweepCursor{Version: sweepCursorVersion, Table: "keys", Segments: []sweepSegCursor{{Done: true}, {After: after}, {}}}
	back, err := sweepDecodeCursor(c.encode(), "keys")
	require.NoError(t, err)
	assert.Equal(t, c, back)
	assert.Equal(t, key, sweepKeyFromCursor(back.Segments[1].After))
	assert.Nil(t, sweepKeyFromCursor(back.Segments[2].After))
}

func TestCursorRefusesNonKeyValues(t *testing.T) {
	_, ok := sweepKeyToCursor(map[string]types.AttributeValue{"pk": &types.AttributeValueMemberBOOL{Value: true}})
	assert.False(t, ok)
}

func TestDecodeCursorRejectsEverythingItDidNotWrite(t *testing.T) {
	enc := func(json string) string { return base64.RawURLEncoding.EncodeToString([]byte(json)) }
	cases := map[string]string{
		"empty":             "",
		"not base64":        "***",
		"padded base64":     base64.URLEncoding.EncodeToString([]byte(`{"v":1}`)),
		"not JSON":          enc(`nope`),
		"JSON array":        enc(`[1]`),
		"version 0":         enc(`{"table":"keys","segments":[{}]}`),
		"version 2":         enc(`{"v":2,"table":"keys","segments":[{}]}`),
		"other table":       enc(`{"v":1,"table":"other","segments":[{}]}`),
		"no segments":       enc(`{"v":1,"table":"keys","segments":[]}`),
		"too many segments": enc(`{"v":1,"table":"keys","segments":[` + strings.Repeat(`{},`, MaxSweepSegments) + `{}]}`),
		"done and after":    enc(`{"v":1,"table":"keys","segments":[{"done":true,"after":{"pk":{"S":"x"}}}]}`),
		"empty key":         enc(`{"v":1,"table":"keys","segments":[{"after":{}}]}`),
		"untyped value":     enc(`{"v":1,"table":"keys","segments":[{"after":{"pk":{}}}]}`),
		"two types":         enc(`{"v":1,"table":"keys","segments":[{"after":{"pk":{"S":"x","N":"1"}}}]}`),
		"wrong field type":  enc(`{"v":"1","table":"keys","segments":[{}]}`),
		"too long":          strings.Repeat("A", maxCursorLen+1),
		"empty S":           enc(`{"v":1,"table":"keys","segments":[{"after":{"pk":{"S":""}}}]}`),
		"empty name":        enc(`{"v":1,"table":"keys","segments":[{"after":{"":{"S":"x"}}}]}`),
	}
	v2 := func(b ...byte) string {
		return base64.RawURLEncoding.EncodeToString(append([]byte{2, 4, 'k', 'e', 'y', 's'}, b...))
	}
	pk := []byte{2, 1, 2, 'p', 'k', 'S', 1, 'x'} // pending after one attribute: pk = "x"
	for name, c := range map[string]string{
		"v2 no segment count":    v2(),
		"v2 no segments":         v2(0),
		"v2 too many segments":   v2(MaxSweepSegments+1-128|0x80, 1),
		"v2 missing segment":     v2(2, 1),
		"v2 unknown tag":         v2(1, 3),
		"v2 trailing bytes":      v2(1, 1, 0),
		"v2 truncated key":       v2(append([]byte{1}, pk[:5]...)...),
		"v2 value past the end":  v2(1, 2, 1, 2, 'p', 'k', 'S', 9, 'x'),
		"v2 no attributes":       v2(1, 2, 0),
		"v2 unknown type":        v2(1, 2, 1, 2, 'p', 'k', 'L', 1, 'x'),
		"v2 duplicate attribute": v2(1, 2, 2, 2, 'p', 'k', 'S', 1, 'x', 2, 'p', 'k', 'S', 1, 'y'),
		"v2 empty value":         v2(1, 2, 1, 2, 'p', 'k', 'B', 0),
		"v2 empty name":          v2(1, 2, 1, 0, 'S', 1, 'x'),
		"v2 other table":         base64.RawURLEncoding.EncodeToString([]byte{2, 1, 'o', 1, 1}),
		"unknown version byte":   base64.RawURLEncoding.EncodeToString([]byte{3, 4, 'k', 'e', 'y', 's', 1, 1}),
	} {
		cases[name] = c
	}
	ok, err := sweepDecodeCursor(v2(append([]byte{1}, pk...)...), "keys")
	require.NoError(t, err, "the well-formed twin of the v2 cases")
	assert.Equal(t, map[string]types.AttributeValue{"pk": attrS("x")}, sweepKeyFromCursor(ok.Segments[0].After))
	for name, c := range cases {
		_, err := sweepDecodeCursor(c, "keys")
		assert.ErrorIs(t, err, ErrInvalidCursor, name)
	}
}

func FuzzSweepCursor(f *testing.F) {
	after, _ := sweepKeyToCursor(map[string]types.AttributeValue{"pk": attrS("3:abck")})
	f.Add((&sweepCursor{Version: 1, Table: "keys", Segments: []sweepSegCursor{{Done: true}, {After: after}}}).encode())
	f.Add("")
	f.Add("eyJ2IjoxfQ")
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`{"v":1,"table":"keys","segments":[{"done":true},{"after":{"pk":{"S":"3:abck"}}},{}]}`)))
	f.Fuzz(func(t *testing.T, s string) {
		c, err := sweepDecodeCursor(s, "keys")
		if err != nil {
			if c != nil {
				t.Fatal("a cursor with an error")
			}
			return
		}
		for _, seg := range c.Segments {
			_ = sweepKeyFromCursor(seg.After)
		}
		again, err := sweepDecodeCursor(c.encode(), "keys")
		if err != nil {
			t.Fatalf("re-encoded cursor rejected: %v", err)
		}
		assert.Equal(t, c, again)
	})
}

// worstCaseCursor returns the largest cursor a sweep of a key table can
// return with the given segments: every segment pending after a partition
// key of DynamoDB's maximal 2048 bytes, made of control characters (each
// took 6 bytes in version 1's JSON), on a table with a 255-byte name.
func worstCaseCursor(table string, segments int) *sweepCursor {
	c := &sweepCursor{Version: sweepCursorVersion, Table: table, Segments: make([]sweepSegCursor, segments)}
	for i := range c.Segments {
		pk := []byte(strings.Repeat("\x01", 2048))
		pk[0], pk[1] = byte('0'+i%10), byte('0'+i/10%10) // distinct keys
		after, _ := sweepKeyToCursor(map[string]types.AttributeValue{"pk": attrS(string(pk))})
		c.Segments[i].After = after
	}
	return c
}

// cursorItemSize is the size by DynamoDB's rules of the item SaveSweepCursor
// writes for cursor: attribute names, the key, the cursor, and the
// "updated" number counted at its largest (21 bytes). The limit is 400 KB
// counted as 400,000 bytes, the least that DynamoDB implementations accept.
func cursorItemSize(cursor string) int {
	return len("pk") + len(SweepCursorKey) + len("cursor") + len(cursor) + len("updated") + 21
}

func TestWorstCaseCursorAtMaxSweepSegmentsFitsInOneItemAndOneMoreSegmentWouldNot(t *testing.T) {
	table := strings.Repeat("t", 255)
	atMax := worstCaseCursor(table, MaxSweepSegments).encode()
	assert.LessOrEqual(t, cursorItemSize(atMax), 400_000, "the saved cursor is one item")
	over := worstCaseCursor(table, MaxSweepSegments+1).encode()
	assert.Greater(t, cursorItemSize(over), 400_000, "MaxSweepSegments is the largest count that fits")
}

func TestCursorWorstCaseComputationMatchesTheEncoder(t *testing.T) {
	table := strings.Repeat("t", 255)
	for _, n := range []int{1, 2, 127} { // a segment count below 128 takes one byte, not two
		assert.LessOrEqual(t, len(worstCaseCursor(table, n).encode()), sweepCursorWorstLen(n), n)
	}
	for _, n := range []int{128, MaxSweepSegments} {
		assert.Equal(t, sweepCursorWorstLen(n), len(worstCaseCursor(table, n).encode()), n)
	}
	assert.LessOrEqual(t, sweepCursorItemBytes(sweepCursorWorstLen(MaxSweepSegments)), cursorItemLimit)
	assert.Greater(t, sweepCursorItemBytes(sweepCursorWorstLen(MaxSweepSegments+1)), cursorItemLimit)
}

func TestWorstCaseCursorAtMaxSweepSegmentsIsSavedAndLoadedBack(t *testing.T) {
	ep := localstack.ForTest(t)
	ctx := context.Background()
	table := localstack.TableName("cursor" + strings.Repeat("-", 255)) // cut to 255 bytes, DynamoDB's longest
	require.Len(t, table, 255)
	require.NoError(t, EnsureTable(ctx, ep.Client, table, time.Minute))
	ddbtest.DeleteOnCleanup(t, ep.Client, table)

	want := worstCaseCursor(table, MaxSweepSegments)
	require.NoError(t, SaveSweepCursor(ctx, ep.Client, table, want.encode(), time.Unix(1_800_000_000, 0)))
	saved, err := LoadSweepCursor(ctx, ep.Client, table)
	require.NoError(t, err)
	got, err := sweepDecodeCursor(saved, table)
	require.NoError(t, err, "a sweep resumes from the saved cursor")
	assert.Equal(t, want, got)
}

func TestSaveSweepCursorRefusesACursorLargerThanAnItemWithoutACall(t *testing.T) {
	ep := localstack.ForTest(t)
	calls := ddbtest.NewCounter()
	client := ep.NewClient(calls.Install)
	cursor := strings.Repeat("A", 400_000)
	err := SaveSweepCursor(context.Background(), client, "keys", cursor, time.Unix(1_800_000_000, 0))
	require.ErrorIs(t, err, ErrCursorTooLarge)
	assert.Contains(t, err.Error(), "400 KB")
	assert.Zero(t, calls.Total())
}

func TestCursorOfVersion1IsStillRead(t *testing.T) {
	// A cursor saved by a sweeper before version 2, with a key of each type.
	v1 := base64.RawURLEncoding.EncodeToString([]byte(
		`{"v":1,"table":"keys","segments":[{"done":true},{"after":{"pk":{"S":"7:tenant<&>k"},"n":{"N":"-12"},"b":{"B":"AAH/"}}},{}]}`))
	c, err := sweepDecodeCursor(v1, "keys")
	require.NoError(t, err)
	assert.Equal(t, sweepCursorVersion, c.Version)
	assert.Equal(t, map[string]types.AttributeValue{"pk": attrS("7:tenant<&>k"), "n": attrN(-12), "b": attrB([]byte{0, 1, 255})},
		sweepKeyFromCursor(c.Segments[1].After))
	again, err := sweepDecodeCursor(c.encode(), "keys")
	require.NoError(t, err)
	assert.Equal(t, c, again, "re-encoded as version 2")
}
