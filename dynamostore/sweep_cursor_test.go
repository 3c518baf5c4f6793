package dynamostore

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	}
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
