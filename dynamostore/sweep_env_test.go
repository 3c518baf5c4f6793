package dynamostore_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/keyschema"
)

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
	s := &seeded{now: now}
	recs := make([]*dynamostore.Record, n)
	for i := range n {
		recs[i] = s.add(i, i%kinds)
	}
	put(t, client, table, recs)
	return s
}

// seedLock returns the lock token of seeded record i, in the form of the
// tokens a Store draws (8 bytes in base64url), so that its conditions
// compare it with theirs.
func seedLock(i int) string {
	return base64.RawURLEncoding.EncodeToString(binary.BigEndian.AppendUint64(nil, uint64(i)))
}

// add returns record i of the given kind, as seed describes it, and
// counts it in the truth.
func (s *seeded) add(i, kind int) *dynamostore.Record {
	now := s.now
	at := time.Duration(i) * time.Second
	rec := &dynamostore.Record{Scope: seedScope, Key: seedKey(i), Method: "POST", Path: "/payments",
		Fingerprint: fp(seedKey(i)), LockToken: seedLock(i), State: dynamostore.StateInProgress}
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
	s.byKind[kind] = append(s.byKind[kind], keyschema.PartitionKey(rec.Scope, rec.Key))
	s.records++
	return rec
}

// put writes the records through BatchWriteItem, encoded as the store
// encodes them.
func put(t testing.TB, client *dynamodb.Client, table string, recs []*dynamostore.Record) {
	t.Helper()
	var batch []types.WriteRequest
	flush := func() {
		for len(batch) > 0 {
			out, err := client.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{
				RequestItems: map[string][]types.WriteRequest{table: batch}})
			require.NoError(t, err)
			batch = out.UnprocessedItems[table]
		}
	}
	for _, rec := range recs {
		batch = append(batch, types.WriteRequest{PutRequest: &types.PutRequest{Item: dynamostore.SweepTestItem(rec)}})
		if len(batch) == 25 {
			flush()
		}
	}
	flush()
}

// tableKeys returns the partition keys in table, sorted, read with one
// unlimited Scan (which the emulator answers in one page), but for the
// note of the last scan that found no record outside the expiry index.
func tableKeys(t testing.TB, client *dynamodb.Client, table string) []string {
	t.Helper()
	var keys []string
	p := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: &table, ProjectionExpression: aws.String("pk"), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		require.NoError(t, err)
		for _, item := range page.Items {
			pk := item["pk"].(*types.AttributeValueMemberS).Value
			if pk != dynamostore.IndexCompleteKey && !strings.HasPrefix(pk, dynamostore.IndexCompleteKey+"/") {
				keys = append(keys, pk)
			}
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

// scanClock advances a clock by step after every Scan (and Query, unless
// scansOnly): a sweep whose pages take time, without waiting for it.
type scanClock struct {
	dynamostore.SweepClient
	advance   func(time.Duration)
	step      time.Duration
	scansOnly bool
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
	// sent, when set, gets the number of attempts the SDK made of each
	// delete (more than one after a timeout or a dropped connection).
	sent func(pk string, attempts int)
}

func (c *deleteHook) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	pk := in.Key["pk"].(*types.AttributeValueMemberS).Value
	c.before(pk)
	if c.sent == nil {
		return c.SweepClient.DeleteItem(ctx, in, optFns...)
	}
	var n int
	out, err := c.SweepClient.DeleteItem(ctx, in, append(optFns, dynamostore.CountAttempts(&n))...)
	c.sent(pk, n)
	return out, err
}

// noKeysIn fails t if a seeded key or scope appears in out: every seeded
// key begins with "order-".
func noKeysIn(t *testing.T, out []byte) {
	t.Helper()
	require.NotContains(t, string(out), "order-", "a raw key was logged")
	require.NotContains(t, string(out), seedScope, "a raw scope was logged")
}
