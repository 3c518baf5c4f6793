package dynamostore_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/localstack"
)

// emulatorScans is a SweepClient that closes two gaps of the embedded
// emulator (minidyn v0.8.2) that a sweep depends on, measured by
// scanGaps:
//
//   - it ignores Segment and TotalSegments: every segment of a parallel
//     scan returns the whole table;
//   - a Scan whose ExclusiveStartKey names an item deleted since returns no
//     item and no LastEvaluatedKey, ending the scan early, where DynamoDB
//     continues after the key's position. A sweep often deletes the last
//     item of a page.
//
// When emulate is set, it serves a page of segment s of n as DynamoDB
// would: the items whose pk hashes (FNV-1a) to s modulo n, in the
// emulator's order (pk byte order), after ExclusiveStartKey, at most Limit
// of them, with LastEvaluatedKey set to the last one when Limit was
// reached, and ScannedCount to the number served. It reads them with
// unsegmented Scans of the emulator, each starting after a placeholder
// item whose pk is the start key's followed by a NUL byte: it sorts
// right after the start key, exists whether or not the start key still
// does, and is no record's key. The placeholder lives only during its
// Scan, and scans are serialised by mu, so no Scan through this client
// ever returns it. When emulate is false (DynamoDB Local, LocalStack,
// real DynamoDB, or a front that has closed both gaps), every call passes
// through. Emulated scans and placeholders go through raw, so that the
// wrapped client sees the sweep's own deletes only (and no Scan).
//
// This belongs in the localstack front; see the report of the sweeper
// work. It only works for tables whose key is pk alone, the key table.
type emulatorScans struct {
	dynamostore.SweepClient
	raw     *dynamodb.Client
	emulate bool
	mu      sync.Mutex
}

func pkOf(item map[string]types.AttributeValue) string {
	return item["pk"].(*types.AttributeValueMemberS).Value
}

func (c *emulatorScans) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	if !c.emulate {
		return c.SweepClient.Scan(ctx, in, optFns...)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	limit := int(aws.ToInt32(in.Limit))
	segments := max(1, int(aws.ToInt32(in.TotalSegments)))
	page := &dynamodb.ScanOutput{}
	var after *string
	if in.ExclusiveStartKey != nil {
		after = aws.String(pkOf(in.ExclusiveStartKey))
	}
	for {
		part := *in
		part.Segment, part.TotalSegments, part.ExclusiveStartKey = nil, nil, nil
		if limit > 0 {
			part.Limit = aws.Int32(int32(limit * segments))
		}
		out, err := c.scanAfter(ctx, &part, after, optFns)
		if err != nil {
			return nil, err
		}
		for _, item := range out.Items {
			if inSegment(pkOf(item), in.Segment, in.TotalSegments) {
				page.Items = append(page.Items, item)
			}
			if limit > 0 && len(page.Items) == limit {
				page.LastEvaluatedKey = map[string]types.AttributeValue{"pk": item["pk"]}
				break
			}
		}
		if page.LastEvaluatedKey != nil || len(out.LastEvaluatedKey) == 0 {
			break
		}
		after = aws.String(pkOf(out.LastEvaluatedKey))
	}
	page.Count, page.ScannedCount = int32(len(page.Items)), int32(len(page.Items))
	return page, nil
}

// scanAfter runs in on the emulator from just after pk after (nil: from the
// start), through a placeholder item.
func (c *emulatorScans) scanAfter(ctx context.Context, in *dynamodb.ScanInput, after *string, optFns []func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	if after == nil {
		return c.raw.Scan(ctx, in, optFns...)
	}
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: *after + "\x00"}}
	if _, err := c.raw.PutItem(ctx, &dynamodb.PutItemInput{TableName: in.TableName, Item: key}); err != nil {
		return nil, err
	}
	in.ExclusiveStartKey = key
	out, err := c.raw.Scan(ctx, in, optFns...)
	if _, derr := c.raw.DeleteItem(context.WithoutCancel(ctx), &dynamodb.DeleteItemInput{TableName: in.TableName, Key: key}); derr != nil && err == nil {
		err = derr
	}
	return out, err
}

func inSegment(pk string, segment, total *int32) bool {
	if total == nil || *total <= 1 {
		return true
	}
	h := fnv.New32a()
	h.Write([]byte(pk))
	return int32(h.Sum32()%uint32(*total)) == aws.ToInt32(segment)
}

var (
	gapsMu    sync.Mutex
	gapsByURL = map[string]bool{}
)

// scanGaps reports whether the endpoint has either scan gap that
// emulatorScans closes, measured once per endpoint on a table of its own.
func scanGaps(t testing.TB, ep *localstack.Endpoint) bool {
	t.Helper()
	gapsMu.Lock()
	defer gapsMu.Unlock()
	if gaps, ok := gapsByURL[ep.URL]; ok {
		return gaps
	}
	ctx := context.Background()
	c := ep.Client
	table := localstack.TableName("scan-gaps")
	require.NoError(t, dynamostore.EnsureTable(ctx, c, table, 0))
	defer func() { _, _ = c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &table}) }()
	const n = 16
	for i := range n {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table,
			Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("probe-%02d", i)}}})
		require.NoError(t, err)
	}
	half, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: &table, Segment: aws.Int32(0), TotalSegments: aws.Int32(2)})
	require.NoError(t, err)
	segmentsIgnored := half.Count == n

	first, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: &table, Limit: aws.Int32(1)})
	require.NoError(t, err)
	require.NotEmpty(t, first.LastEvaluatedKey)
	_, err = c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &table, Key: first.LastEvaluatedKey})
	require.NoError(t, err)
	rest, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: &table, ExclusiveStartKey: first.LastEvaluatedKey})
	require.NoError(t, err)
	deletedStartEndsScan := rest.Count == 0

	gaps := segmentsIgnored || deletedStartEndsScan
	t.Logf("scan gaps of %s: segments ignored %v, deleted start key ends the scan %v", ep.URL, segmentsIgnored, deletedStartEndsScan)
	gapsByURL[ep.URL] = gaps
	return gaps
}

// sweepClient returns emulatorScans for e's endpoint, passing calls on to
// client (default e.client).
func (e *env) sweepClient(t testing.TB, client dynamostore.SweepClient) *emulatorScans {
	if client == nil {
		client = e.client
	}
	return &emulatorScans{SweepClient: client, raw: e.ep.Client, emulate: scanGaps(t, e.ep)}
}

// Seeded record kinds.
const (
	liveCompleted = iota
	liveInProgress
	expired
	stuck
	kinds
)

// seeded is the truth about a seeded table, as of the seeding clock's now.
type seeded struct {
	now     time.Time
	byKind  [kinds][]string // partition keys by kind
	oldest  time.Duration   // age of the oldest live record
	lag     time.Duration   // how long ago the oldest expired record expired
	records int
}

func (s *seeded) count(kind int) int64 { return int64(len(s.byKind[kind])) }

func (s *seeded) live() int64 { return s.count(liveCompleted) + s.count(liveInProgress) }

const seedScope = "tenant-seed"

func seedKey(i int) string { return fmt.Sprintf("order-%05d", i) }

// seed writes n records through BatchWriteItem, encoded as the store
// encodes them, kind i%4 for record i, and returns the truth at now:
//
//   - live completed: claimed 1h+i s ago, expires in 23h-i s;
//   - live in progress: claimed i ms ago, lock for 5 more minutes;
//   - expired (every other one in progress): expired 24h+i s ago;
//   - stuck: claimed 10m+i s ago, lock expired 5m+i s ago, not expired.
func seed(t testing.TB, client *dynamodb.Client, table string, now time.Time, n int) *seeded {
	t.Helper()
	s := &seeded{now: now, records: n}
	var batch []types.WriteRequest
	flush := func() {
		for len(batch) > 0 {
			out, err := client.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{
				RequestItems: map[string][]types.WriteRequest{table: batch}})
			require.NoError(t, err)
			batch = out.UnprocessedItems[table]
		}
	}
	for i := range n {
		at := time.Duration(i) * time.Second
		rec := &dynamostore.Record{Scope: seedScope, Key: seedKey(i), Method: "POST", Path: "/payments",
			Fingerprint: fp(seedKey(i)), LockToken: fmt.Sprintf("lock-%d", i), State: dynamostore.StateInProgress}
		kind := i % kinds
		switch kind {
		case liveCompleted:
			rec.Created = now.Add(-time.Hour - at)
			rec.State, rec.Completed = dynamostore.StateCompleted, rec.Created.Add(time.Second)
			rec.Response = &dynamostore.Response{Status: 201, Body: []byte(`{"id":"p"}`)}
			s.oldest = max(s.oldest, now.Sub(rec.Created))
		case liveInProgress:
			rec.Created = now.Add(-time.Duration(i) * time.Millisecond)
			rec.LockExpires = now.Add(5 * time.Minute)
			s.oldest = max(s.oldest, now.Sub(rec.Created))
		case expired:
			rec.Created = now.Add(-48*time.Hour - at)
			if i%8 == expired {
				rec.State, rec.Completed = dynamostore.StateCompleted, rec.Created
				rec.Response = &dynamostore.Response{Status: 200}
			}
		case stuck:
			rec.Created = now.Add(-10*time.Minute - at)
			rec.LockExpires = rec.Created.Add(5 * time.Minute)
		}
		if rec.LockExpires.IsZero() {
			rec.LockExpires = rec.Created.Add(5 * time.Minute)
		}
		rec.Expires = rec.Created.Add(24 * time.Hour)
		if kind == expired {
			s.lag = max(s.lag, now.Sub(rec.Expires))
		}
		s.byKind[kind] = append(s.byKind[kind], dynamostore.PartitionKeyFor(rec.Scope, rec.Key))
		batch = append(batch, types.WriteRequest{PutRequest: &types.PutRequest{Item: dynamostore.SweepTestItem(rec)}})
		if len(batch) == 25 {
			flush()
		}
	}
	flush()
	return s
}

// tableKeys returns the partition keys in table, sorted, read with one
// unlimited Scan (which the emulator answers in one page).
func tableKeys(t testing.TB, client *dynamodb.Client, table string) []string {
	t.Helper()
	var keys []string
	p := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: &table, ProjectionExpression: aws.String("pk"), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		require.NoError(t, err)
		for _, item := range page.Items {
			keys = append(keys, item["pk"].(*types.AttributeValueMemberS).Value)
		}
	}
	sort.Strings(keys)
	return keys
}

func sortedUnion(lists ...[]string) []string {
	var all []string
	for _, l := range lists {
		all = append(all, l...)
	}
	sort.Strings(all)
	return all
}

// scanClock advances a clock by step after every Scan: a sweep whose pages
// take time, without waiting for it.
type scanClock struct {
	dynamostore.SweepClient
	advance func(time.Duration)
	step    time.Duration
}

func (c *scanClock) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	out, err := c.SweepClient.Scan(ctx, in, optFns...)
	c.advance(c.step)
	return out, err
}

// deleteHook calls before(pk) ahead of each DeleteItem it passes on.
type deleteHook struct {
	dynamostore.SweepClient
	before func(pk string)
}

func (c *deleteHook) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.before(in.Key["pk"].(*types.AttributeValueMemberS).Value)
	return c.SweepClient.DeleteItem(ctx, in, optFns...)
}

// noKeysIn fails t if a seeded key or scope appears in out: every seeded
// key begins with "order-".
func noKeysIn(t *testing.T, out []byte) {
	t.Helper()
	require.NotContains(t, string(out), "order-", "a raw key was logged")
	require.NotContains(t, string(out), seedScope, "a raw scope was logged")
}
