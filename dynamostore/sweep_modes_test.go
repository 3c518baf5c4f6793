package dynamostore_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
)

// sweepModes are the modes the sweeper tests run in.
var sweepModes = []dynamostore.SweepMode{dynamostore.SweepScan, dynamostore.SweepIndex}

// inModes runs test once per SweepMode, each on an env of its own whose
// sweeper has that mode; in SweepIndex mode the table has the expiry
// index.
func inModes(t *testing.T, test func(t *testing.T, e *env)) {
	t.Helper()
	forModes(t, func(t *testing.T, mode dynamostore.SweepMode) *env {
		e := newEnv(t)
		e.mode = mode
		indexFor(t, mode, e.ep.Client, e.table, dynamostore.KeySchema{})
		if e.indexed() {
			e.indexComplete(t)
		}
		return e
	}, test)
}

// forModes runs test once per SweepMode as a subtest, on what setup
// returns for that mode.
func forModes[E any](t *testing.T, setup func(t *testing.T, mode dynamostore.SweepMode) E, test func(t *testing.T, e E)) {
	t.Helper()
	for _, mode := range sweepModes {
		t.Run(string(mode), func(t *testing.T) { test(t, setup(t, mode)) })
	}
}

// indexFor gives the table the expiry index of schema when mode is
// SweepIndex.
func indexFor(t *testing.T, mode dynamostore.SweepMode, client *dynamodb.Client, table string, schema dynamostore.KeySchema) {
	t.Helper()
	if mode == dynamostore.SweepIndex {
		require.NoError(t, dynamostore.EnsureExpiryIndex(context.Background(), client, table, schema, 0))
	}
}

// indexComplete notes in e's table, for the sweeps of each region (of
// none when no region is given), that a scan found every key record in
// the expiry index as of e's clock: e's stores set Options.ExpiryIndex,
// so that index sweeps within UnindexedScanInterval read the index alone.
func (e *env) indexComplete(t *testing.T, regions ...string) {
	t.Helper()
	for _, region := range append(regions, "")[:max(len(regions), 1)] {
		require.NoError(t, dynamostore.NoteIndexComplete(context.Background(), e.ep.Client, e.table, dynamostore.KeySchema{}, region, e.clock.Now()))
	}
}

// indexed reports whether the env sweeps in SweepIndex mode.
func (e *env) indexed() bool { return e.mode == dynamostore.SweepIndex }

// readOp is the operation by which the env's sweeper reads pages.
func (e *env) readOp() string {
	if e.indexed() {
		return "Query"
	}
	return "Scan"
}

// passFigures are what one whole pass over a seeded table reads.
type passFigures struct {
	read int64 // items (index entries) read: the report's Scanned
	live int64 // live records among them: the report's LiveKeys
}

// pass returns the figures of a pass over the seeded table in the env's
// mode. A scan reads every record. An index sweep reads the expired
// records (in progress or completed), and per shard the record that
// expires next: the stuck records are not read before their exp.
func (e *env) pass(truth *seeded) passFigures {
	if !e.indexed() {
		return passFigures{read: int64(truth.records), live: truth.live()}
	}
	live := nextShards(sortedUnion(truth.byKind[liveCompleted], truth.byKind[liveInProgress], truth.byKind[stuck]))
	return passFigures{read: truth.count(expired) + live, live: live}
}

// remaining returns the partition keys a pass over the seeded table
// leaves, sorted: the live records, and in an index sweep the stuck ones.
func (e *env) remaining(truth *seeded) []string {
	if e.indexed() {
		return sortedUnion(truth.byKind[liveCompleted], truth.byKind[liveInProgress], truth.byKind[stuck])
	}
	return sortedUnion(truth.byKind[liveCompleted], truth.byKind[liveInProgress])
}

// reclaimed returns the stuck records a pass over the seeded table
// reclaims in the env's mode: all of them in a scan, none in an index
// sweep, which reads them once their exp passed.
func (e *env) reclaimed(truth *seeded) int64 {
	if e.indexed() {
		return 0
	}
	return truth.count(stuck)
}

// nextShards counts the shards of the expiry index that hold at least one
// of the records whose partition keys are pks.
func nextShards(pks []string) int64 {
	shards := map[string]bool{}
	for _, pk := range pks {
		shards[dynamostore.ExpiryBucket(dynamostore.KeySchema{}, pk)] = true
	}
	return int64(len(shards))
}

// Query of scanClock: pages of the index take time too.
func (c *scanClock) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := c.SweepClient.Query(ctx, in, optFns...)
	if !c.scansOnly {
		c.advance(c.step)
	}
	return out, err
}

// Query of failingScans: Scans and Queries are numbered together.
func (c *failingScans) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if c.failNext() {
		return nil, ddbtest.ErrInjected
	}
	return c.SweepClient.Query(ctx, in, optFns...)
}

// assertEvictedOnce asserts that the expired records were deleted once
// each: evicted counts them all and nothing was skipped. On an external
// endpoint (moto) a delete whose answer was lost to an HTTP 500 or a
// dropped connection is retried by the SDK, and the retry's condition
// fails on the record that the first attempt deleted: it counts as skipped
// (the record went between the read and the delete, as Skipped says), so
// there the two counts together are asserted. The table's content, which
// every caller also asserts, is exact on both.
func (e *env) assertEvictedOnce(t *testing.T, want, evicted, skipped int64) {
	t.Helper()
	if e.ep.Embedded {
		assert.Equal(t, want, evicted)
		assert.Zero(t, skipped)
		return
	}
	assert.Equal(t, want, evicted+skipped)
	if skipped > 0 {
		t.Logf("%d deletes found their record already gone (a retried attempt after a lost answer)", skipped)
	}
}
