package dynamostore_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
)

// indexEnv returns an env whose sweeper runs in SweepIndex mode, on a
// table with the expiry index unless bare.
func indexEnv(t *testing.T, bare bool) *env {
	t.Helper()
	e := newEnv(t)
	e.mode = dynamostore.SweepIndex
	if !bare {
		require.NoError(t, dynamostore.EnsureExpiryIndex(context.Background(), e.ep.Client, e.table, dynamostore.KeySchema{}, 0))
		e.indexComplete(t)
	}
	return e
}

// expiryIndex returns the description of the table's expiry index, nil
// when it has none.
func expiryIndex(t *testing.T, client *dynamodb.Client, table string) *types.GlobalSecondaryIndexDescription {
	t.Helper()
	out, err := client.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: &table})
	require.NoError(t, err)
	for i, g := range out.Table.GlobalSecondaryIndexes {
		if aws.ToString(g.IndexName) == dynamostore.ExpiryIndexName {
			return &out.Table.GlobalSecondaryIndexes[i]
		}
	}
	return nil
}

// createIndex adds an index named like the expiry index with the given
// sort key and projection: one EnsureExpiryIndex did not make.
func createIndex(t *testing.T, client *dynamodb.Client, table, sortKey string, projection types.ProjectionType) {
	t.Helper()
	_, err := client.UpdateTable(context.Background(), &dynamodb.UpdateTableInput{
		TableName: &table,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(dynamostore.ExpiryBucketAttribute), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(sortKey), AttributeType: types.ScalarAttributeTypeN},
		},
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
			IndexName: aws.String(dynamostore.ExpiryIndexName),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(dynamostore.ExpiryBucketAttribute), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(sortKey), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: projection},
		}}},
	})
	require.NoError(t, err)
}

func TestIndexSweepRefusesATableWithoutTheIndexAndNamesTheRemedy(t *testing.T) {
	e := indexEnv(t, true)
	ctx := context.Background()
	seed(t, e.ep.Client, e.table, e.clock.Now(), 40)
	sweeper := e.sweeper(e.client)
	e.calls.Reset()

	r, err := sweeper.Sweep(ctx, "")
	require.ErrorIs(t, err, dynamostore.ErrExpiryIndex)
	assert.Nil(t, r)
	for _, want := range []string{e.table, dynamostore.ExpiryIndexName, "EnsureExpiryIndex", "idemctl", "has no global secondary index"} {
		assert.Contains(t, err.Error(), want)
	}
	assert.Equal(t, 1, e.calls.Count("DescribeTable"))
	assert.Equal(t, 1, e.calls.Total(), "nothing read, nothing deleted")
	_, err = sweeper.Resume(ctx)
	require.ErrorIs(t, err, dynamostore.ErrExpiryIndex, "Resume refuses it too")
	assert.Len(t, tableKeys(t, e.ep.Client, e.table), 40)

	// Once the index exists, the same sweeper sweeps, and checks the
	// table no more.
	require.NoError(t, dynamostore.EnsureExpiryIndex(ctx, e.ep.Client, e.table, dynamostore.KeySchema{}, 0))
	e.calls.Reset()
	for range 2 {
		r, err = sweeper.Sweep(ctx, "")
		require.NoError(t, err)
		assert.True(t, r.Finished)
	}
	assert.Equal(t, 1, e.calls.Count("DescribeTable"), "checked once per Sweeper")
}

func TestEnsureExpiryIndexCreatesTheIndexOnceAndThenAcceptsIt(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	require.Nil(t, expiryIndex(t, e.ep.Client, e.table))
	e.calls.Reset()
	require.NoError(t, dynamostore.EnsureExpiryIndex(ctx, e.client, e.table, dynamostore.KeySchema{}, 0))
	assert.Equal(t, 1, e.calls.Count("UpdateTable"))

	gsi := expiryIndex(t, e.ep.Client, e.table)
	require.NotNil(t, gsi)
	assert.Equal(t, []types.KeySchemaElement{
		{AttributeName: aws.String(dynamostore.ExpiryBucketAttribute), KeyType: types.KeyTypeHash},
		{AttributeName: aws.String(dynamostore.TTLAttribute), KeyType: types.KeyTypeRange},
	}, gsi.KeySchema)
	require.NotNil(t, gsi.Projection)
	assert.Equal(t, types.ProjectionTypeInclude, gsi.Projection.ProjectionType)
	assert.ElementsMatch(t, []string{"c", "e", "g", "idemkey"}, gsi.Projection.NonKeyAttributes)

	e.calls.Reset()
	require.NoError(t, dynamostore.EnsureExpiryIndex(ctx, e.client, e.table, dynamostore.KeySchema{}, 0))
	assert.Zero(t, e.calls.Count("UpdateTable"), "an index that fits is left as it is")
}

func TestEnsureExpiryIndexAndTheSweeperRejectAnIndexWithAnotherKeySchema(t *testing.T) {
	e := indexEnv(t, true)
	ctx := context.Background()
	createIndex(t, e.ep.Client, e.table, "created", types.ProjectionTypeAll)

	err := dynamostore.EnsureExpiryIndex(ctx, e.client, e.table, dynamostore.KeySchema{}, 0)
	require.ErrorIs(t, err, dynamostore.ErrExpiryIndex)
	assert.Contains(t, err.Error(), `has partition key "exp_bucket" and sort key "created"; it must have partition key "exp_bucket" and sort key "exp"`)
	assert.Contains(t, err.Error(), e.table)

	_, err = e.sweeper(e.client).Sweep(ctx, "")
	require.ErrorIs(t, err, dynamostore.ErrExpiryIndex)
	assert.Contains(t, err.Error(), `sort key "created"`)
	assert.Contains(t, err.Error(), "EnsureExpiryIndex")
}

func TestEnsureExpiryIndexRejectsAnIndexThatProjectsOnlyTheKeys(t *testing.T) {
	e := indexEnv(t, true)
	createIndex(t, e.ep.Client, e.table, dynamostore.TTLAttribute, types.ProjectionTypeKeysOnly)
	err := dynamostore.EnsureExpiryIndex(context.Background(), e.client, e.table, dynamostore.KeySchema{}, 0)
	require.ErrorIs(t, err, dynamostore.ErrExpiryIndex)
	assert.Contains(t, err.Error(), "projects KEYS_ONLY; it must project INCLUDE c, e, g, idemkey exactly, so that a commit writes no index entry: "+
		"delete the index and call EnsureExpiryIndex again to recreate it")
}

func TestEnsureExpiryIndexOfAMissingTableIsAStoreError(t *testing.T) {
	e := newEnv(t)
	err := dynamostore.EnsureExpiryIndex(context.Background(), e.client, e.table+"-missing", dynamostore.KeySchema{}, 0)
	var se *dynamostore.StoreError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "DescribeTable", se.Op)
	var notFound *types.ResourceNotFoundException
	assert.ErrorAs(t, err, &notFound)
}

// seedWithLive seeds 100 expired, 100 stuck and 100 live in-progress
// records, the same in every table, and live completed records after them.
func seedWithLive(t *testing.T, e *env, live int) *seeded {
	t.Helper()
	s := &seeded{now: e.clock.Now()}
	var recs []*dynamostore.Record
	for i := range 400 {
		if kind := i % kinds; kind != liveCompleted {
			recs = append(recs, s.add(i, kind))
		}
	}
	for i := range live {
		recs = append(recs, s.add(10_000+i*kinds, liveCompleted))
	}
	put(t, e.ep.Client, e.table, recs)
	return s
}

// The cost of an index sweep follows the records it has work on, not the
// table: the same expired records among the same stuck and in-flight ones
// and 200 or 2000 live completed ones cost the same queries and the same
// read units.
func TestIndexSweepReadCostDoesNotDependOnTheNumberOfLiveRecords(t *testing.T) {
	run := func(t *testing.T, mode dynamostore.SweepMode, live int) (*dynamostore.SweepReport, int) {
		e := newEnv(t)
		e.mode = mode
		indexFor(t, mode, e.ep.Client, e.table, dynamostore.KeySchema{})
		if e.indexed() {
			e.indexComplete(t)
		}
		truth := seedWithLive(t, e, live)
		require.Equal(t, int64(dynamostore.ExpiryIndexShards), nextShards(truth.byKind[liveCompleted]),
			"every shard holds a live completed record in both tables")
		e.calls.Reset()
		r, err := e.sweeper(e.client).Sweep(context.Background(), "")
		require.NoError(t, err)
		require.True(t, r.Finished)
		assert.Equal(t, truth.count(expired), r.Evicted)
		assert.Equal(t, e.reclaimed(truth), r.Reclaimed)
		return r, e.calls.Count(e.readOp())
	}
	small, smallReads := run(t, dynamostore.SweepIndex, 200)
	large, largeReads := run(t, dynamostore.SweepIndex, 2000)
	assert.Equal(t, smallReads, largeReads, "queries")
	assert.Equal(t, small.Pages, large.Pages)
	assert.Equal(t, small.Scanned, large.Scanned, "index entries read")
	assert.Equal(t, int64(100+dynamostore.ExpiryIndexShards), large.Scanned, "the 100 expired records and one live record per shard")
	assert.Positive(t, small.ConsumedReadUnits)
	assert.Equal(t, small.ConsumedReadUnits, large.ConsumedReadUnits, "read units, as the backend reports them")

	// A scan reads the table: its cost grows with the live records.
	smallScan, _ := run(t, dynamostore.SweepScan, 200)
	largeScan, _ := run(t, dynamostore.SweepScan, 2000)
	assert.Equal(t, int64(2300), largeScan.Scanned)
	assert.Greater(t, largeScan.ConsumedReadUnits, smallScan.ConsumedReadUnits)
}

// Claims run while the sweep does: claims of new keys, and claims of
// expired and stuck keys (whose records a claim replaces), half of them
// completed at once. Whatever the interleaving, every record those claims
// wrote is still there, and every expired or stuck record nobody claimed
// is gone.
func TestSweepNeverDeletesALiveOrReclaimedRecordUnderConcurrentClaims(t *testing.T) {
	inModes(t, testSweepNeverDeletesALiveOrReclaimedRecordUnderConcurrentClaims)
}

func testSweepNeverDeletesALiveOrReclaimedRecordUnderConcurrentClaims(t *testing.T, e *env) {
	ctx := context.Background()
	truth := seed(t, e.ep.Client, e.table, e.clock.Now(), 800)
	store := e.store(nil)
	var keys []string // claimed during the sweep
	for i := range 800 {
		if kind := i % kinds; (kind == expired || kind == stuck) && (i/kinds)%2 == 0 {
			keys = append(keys, seedKey(i))
		}
	}
	for i := range 50 {
		keys = append(keys, fmt.Sprintf("new-%d", i))
	}
	claims := make([]*dynamostore.Claim, len(keys))
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	const claimers = 4
	for w := range claimers {
		wg.Go(func() {
			for i := w; i < len(keys); i += claimers {
				c, err := store.Claim(ctx, dynamostore.Request{Scope: seedScope, Key: keys[i], Method: "POST", Path: "/payments", Fingerprint: fp("again " + keys[i])})
				if err == nil && c.Result == dynamostore.Acquired && i%2 == 0 {
					_, err = store.Commit(ctx, c, dynamostore.Response{Status: 201}, nil)
				}
				claims[i], errs[i] = c, err
			}
		})
	}
	var r *dynamostore.SweepReport
	var sweepErr error
	wg.Go(func() {
		r, sweepErr = e.sweeper(e.client, func(o *dynamostore.SweepOptions) { o.PageSize = 10 }).Sweep(ctx, "")
	})
	wg.Wait()
	require.NoError(t, sweepErr)
	require.True(t, r.Finished)
	checkIdentity(t, r)

	for i, key := range keys {
		require.NoError(t, errs[i], key)
		require.Equal(t, dynamostore.Acquired, claims[i].Result, key)
		rec, err := store.Get(ctx, seedScope, key)
		require.NoError(t, err, "the record the claim of %s wrote was deleted", key)
		assert.Equal(t, claims[i].Record.LockToken, rec.LockToken, key)
	}
	claimed := map[string]bool{}
	for _, key := range keys {
		claimed[key] = true
	}
	remaining := map[string]bool{}
	for _, pk := range tableKeys(t, e.ep.Client, e.table) {
		remaining[pk] = true
	}
	untouched := 0
	for _, kind := range []int{expired, stuck} {
		for _, pk := range truth.byKind[kind] {
			if _, key, _ := splitSeedKey(pk); !claimed[key] {
				if kind == stuck && e.indexed() {
					assert.True(t, remaining[pk], "an index sweep reads a stuck record only once its exp passed")
					continue
				}
				untouched++
				assert.False(t, remaining[pk], "an expired or stuck record nobody claimed is gone")
			}
		}
	}
	for _, pk := range sortedUnion(truth.byKind[liveCompleted], truth.byKind[liveInProgress]) {
		assert.True(t, remaining[pk], "a live record stays")
	}
	assert.GreaterOrEqual(t, r.Evicted+r.Reclaimed, int64(untouched))
	assert.LessOrEqual(t, r.Evicted+r.Reclaimed+r.Skipped, truth.count(expired)+truth.count(stuck))
}

// splitSeedKey returns the scope and key of a seeded partition key.
func splitSeedKey(pk string) (scope, key string, ok bool) {
	prefix := fmt.Sprintf("%d:%s", len(seedScope), seedScope)
	if len(pk) < len(prefix) || pk[:len(prefix)] != prefix {
		return "", "", false
	}
	return seedScope, pk[len(prefix):], true
}

func TestIndexSweepResumeContinuesAnInterruptedRunAndReplacesAScanCursor(t *testing.T) {
	e := indexEnv(t, false)
	ctx := context.Background()
	truth := seed(t, e.ep.Client, e.table, e.clock.Now(), 1200)
	client := &scanClock{SweepClient: e.client, advance: e.clock.Advance, step: time.Second}

	first, err := e.sweeper(client, func(o *dynamostore.SweepOptions) { o.Budget = 6 * time.Second }).Resume(ctx)
	require.NoError(t, err)
	assert.False(t, first.Finished)
	assert.Equal(t, dynamostore.SweepStoppedByBudget, first.StoppedBy)
	assert.Empty(t, first.Cursor, "Resume keeps the cursor in the table")
	stored, err := dynamostore.LoadSweepCursor(ctx, e.client, e.table)
	require.NoError(t, err)
	raw, err := base64.RawURLEncoding.DecodeString(stored)
	require.NoError(t, err)
	assert.Equal(t, byte(6), raw[0], "a cursor of version 6, SweepIndex mode's")

	second, err := e.sweeper(client).Resume(ctx)
	require.NoError(t, err)
	assert.True(t, second.Finished)
	pass := e.pass(truth)
	assert.Equal(t, pass.read, first.Scanned+second.Scanned, "each entry read once over the pass")
	assert.Equal(t, truth.count(expired), first.Evicted+second.Evicted)
	assert.Zero(t, first.Reclaimed+second.Reclaimed, "stuck records are not read before their exp")
	stored, err = dynamostore.LoadSweepCursor(ctx, e.client, e.table)
	require.NoError(t, err)
	assert.Empty(t, stored, "a finished pass leaves no cursor")

	// A cursor a scan left (the mode changed between runs) is replaced by
	// a new pass of the index.
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	scan, err := dynamostore.NewSweeper(e.client, e.table).Sweep(canceled, "")
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, dynamostore.SaveSweepCursor(ctx, e.client, e.table, scan.Cursor, e.clock.Now()))
	var logs bytes.Buffer
	third, err := e.sweeper(e.client, func(o *dynamostore.SweepOptions) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	}).Resume(ctx)
	require.NoError(t, err)
	assert.True(t, third.Finished)
	assert.Equal(t, pass.live, third.Scanned, "only the next record of each shard remains to read")
	assert.Contains(t, logs.String(), "it belongs to a sweep in scan mode, this one is in index mode")
}

func TestNewSweeperInIndexModeSweepsAtMostOneWorkerPerShardAndRefusesUnknownModes(t *testing.T) {
	e := newEnv(t)
	o := dynamostore.NewSweeper(e.client, e.table, func(o *dynamostore.SweepOptions) {
		o.Mode, o.Segments = dynamostore.SweepIndex, 100
	}).Options()
	assert.Equal(t, dynamostore.ExpiryIndexShards, o.Segments)
	assert.Equal(t, dynamostore.SweepScan, dynamostore.NewSweeper(e.client, e.table).Options().Mode, "the zero Mode is a scan")
	assert.PanicsWithValue(t, `dynamostore: NewSweeper: unknown Mode "fast" (SweepScan or SweepIndex)`, func() {
		dynamostore.NewSweeper(e.client, e.table, func(o *dynamostore.SweepOptions) { o.Mode = "fast" })
	})
}

func TestExpiryBucketIsAShardOfThePartitionKeyInTheNamespace(t *testing.T) {
	assert.Equal(t, "07", dynamostore.ExpiryBucket(dynamostore.KeySchema{}, "8:tenant-ak1"))
	assert.Equal(t, "idemkey#07", dynamostore.ExpiryBucket(sharedSchema, "8:tenant-ak1"))
	// The shards spread keys evenly: 32,000 keys, each shard within 10%
	// of its 1,000.
	counts := map[string]int{}
	for i := range 32_000 {
		counts[dynamostore.ExpiryBucket(dynamostore.KeySchema{}, fmt.Sprintf("36:%036d%d", i, i))]++
	}
	require.Len(t, counts, dynamostore.ExpiryIndexShards)
	for bucket, n := range counts {
		assert.InDelta(t, 1000, n, 100, bucket)
	}
}

// indexStatusClient answers DescribeTable with the expiry index in the
// given status, as DynamoDB describes an index whose throughput changes
// (UPDATING) or that is still backfilled (CREATING).
type indexStatusClient struct {
	*dynamodb.Client
	status types.IndexStatus
}

func (c indexStatusClient) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	out, err := c.Client.DescribeTable(ctx, in, optFns...)
	if err == nil && out.Table != nil {
		for i := range out.Table.GlobalSecondaryIndexes {
			out.Table.GlobalSecondaryIndexes[i].IndexStatus = c.status
		}
		out.Table.TableStatus = types.TableStatusUpdating
	}
	return out, err
}

// An index in UPDATING (a throughput change on it or its table) answers
// queries with every entry: the sweep goes on, and EnsureExpiryIndex
// accepts it. One in CREATING is refused by both.
func TestIndexSweepGoesOnWhileTheIndexIsUpdating(t *testing.T) {
	e := indexEnv(t, false)
	ctx := context.Background()
	seed(t, e.ep.Client, e.table, e.clock.Now(), 40)
	expired := int64(len(tableKeys(t, e.ep.Client, e.table)))
	r, err := e.sweeper(indexStatusClient{e.client, types.IndexStatusUpdating}).Sweep(ctx, "")
	require.NoError(t, err)
	require.True(t, r.Finished)
	assert.Positive(t, r.Evicted)
	assert.Less(t, int64(len(tableKeys(t, e.ep.Client, e.table))), expired)
	require.NoError(t, dynamostore.EnsureExpiryIndex(ctx, indexStatusClient{e.ep.Client, types.IndexStatusUpdating}, e.table, dynamostore.KeySchema{}, time.Second))

	_, err = e.sweeper(indexStatusClient{e.client, types.IndexStatusCreating}).Sweep(ctx, "")
	require.ErrorIs(t, err, dynamostore.ErrExpiryIndex)
	assert.Contains(t, err.Error(), "is CREATING, neither ACTIVE nor UPDATING")
	err = dynamostore.EnsureExpiryIndex(ctx, indexStatusClient{e.ep.Client, types.IndexStatusCreating}, e.table, dynamostore.KeySchema{}, 300*time.Millisecond)
	require.ErrorIs(t, err, dynamostore.ErrExpiryIndex)
	assert.Contains(t, err.Error(), "still CREATING")
}

// An index sweeper whose Prefix is not the Stores' queries buckets that
// hold nothing: instead of empty passes with no lag, the pass that read
// none of its buckets is refused with ErrSweepSchema, naming its Prefix
// and the bucket the index holds. An empty index, or the Stores' schema,
// is no error.
func TestIndexSweepWithAnotherPrefixThanTheStoresIsRefused(t *testing.T) {
	e := indexEnv(t, false)
	ctx := context.Background()
	other := func(o *dynamostore.SweepOptions) { o.Schema = dynamostore.KeySchema{Prefix: "other"} }
	r, err := e.sweeper(e.client, other).Sweep(ctx, "")
	require.NoError(t, err, "an empty index")
	assert.True(t, r.Finished)

	truth := seed(t, e.ep.Client, e.table, e.clock.Now(), 40)
	r, err = e.sweeper(e.client, other).Sweep(ctx, "")
	require.ErrorIs(t, err, dynamostore.ErrSweepSchema)
	for _, want := range []string{e.table, `Prefix "other"`, "without a Prefix", "SweepOptions.Schema"} {
		assert.Contains(t, err.Error(), want)
	}
	require.NotNil(t, r)
	assert.Zero(t, r.Scanned)
	assert.Subset(t, tableKeys(t, e.ep.Client, e.table), sortedUnion(truth.byKind[:]...), "nothing deleted")

	// Resumed over several runs, the pass is refused when it finishes.
	client := &scanClock{SweepClient: e.client, advance: e.clock.Advance, step: time.Second}
	first, err := e.sweeper(client, other, func(o *dynamostore.SweepOptions) { o.Budget = 10 * time.Second }).Sweep(ctx, "")
	require.NoError(t, err, "an unfinished pass")
	require.NotEmpty(t, first.Cursor)
	_, err = e.sweeper(client, other).Sweep(ctx, first.Cursor)
	require.ErrorIs(t, err, dynamostore.ErrSweepSchema)

	// The Stores' own schema finds their records.
	r, err = e.sweeper(e.client).Sweep(ctx, "")
	require.NoError(t, err)
	assert.Positive(t, r.Evicted)

	// A store with a Prefix, swept without one, is refused as well.
	shared := dynamostore.KeySchema{Prefix: "idemkey"}
	e2 := indexEnv(t, true)
	require.NoError(t, dynamostore.EnsureExpiryIndex(ctx, e2.ep.Client, e2.table, shared, 0))
	store := e2.store(nil, func(o *dynamostore.Options) { o.Schema, o.ExpiryIndex = shared, true })
	commitKeys(t, store, "k1")
	_, err = e2.sweeper(e2.client).Sweep(ctx, "")
	require.ErrorIs(t, err, dynamostore.ErrSweepSchema)
	assert.Contains(t, err.Error(), `records of Prefix "idemkey"`)
	assert.Contains(t, err.Error(), `(Prefix "")`)
}

// Under a budget that serves one page per run, each run starts with the
// part after the last one the previous run served, so that every shard
// is served in turn: the last shard's expired records are evicted within
// ExpiryIndexShards runs (in a fixed order, the first shards' second
// queries came first, and the last shard waited 63 runs).
func TestIndexSweepUnderATightBudgetServesEveryShardInTurn(t *testing.T) {
	e := indexEnv(t, false)
	ctx := context.Background()
	truth := seed(t, e.ep.Client, e.table, e.clock.Now(), 400)
	const lastShard = "31" // ExpiryIndexShards-1
	var last []string
	for _, pk := range truth.byKind[expired] {
		if dynamostore.ExpiryBucket(dynamostore.KeySchema{}, pk) == lastShard {
			last = append(last, pk)
		}
	}
	require.NotEmpty(t, last, "the last shard holds expired records")
	client := &scanClock{SweepClient: e.client, advance: e.clock.Advance, step: time.Second}
	sweeper := e.sweeper(client, func(o *dynamostore.SweepOptions) { o.Segments, o.Budget = 1, time.Second })
	cursor := ""
	for run := range dynamostore.ExpiryIndexShards {
		r, err := sweeper.Sweep(ctx, cursor)
		require.NoError(t, err)
		require.Equal(t, int64(1), r.Pages, "run %d serves one page", run)
		require.NotEmpty(t, r.Cursor)
		cursor = r.Cursor
	}
	remaining := tableKeys(t, e.ep.Client, e.table)
	for _, pk := range last {
		assert.NotContains(t, remaining, pk, "an expired record of the last shard")
	}
	assert.Equal(t, e.remaining(truth), remaining, "each shard's expired records, one page each, are gone")
}
