package dynamostore_test

import (
	"context"
	"os"
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

// indexMeter is the real client, asking DynamoDB for the capacity of each
// write index by index (ReturnConsumedCapacity INDEXES) and keeping the
// expiry index's share of the last one.
type indexMeter struct {
	*dynamodb.Client
	mu       sync.Mutex
	last     float64
	reported bool // the backend reported an index's part of a write at least once
}

func (m *indexMeter) note(c *types.ConsumedCapacity) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last = 0
	if c == nil || c.GlobalSecondaryIndexes == nil {
		return // none reported, or no index written (moto reports only the table's part)
	}
	m.reported = true
	if gsi, ok := c.GlobalSecondaryIndexes[dynamostore.ExpiryIndexName]; ok {
		m.last = aws.ToFloat64(gsi.CapacityUnits)
	}
}

// took returns the expiry index's write units of the last write.
func (m *indexMeter) took() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last
}

func (m *indexMeter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := m.Client.PutItem(ctx, in, optFns...)
	if err == nil {
		m.note(out.ConsumedCapacity)
	}
	return out, err
}

func (m *indexMeter) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := m.Client.DeleteItem(ctx, in, optFns...)
	if err == nil {
		m.note(out.ConsumedCapacity)
	}
	return out, err
}

// A request costs the expiry index two write units over its life: its
// claim puts the entry, its commit (within the lock) leaves the entry as
// it is, and its eviction or release removes it. DynamoDB reports it with
// ReturnConsumedCapacity INDEXES; a backend that reports no breakdown by
// index (moto) still runs every step, and only the units are not checked.
func TestExpiryIndexCostsOneWriteForTheClaimNoneForTheCommitAndOneForTheEviction(t *testing.T) {
	e := indexEnv(t, false)
	ctx := context.Background()
	m := &indexMeter{Client: e.ep.Client}
	store := e.store(m)
	units := func(step string, want float64) {
		t.Helper()
		if m.reported {
			assert.Equal(t, want, m.took(), step)
		}
	}

	c, err := store.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	units("claim", 1)
	e.clock.Advance(10 * time.Second)
	_, err = store.Commit(ctx, c, created, nil)
	require.NoError(t, err)
	units("commit within the lock", 0)

	c2, err := store.Claim(ctx, request("k2", "a"))
	require.NoError(t, err)
	units("claim", 1)
	require.NoError(t, store.Release(ctx, c2))
	units("release", 1)

	first, err := store.CommitFirst(ctx, request("k3", "a"), created, nil)
	require.NoError(t, err)
	require.Equal(t, dynamostore.Acquired, first.Result)
	units("CommitFirst", 1)

	// A commit after its lock expired (nobody reclaimed the key) moves
	// exp to its completion plus the retention: the rare case that
	// rewrites the entry's key.
	late, err := store.Claim(ctx, request("k4", "a"))
	require.NoError(t, err)
	e.clock.Advance(dynamostore.DefaultLease + time.Second)
	_, err = store.Commit(ctx, late, created, nil)
	require.NoError(t, err)
	units("commit after the lock expired", 2)

	// Every record expires: the sweep evicts k1 and k3 first (k4
	// expires later), each delete removing its entry.
	e.clock.Advance(dynamostore.DefaultRetention)
	e.indexComplete(t) // every record carries its bucket: the sweep reads the index alone
	r, err := e.sweeper(m).Sweep(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, int64(2), r.Evicted)
	units("eviction", 1)
	if os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") == "" {
		require.True(t, m.reported, "the embedded emulator reports capacity by index")
	}
	if !m.reported {
		t.Logf("the backend at %q reports no capacity by index: the units were not checked", os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"))
	}
}

// A claim writes exp = its lock's end plus the retention, rounded up to
// the second; a commit within the lock keeps it, which is at least the
// completion plus the retention; a commit after the lock expired sets
// the completion plus the retention.
func TestCommitWithinTheLockKeepsTheClaimsExpAndALateCommitMovesIt(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.clock.Advance(250 * time.Millisecond)
	store := e.store(nil)
	claimed := e.clock.Now()
	c, err := store.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	want := claimed.Add(dynamostore.DefaultLease + dynamostore.DefaultRetention).Truncate(time.Second).Add(time.Second)
	assert.Equal(t, want.Unix(), c.Record.Expires.Unix(), "the lock's end plus the retention, rounded up")

	e.clock.Advance(4 * time.Minute) // within the lock
	done, err := store.Commit(ctx, c, created, nil)
	require.NoError(t, err)
	assert.Equal(t, want.Unix(), done.Expires.Unix(), "the commit keeps exp")
	assert.False(t, done.Expires.Before(e.clock.Now().Add(dynamostore.DefaultRetention)), "at least the retention after completion")
	got, err := store.Get(ctx, "tenant-a", "k1")
	require.NoError(t, err)
	assert.Equal(t, want.Unix(), got.Expires.Unix())

	late, err := store.Claim(ctx, request("k2", "a"))
	require.NoError(t, err)
	e.clock.Advance(dynamostore.DefaultLease + time.Minute) // the lock expired; nobody reclaimed
	at := e.clock.Now()
	done, err = store.Commit(ctx, late, created, nil)
	require.NoError(t, err)
	assert.Equal(t, at.Add(dynamostore.DefaultRetention).Unix(), done.Expires.Unix(), "the completion plus the retention")
}

// The index of an earlier, unreleased version projected the state (which
// every commit changes) and its records carried other bucket values:
// EnsureExpiryIndex and the sweeper refuse it and say to recreate it.
func TestEnsureExpiryIndexRefusesAnIndexThatProjectsTheStateAndSaysToRecreateIt(t *testing.T) {
	e := indexEnv(t, true)
	ctx := context.Background()
	_, err := e.ep.Client.UpdateTable(ctx, &dynamodb.UpdateTableInput{
		TableName: &e.table,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(dynamostore.ExpiryBucketAttribute), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(dynamostore.TTLAttribute), AttributeType: types.ScalarAttributeTypeN},
		},
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
			IndexName: aws.String(dynamostore.ExpiryIndexName),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(dynamostore.ExpiryBucketAttribute), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(dynamostore.TTLAttribute), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude,
				NonKeyAttributes: []string{"state", "lock", "lock_exp", "created", "region", "idemkey"}},
		}}},
	})
	require.NoError(t, err)

	err = dynamostore.EnsureExpiryIndex(ctx, e.client, e.table, dynamostore.KeySchema{}, 0)
	require.ErrorIs(t, err, dynamostore.ErrExpiryIndex)
	for _, want := range []string{e.table, "which a commit changes", "delete the index and call EnsureExpiryIndex again to recreate it"} {
		assert.Contains(t, err.Error(), want)
	}
	_, err = e.sweeper(e.client).Sweep(ctx, "")
	require.ErrorIs(t, err, dynamostore.ErrExpiryIndex)
	assert.Contains(t, err.Error(), "recreate it")
}

// An index sweep reads a stuck record (its owner died: in progress, lock
// expired) only once its exp passed, and then evicts it; a scan reclaims
// it as soon as its lock expired.
func TestIndexSweepLeavesAStuckRecordUntilItsExpAndThenEvictsIt(t *testing.T) {
	e := indexEnv(t, false)
	ctx := context.Background()
	store := e.store(nil)
	_, err := store.Claim(ctx, request("stuck", "a"))
	require.NoError(t, err)
	e.clock.Advance(dynamostore.DefaultLease + time.Minute)

	r, err := e.sweeper(e.client).Sweep(ctx, "")
	require.NoError(t, err)
	assert.Zero(t, r.Evicted+r.Reclaimed)
	assert.Equal(t, int64(1), r.LiveKeys, "read as its shard's next record to expire")
	assert.Len(t, tableKeys(t, e.ep.Client, e.table), 1)
	retry, err := store.Claim(ctx, request("stuck", "a"))
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Acquired, retry.Result, "a retry takes over the expired lock by itself")
	require.NoError(t, store.Release(ctx, retry))

	_, err = store.Claim(ctx, request("stuck-2", "a"))
	require.NoError(t, err)
	e.clock.Advance(dynamostore.DefaultLease + dynamostore.DefaultRetention + time.Second)
	r, err = e.sweeper(e.client).Sweep(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, int64(1), r.Evicted, "past its exp, evicted as any expired record")
	assert.Zero(t, r.Reclaimed)
	assert.Empty(t, tableKeys(t, e.ep.Client, e.table))
}
