package dynamostore

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/keyschema"
	"github.com/idemkey/idemkey/localstack"
)

func TestCursorRoundTripsEveryKeyType(t *testing.T) {
	key := map[string]types.AttributeValue{
		"pk": attrS("7:tenant-ak"), "n": attrN(-12), "b": attrB([]byte{0, 1, 255}),
	}
	after, ok := sweepKeyToCursor(key)
	require.True(t, ok)
	c := &sweepCursor{Table: "keys", Segments: []sweepSegCursor{{Done: true}, {After: after}, {}}}
	back, err := sweepDecodeCursor(c.encode(), "keys", "")
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
	cur := func(b ...byte) string {
		return base64.RawURLEncoding.EncodeToString(append([]byte{sweepCursorVersion, 4, 'k', 'e', 'y', 's', 0}, b...))
	}
	pk := []byte{2, 1, 2, 'p', 'k', 'S', 1, 'x'} // pending after one attribute: pk = "x"
	cases := map[string]string{
		"empty":                "",
		"not base64":           "***",
		"padded base64":        base64.URLEncoding.EncodeToString([]byte{sweepCursorVersion, 4, 'k', 'e', 'y', 's', 0, 2, 0, 1}),
		"JSON":                 base64.RawURLEncoding.EncodeToString([]byte(`{"v":1,"table":"keys","segments":[{}]}`)),
		"too long":             strings.Repeat("A", maxCursorLen+1),
		"no segment count":     cur(),
		"no segments":          cur(0),
		"too many segments":    cur(MaxSweepSegments+1-128|0x80, 1),
		"missing segment":      cur(2, 1),
		"unknown tag":          cur(1, 3),
		"trailing bytes":       cur(1, 1, 0),
		"truncated key":        cur(append([]byte{1}, pk[:5]...)...),
		"value past the end":   cur(1, 2, 1, 2, 'p', 'k', 'S', 9, 'x'),
		"no attributes":        cur(1, 2, 0),
		"unknown type":         cur(1, 2, 1, 2, 'p', 'k', 'L', 1, 'x'),
		"duplicate attribute":  cur(1, 2, 2, 2, 'p', 'k', 'S', 1, 'x', 2, 'p', 'k', 'S', 1, 'y'),
		"empty value":          cur(1, 2, 1, 2, 'p', 'k', 'B', 0),
		"empty name":           cur(1, 2, 1, 0, 'S', 1, 'x'),
		"other table":          base64.RawURLEncoding.EncodeToString([]byte{sweepCursorVersion, 1, 'o', 0, 1, 1}),
		"unreleased version 2": base64.RawURLEncoding.EncodeToString([]byte{2, 4, 'k', 'e', 'y', 's', 1, 1}),
		"unknown version byte": base64.RawURLEncoding.EncodeToString([]byte{4, 4, 'k', 'e', 'y', 's', 0, 1, 1}),
	}
	ok, err := sweepDecodeCursor(cur(append([]byte{1}, pk...)...), "keys", "")
	require.NoError(t, err, "the well-formed twin of the cases")
	assert.Equal(t, map[string]types.AttributeValue{"pk": attrS("x")}, sweepKeyFromCursor(ok.Segments[0].After))
	for name, c := range cases {
		_, err := sweepDecodeCursor(c, "keys", "")
		assert.ErrorIs(t, err, ErrInvalidCursor, name)
	}
}

func FuzzSweepCursor(f *testing.F) {
	after, _ := sweepKeyToCursor(map[string]types.AttributeValue{"pk": attrS("3:abck")})
	f.Add((&sweepCursor{Table: "keys", Segments: []sweepSegCursor{{Done: true}, {After: after}}}).encode())
	f.Add((&sweepCursor{Table: "keys", Region: "r", Segments: []sweepSegCursor{{}}}).encode())
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := sweepDecodeCursor(s, "keys", "")
		if err != nil {
			if c != nil {
				t.Fatal("a cursor with an error")
			}
			return
		}
		for _, seg := range c.Segments {
			_ = sweepKeyFromCursor(seg.After)
		}
		again, err := sweepDecodeCursor(c.encode(), "keys", "")
		if err != nil {
			t.Fatalf("re-encoded cursor rejected: %v", err)
		}
		assert.Equal(t, c, again)
	})
}

// worstCaseCursor returns the largest cursor a sweep of a key table can
// return with the given segments and region: every segment pending after
// a partition key of DynamoDB's maximal 2048 bytes, made of control
// characters, on a table with a 255-byte name.
func worstCaseCursor(table, region string, segments int) *sweepCursor {
	c := newSweepCursor(table, region, segments)
	for i := range c.Segments {
		pk := []byte(strings.Repeat("\x01", 2048))
		pk[0], pk[1] = byte('0'+i%10), byte('0'+i/10%10) // distinct keys
		after, _ := sweepKeyToCursor(map[string]types.AttributeValue{"pk": attrS(string(pk))})
		c.Segments[i].After = after
	}
	return c
}

// cursorItemSize is the size by DynamoDB's rules of the item SaveSweepCursor
// (region "") or SaveRegionSweepCursor writes for cursor: attribute names,
// the key, the cursor, and the "updated" number counted at its largest (21
// bytes). The limit is 400 KB counted as 400,000 bytes, the least that
// DynamoDB implementations accept.
func cursorItemSize(cursor, region string) int {
	key := sweepCursorKey
	if region != "" {
		key += "/" + region
	}
	return len("pk") + len(key) + len("cursor") + len(cursor) + len("updated") + 21
}

// longestRegion is a region name of MaxSweepRegionLen bytes.
var longestRegion = strings.Repeat("r", MaxSweepRegionLen)

func TestWorstCaseCursorAtMaxSweepSegmentsFitsInOneItemAndOneMoreSegmentWouldNot(t *testing.T) {
	table := strings.Repeat("t", 255)
	for _, region := range []string{"", longestRegion} {
		atMax := worstCaseCursor(table, region, MaxSweepSegments).encode()
		assert.LessOrEqual(t, cursorItemSize(atMax, region), 400_000, "the saved cursor is one item (region %q)", region)
		over := worstCaseCursor(table, region, MaxSweepSegments+1).encode()
		assert.Greater(t, cursorItemSize(over, region), 400_000, "MaxSweepSegments is the largest count that fits (region %q)", region)
	}
}

func TestRegionLongerThanMaxSweepRegionLenIsBoundedExplicitly(t *testing.T) {
	assert.GreaterOrEqual(t, MaxSweepRegionLen, len("ap-southeast-2")+10, "room for every AWS region name")
	// The bound is what keeps the worst-case item inside 400 KB; a region
	// as long as the remaining room would not fit.
	table := strings.Repeat("t", 255)
	room := 400_000 - cursorItemSize(worstCaseCursor(table, "", MaxSweepSegments).encode(), "")
	huge := strings.Repeat("r", room)
	assert.Greater(t, cursorItemSize(worstCaseCursor(table, huge, MaxSweepSegments).encode(), huge), 400_000)

	assert.Panics(t, func() {
		NewSweeper(dummySweepClient{}, "keys", func(o *SweepOptions) { o.Region = longestRegion + "r" })
	})
	assert.NotPanics(t, func() {
		NewSweeper(dummySweepClient{}, "keys", func(o *SweepOptions) { o.Region = longestRegion })
	})
}

// dummySweepClient is a SweepClient for constructors only: it is never
// called.
type dummySweepClient struct{ SweepClient }

func TestCursorWorstCaseComputationMatchesTheEncoder(t *testing.T) {
	table := strings.Repeat("t", 255)
	for _, n := range []int{1, 2, 127} { // a segment count below 128 takes one byte, not two
		assert.LessOrEqual(t, len(worstCaseCursor(table, longestRegion, n).encode()), sweepCursorWorstLen(n), n)
		assert.Less(t, len(worstCaseCursor(table, "", n).encode()), sweepCursorWorstLen(n), n)
	}
	for _, n := range []int{128, MaxSweepSegments} {
		assert.Equal(t, sweepCursorWorstLen(n), len(worstCaseCursor(table, longestRegion, n).encode()), n)
	}
	assert.LessOrEqual(t, sweepCursorItemBytes(sweepCursorWorstLen(MaxSweepSegments), longestRegion), cursorItemLimit)
	assert.Greater(t, sweepCursorItemBytes(sweepCursorWorstLen(MaxSweepSegments+1), longestRegion), cursorItemLimit)
	assert.Equal(t, cursorItemSize("abc", longestRegion), sweepCursorItemBytes(3, longestRegion))
	assert.Equal(t, cursorItemSize("abc", ""), sweepCursorItemBytes(3, ""))
}

func TestWorstCaseCursorAtMaxSweepSegmentsIsSavedAndLoadedBack(t *testing.T) {
	ep := localstack.ForTest(t)
	ctx := context.Background()
	table := localstack.TableName("cursor" + strings.Repeat("-", 255)) // cut to 255 bytes, DynamoDB's longest
	require.Len(t, table, 255)
	require.NoError(t, EnsureTable(ctx, ep.Client, table, time.Minute))
	ddbtest.DeleteOnCleanup(t, ep.Client, table)

	for _, region := range []string{"", longestRegion} {
		want := worstCaseCursor(table, region, MaxSweepSegments)
		require.NoError(t, defaultLayout.saveSweepCursor(ctx, ep.Client, table, region, want.encode(), time.Unix(1_800_000_000, 0)), region)
		saved, err := defaultLayout.loadSweepCursor(ctx, ep.Client, table, region)
		require.NoError(t, err)
		got, err := sweepDecodeCursor(saved, table, region)
		require.NoError(t, err, "a sweep resumes from the saved cursor")
		assert.Equal(t, want, got)
	}
}

func TestSaveSweepCursorRefusesACursorLargerThanAnItemWithoutACall(t *testing.T) {
	ep := localstack.ForTest(t)
	calls := ddbtest.NewCounter()
	client := ep.NewClient(calls.Install)
	cursor := strings.Repeat("A", 400_000)
	err := defaultLayout.saveSweepCursor(context.Background(), client, "keys", "", cursor, time.Unix(1_800_000_000, 0))
	require.ErrorIs(t, err, ErrCursorTooLarge)
	assert.Contains(t, err.Error(), "400 KB")
	assert.Zero(t, calls.Total())
}

func TestCursorIsItsVersionTableRegionAndSegmentsByteForByte(t *testing.T) {
	after, _ := sweepKeyToCursor(map[string]types.AttributeValue{"pk": attrS("x")})
	c := newSweepCursor("keys", "", 3)
	c.Segments[0].Done, c.Segments[2].After = true, after
	want := []byte{sweepCursorVersion, 4, 'k', 'e', 'y', 's', 0, 3, 1, 0, 2, 1, 2, 'p', 'k', 'S', 1, 'x'}
	assert.Equal(t, base64.RawURLEncoding.EncodeToString(want), c.encode())
	c.Region = "r1"
	want = append([]byte{sweepCursorVersion, 4, 'k', 'e', 'y', 's', 2, 'r', '1'}, want[7:]...)
	assert.Equal(t, base64.RawURLEncoding.EncodeToString(want), c.encode())
	assert.Equal(t, sweepCursorKey, cursorItemPK(""), "the region-less cursor item")
}

func TestCursorOfOneRegionIsRejectedByASweepOfAnotherRegionOrOfNone(t *testing.T) {
	east := newSweepCursor("keys", "us-east-1", 2)
	east.Segments[0].Done = true
	enc := east.encode()
	back, err := sweepDecodeCursor(enc, "keys", "us-east-1")
	require.NoError(t, err)
	assert.Equal(t, east, back)

	for name, c := range map[string]struct{ cursor, region string }{
		"another region":             {enc, "eu-west-1"},
		"a region's, read by none":   {enc, ""},
		"a prefix of the region":     {enc, "us-east"},
		"no region's, read by one":   {newSweepCursor("keys", "", 2).encode(), "us-east-1"},
		"no region's, spelled out":   {base64.RawURLEncoding.EncodeToString([]byte{3, 4, 'k', 'e', 'y', 's', 0, 1, 1}), "us-east-1"},
		"v3 with a region too long":  {base64.RawURLEncoding.EncodeToString(append(append([]byte{3, 4, 'k', 'e', 'y', 's', MaxSweepRegionLen + 1}, longestRegion+"r"...), 1, 1)), longestRegion + "r"},
		"v3 truncated in the region": {base64.RawURLEncoding.EncodeToString([]byte{3, 4, 'k', 'e', 'y', 's', 9, 'u', 's'}), "us"},
	} {
		_, err := sweepDecodeCursor(c.cursor, "keys", c.region)
		assert.ErrorIs(t, err, ErrInvalidCursor, name)
	}
	_, err = sweepDecodeCursor(enc, "keys", "eu-west-1")
	assert.Contains(t, err.Error(), "another region")
}

func TestEachRegionsCursorHasItsOwnItemAndAnOverlongRegionMakesNoCall(t *testing.T) {
	keys := map[string]bool{}
	for _, region := range []string{"", "us-east-1", "eu-west-1", "us-east-1/x", longestRegion} {
		key := cursorItemPK(region)
		assert.False(t, keys[key], "one item per region: %q", region)
		keys[key] = true
		_, _, isRecord := keyschema.Split(key)
		assert.False(t, isRecord, "never a record's partition key: %q", key)
		assert.LessOrEqual(t, len(key), len(sweepCursorKey)+1+MaxSweepRegionLen)
	}

	ep := localstack.ForTest(t)
	calls := ddbtest.NewCounter()
	client := ep.NewClient(calls.Install)
	tooLong := longestRegion + "r"
	_, err := defaultLayout.loadSweepCursor(context.Background(), client, "keys", tooLong)
	assert.ErrorContains(t, err, "MaxSweepRegionLen")
	err = defaultLayout.saveSweepCursor(context.Background(), client, "keys", tooLong, "c", time.Unix(1_800_000_000, 0))
	assert.ErrorContains(t, err, "MaxSweepRegionLen")
	assert.Zero(t, calls.Total())
}

// clockedScans advances the clock after every Scan, so that a Budget of
// one step ends a sweep after one page.
type clockedScans struct {
	SweepClient
	clock *ddbtest.Clock
	step  time.Duration
}

func (c *clockedScans) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	out, err := c.SweepClient.Scan(ctx, in, optFns...)
	c.clock.Advance(c.step)
	return out, err
}

// regionalTable is a key table without TTL holding, for each region, ten
// completed records that region wrote and that expired an hour ago.
func regionalTable(t *testing.T, regions ...string) (*localstack.Endpoint, string, *ddbtest.Clock) {
	t.Helper()
	ep := localstack.ForTest(t)
	ctx := context.Background()
	table := localstack.TableName("regcursor")
	require.NoError(t, EnsureTableWithoutTTL(ctx, ep.Client, table, time.Minute))
	ddbtest.DeleteOnCleanup(t, ep.Client, table)
	clock := ddbtest.NewClock(time.Date(2027, 1, 15, 8, 0, 0, 0, time.UTC))
	for _, region := range regions {
		s := New(ep.Client, table, func(o *Options) {
			o.Region, o.Lease, o.Retention = region, time.Minute, time.Hour
			o.Now = func() time.Time { return clock.Now().Add(-2 * time.Hour) }
		})
		for i := range 10 {
			key := fmt.Sprintf("%s-%d", region, i)
			c, err := s.Claim(ctx, Request{Scope: "tenant", Key: key, Method: "POST", Path: "/p", Fingerprint: make([]byte, 32)})
			require.NoError(t, err)
			_, err = s.Commit(ctx, c, Response{Status: 201}, nil)
			require.NoError(t, err)
		}
	}
	return ep, table, clock
}

// On a global table each region runs its own scheduled sweeper with
// Region set. Their cursor items replicate to every replica, which is one
// table here: each sweeper must find its own cursor, not the other's.
func TestRegionalSweepersOnOneGlobalTableKeepTheirOwnCursors(t *testing.T) {
	ep, table, clock := regionalTable(t, "us-east-1", "eu-west-1")
	ctx := context.Background()
	client := &clockedScans{SweepClient: ep.Client, clock: clock, step: time.Second}
	evicted, sweeps := map[string]int64{}, map[string]int{}
	finished := map[string]bool{}
	for round := 0; round < 20 && !(finished["us-east-1"] && finished["eu-west-1"]); round++ {
		for _, region := range []string{"us-east-1", "eu-west-1"} {
			if finished[region] {
				continue
			}
			cursor, err := defaultLayout.loadSweepCursor(ctx, ep.Client, table, region)
			require.NoError(t, err)
			require.Equal(t, round > 0, cursor != "", "%s resumes from round 1 on (round %d)", region, round)
			s := NewSweeper(client, table, func(o *SweepOptions) {
				o.Region, o.Segments, o.PageSize, o.ItemsPerSecond = region, 1, 4, -1
				o.Budget, o.Now = time.Second, clock.Now // one page per sweep
			})
			r, err := s.Sweep(ctx, cursor)
			require.NoError(t, err, "%s resumes from its own cursor (round %d)", region, round)
			require.NoError(t, defaultLayout.saveSweepCursor(ctx, ep.Client, table, region, r.Cursor, clock.Now()))
			evicted[region] += r.Evicted
			sweeps[region]++
			finished[region] = r.Finished
		}
		if round == 0 {
			keys := itemKeys(t, ep.Client, table)
			assert.Contains(t, keys, sweepCursorKey+"/us-east-1")
			assert.Contains(t, keys, sweepCursorKey+"/eu-west-1")
			assert.NotContains(t, keys, sweepCursorKey)
		}
	}
	assert.Equal(t, map[string]bool{"us-east-1": true, "eu-west-1": true}, finished)
	assert.Equal(t, map[string]int64{"us-east-1": 10, "eu-west-1": 10}, evicted, "each evicted its own region's records")
	assert.Greater(t, sweeps["us-east-1"], 2, "budgeted to one page, each had to resume")
	assert.Greater(t, sweeps["eu-west-1"], 2)
	assert.Empty(t, itemKeys(t, ep.Client, table), "every record evicted, both finished passes deleted their cursor items")
}

// The items that are not key records (the cursor items, every region's,
// and multiregion's topology record) are foreign to every sweep, even with
// attributes that would make a record expired.
func TestSweepersLeaveEveryCursorItemAndTheTopologyRecordAlone(t *testing.T) {
	ep, table, clock := regionalTable(t)
	ctx := context.Background()
	reserved := []string{sweepCursorKey, cursorItemPK("us-east-1"), cursorItemPK("eu-west-1"),
		"#idemkey/multiregion/topology"} // multiregion.TopologyPartitionKey
	for _, pk := range reserved {
		_, err := ep.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: map[string]types.AttributeValue{
			PartitionKey: attrS(pk), TTLAttribute: attrN(1), attrCreated: attrN(1), attrState: attrS(string(StateCompleted)),
			attrRegion: attrS("us-east-1"), attrSweepCursor: attrS("c"),
		}})
		require.NoError(t, err)
	}
	for _, region := range []string{"", "us-east-1", "eu-west-1"} {
		r, err := NewSweeper(ep.Client, table, func(o *SweepOptions) { o.Region, o.Now = region, clock.Now }).Sweep(ctx, "")
		require.NoError(t, err, region)
		assert.Equal(t, int64(len(reserved)), r.Foreign, region)
		assert.Zero(t, r.Evicted+r.Reclaimed+r.Skipped, region)
	}
	assert.ElementsMatch(t, reserved, itemKeys(t, ep.Client, table))
}

// itemKeys returns the sorted partition keys of every item in table.
func itemKeys(t *testing.T, client *dynamodb.Client, table string) []string {
	t.Helper()
	keys := []string{}
	p := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: &table, ProjectionExpression: aws.String(PartitionKey), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		require.NoError(t, err)
		for _, item := range page.Items {
			pk, err := getS(item, PartitionKey)
			require.NoError(t, err)
			keys = append(keys, pk)
		}
	}
	sort.Strings(keys)
	return keys
}

// A stored cursor keeps its pass's number of segments, so that the pass
// covers the table once: Resume with another Segments continues it as it
// was, says so at Info, and the new number applies from the next pass.
func TestResumeWithAnotherSegmentsContinuesThePassAndSaysSo(t *testing.T) {
	ep, table, clock := regionalTable(t, "")
	ctx := context.Background()
	client := &clockedScans{SweepClient: ep.Client, clock: clock, step: time.Second}
	sweeper := func(segments int, logs *bytes.Buffer) *Sweeper {
		return NewSweeper(client, table, func(o *SweepOptions) {
			o.Segments, o.PageSize, o.ItemsPerSecond = segments, 4, -1
			o.Budget, o.Now = time.Second, clock.Now // one page per sweep
			o.Logger = slog.New(slog.NewTextHandler(logs, nil))
		})
	}
	var logs bytes.Buffer
	r, err := sweeper(1, &logs).Resume(ctx)
	require.NoError(t, err)
	require.False(t, r.Finished)
	assert.NotContains(t, logs.String(), "Segments applies from the next pass")

	logs.Reset()
	r, err = sweeper(4, &logs).Resume(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, r.Segments, "the stored pass goes on with its one segment")
	assert.Contains(t, logs.String(), "Segments applies from the next pass")
	assert.Contains(t, logs.String(), "pass_segments=1 segments=4")
}

// cursorSegmentBytes is the largest segment of a key table's cursor: pending
// after a "pk" of maxPartitionKeyBytes.
const cursorSegmentBytes = 1 + 1 + 1 + len(PartitionKey) + 1 + 2 + maxPartitionKeyBytes

// sweepCursorWorstLen bounds the cursor strings a sweep of a key table with
// segments segments returns; the bound is reached from 128 segments.
func sweepCursorWorstLen(segments int) int {
	return base64.RawURLEncoding.EncodedLen(cursorHeaderBytes + segments*cursorSegmentBytes)
}

// sweepCursorItemBytes is the size of the cursor item on the default schema.
func sweepCursorItemBytes(cursorLen int, region string) int {
	return defaultLayout.cursorItemBytes(cursorLen, region)
}

// cursorItemPK is the partition key value of region's cursor item on the
// default schema.
func cursorItemPK(region string) string {
	return defaultLayout.cursorItemKey(region)[PartitionKey].(*types.AttributeValueMemberS).Value
}
