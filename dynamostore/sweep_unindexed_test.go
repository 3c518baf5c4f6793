package dynamostore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/localstack"
)

// noTTLIndexEnv returns an env over a table without TTL (as HomeRegion,
// MRSC and the template's WriterRegion have) with the expiry index, swept
// in SweepIndex mode.
func noTTLIndexEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	e.mode = dynamostore.SweepIndex
	e.table = localstack.TableName("nottl-index")
	ctx := context.Background()
	require.NoError(t, dynamostore.EnsureTableWithoutTTL(ctx, e.ep.Client, e.table, 0))
	ddbtest.DeleteOnCleanup(t, e.ep.Client, e.table)
	require.NoError(t, dynamostore.EnsureExpiryIndex(ctx, e.ep.Client, e.table, dynamostore.KeySchema{}, 0))
	return e
}

// commitKeys claims and completes each key through store.
func commitKeys(t *testing.T, store *dynamostore.Store, keys ...string) {
	t.Helper()
	for _, key := range keys {
		c, err := store.Claim(context.Background(), request(key, key))
		require.NoError(t, err)
		_, err = store.Commit(context.Background(), c, created, nil)
		require.NoError(t, err)
	}
}

// On a table without TTL nothing but the sweeper deletes a record. Records
// without exp_bucket (written before the index, or by a Store without
// Options.ExpiryIndex) are not in the index: an index sweep finds them by
// a filtered scan, counts them as Unindexed and in the eviction lag in
// every run that reads them, evicts them, and once a whole scan found
// none, reads the index alone until UnindexedScanInterval has passed.
func TestIndexSweepEvictsAndCountsTheRecordsOutsideTheIndexOnATableWithoutTTL(t *testing.T) {
	e := noTTLIndexEnv(t)
	ctx := context.Background()
	lease := func(o *dynamostore.Options) { o.Retention, o.Lease = time.Hour, time.Minute }
	old := e.store(nil, lease, func(o *dynamostore.Options) { o.ExpiryIndex = false })
	indexed := e.store(nil, lease)
	var oldKeys, liveKeys []string
	for i := range 20 {
		oldKeys = append(oldKeys, fmt.Sprintf("old-%02d", i))
	}
	commitKeys(t, old, oldKeys...)
	e.clock.Advance(90 * time.Minute) // the old records expired 29 minutes ago (claim + lease + retention)
	for i := range 5 {
		liveKeys = append(liveKeys, fmt.Sprintf("live-%d", i))
	}
	commitKeys(t, indexed, liveKeys...)
	lag := 29 * time.Minute

	// Each Scan page takes a second; the budget allows two pages of 5
	// items: the scan stops in the table, the shards (one worker, before
	// the scan) are done.
	client := &scanClock{SweepClient: e.client, advance: e.clock.Advance, step: time.Second, scansOnly: true}
	sweeper := func(budget time.Duration) *dynamostore.Sweeper {
		return e.sweeper(client, func(o *dynamostore.SweepOptions) { o.Segments, o.PageSize, o.Budget = 1, 5, budget })
	}
	r, err := sweeper(2*time.Second).Sweep(ctx, "")
	require.NoError(t, err)
	checkIdentity(t, r)
	assert.True(t, r.Finished, "the index's pass finished")
	require.NotEmpty(t, r.Cursor, "the scan goes on in the cursor")
	assert.Positive(t, r.Unindexed, "records outside the index read by the first two pages")
	assert.Less(t, r.Unindexed, int64(len(oldKeys)))
	assert.Equal(t, r.Unindexed, r.Evicted, "every one of them expired")
	assertLag(t, lag, r.EvictionLag, "the lag counts them")
	unindexed, evicted := r.Unindexed, r.Evicted

	// The next run finishes the scan; as it found some, the run after
	// scans the table again, finds none, and notes it.
	cursor, runs := r.Cursor, 1
	for cursor != "" || r.Unindexed > 0 {
		require.Less(t, runs, 5, "the scans never end")
		r, err = sweeper(0).Sweep(ctx, cursor)
		require.NoError(t, err)
		checkIdentity(t, r)
		if r.Unindexed > 0 {
			assertLag(t, lag, r.EvictionLag, "run %d", runs)
		}
		unindexed, evicted, cursor, runs = unindexed+r.Unindexed, evicted+r.Evicted, r.Cursor, runs+1
	}
	assert.Equal(t, 3, runs)
	assert.Equal(t, int64(len(oldKeys)), unindexed, "each record outside the index read once")
	e.assertEvictedOnce(t, int64(len(oldKeys)), evicted, 0)
	assert.Zero(t, r.Unindexed, "the last scan found none")
	assert.Zero(t, r.EvictionLag)
	assert.Equal(t, sortedUnion(pks(liveKeys...)), tableKeys(t, e.ep.Client, e.table), "only the indexed live records remain")

	// Noted: the next sweep reads the index alone.
	e.calls.Reset()
	r, err = e.sweeper(e.client).Sweep(ctx, "")
	require.NoError(t, err)
	assert.Zero(t, e.calls.Count("Scan"))
	assert.Empty(t, r.Cursor)

	// A Store without Options.ExpiryIndex writes again; once the note is
	// older than UnindexedScanInterval, a sweep scans and finds its
	// record, expired by then.
	commitKeys(t, old, "late")
	e.clock.Advance(dynamostore.UnindexedScanInterval)
	r, err = e.sweeper(e.client).Sweep(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, int64(1), r.Unindexed)
	assert.Equal(t, int64(1+len(liveKeys)), r.Evicted, "the late record and the indexed ones, all expired")
	assert.Empty(t, tableKeys(t, e.ep.Client, e.table))
}

// assertLag asserts that got is the lag of records that expired want ago
// at the sweep's start, read at most a minute of pages later.
func assertLag(t *testing.T, want, got time.Duration, msgAndArgs ...any) {
	t.Helper()
	assert.GreaterOrEqual(t, got, want, msgAndArgs...)
	assert.Less(t, got, want+time.Minute, msgAndArgs...)
}

// pks returns the partition keys of tenant-a's keys.
func pks(keys ...string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = "8:tenant-a" + k
	}
	return out
}

// The regional sweepers of a table without TTL (HomeRegion) whose writers
// lack Options.ExpiryIndex: each region's index sweep finds every record
// outside the index, evicts its own region's and leaves the others' to
// their sweeper (Foreign, and Unindexed), and notes a clean scan only once
// none is left.
func TestRegionalIndexSweepsEvictTheirOwnRecordsOutsideTheIndex(t *testing.T) {
	e := noTTLIndexEnv(t)
	ctx := context.Background()
	lease := func(o *dynamostore.Options) { o.Retention, o.Lease, o.ExpiryIndex = time.Hour, time.Minute, false }
	for _, region := range []string{"a", "b"} {
		s := e.store(nil, lease, func(o *dynamostore.Options) { o.Region = region })
		commitKeys(t, s, region+"-1", region+"-2", region+"-3")
	}
	e.clock.Advance(2 * time.Hour) // all expired an hour ago
	sweep := func(region string) *dynamostore.SweepReport {
		t.Helper()
		r, err := e.sweeper(e.client, func(o *dynamostore.SweepOptions) { o.Region = region }).Sweep(ctx, "")
		require.NoError(t, err)
		require.Empty(t, r.Cursor)
		checkIdentity(t, r)
		return r
	}
	r := sweep("a")
	assert.Equal(t, int64(3), r.Evicted, "a's own")
	assert.Equal(t, int64(3), r.Foreign, "b's, left to b's sweeper")
	assert.Equal(t, int64(6), r.Unindexed)
	assertLag(t, 59*time.Minute, r.EvictionLag)

	r = sweep("b")
	assert.Equal(t, int64(3), r.Evicted, "b's own")
	assert.Equal(t, int64(3), r.Unindexed)
	assert.Empty(t, tableKeys(t, e.ep.Client, e.table))

	for _, region := range []string{"a", "b"} {
		r = sweep(region) // finds none, and notes it
		assert.Zero(t, r.Unindexed, region)
	}
	// A live record in the index, so that the passes read an entry of
	// their buckets (an empty index is looked at with a one-entry Scan).
	commitKeys(t, e.store(nil, func(o *dynamostore.Options) { o.Region = "a" }), "a-live")
	e.calls.Reset()
	sweep("a")
	sweep("b")
	assert.Zero(t, e.calls.Count("Scan"), "each region's note holds")
}
