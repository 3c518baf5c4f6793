package dynamostore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/keyschema"
)

// sweeper returns a Sweeper over e's table on e's clock: 4 segments, pages
// of 100, no rate limit (the tests' clock does not move by itself).
func (e *env) sweeper(client dynamostore.SweepClient, optFns ...func(*dynamostore.SweepOptions)) *dynamostore.Sweeper {
	base := func(o *dynamostore.SweepOptions) {
		o.Mode = e.mode
		o.Now = e.clock.Now
		o.Segments = 4
		o.PageSize = 100
		o.ItemsPerSecond = -1
	}
	return dynamostore.NewSweeper(client, e.table, append([]func(*dynamostore.SweepOptions){base}, optFns...)...)
}

// checkIdentity asserts that every scanned item was counted exactly once.
func checkIdentity(t *testing.T, r *dynamostore.SweepReport) {
	t.Helper()
	assert.Equal(t, r.Scanned, r.Evicted+r.Reclaimed+r.Skipped+r.LiveKeys+r.Foreign+r.Errors,
		"scanned = evicted + reclaimed + skipped + live + foreign + failed deletes")
}

func TestSweepEvictsExactlyTheExpiredReclaimsTheStuckAndReportsTheSeededTruth(t *testing.T) {
	inModes(t, testSweepEvictsExactlyTheExpiredReclaimsTheStuckAndReportsTheSeededTruth)
}

func testSweepEvictsExactlyTheExpiredReclaimsTheStuckAndReportsTheSeededTruth(t *testing.T, e *env) {
	truth := seed(t, e.ep.Client, e.table, e.clock.Now(), 3000)
	e.calls.Reset()

	r, err := e.sweeper(e.client).Sweep(context.Background(), "")
	require.NoError(t, err)

	pass := e.pass(truth)
	assert.Equal(t, e.mode, r.Mode)
	assert.Equal(t, pass.read, r.Scanned)
	e.assertEvictedOnce(t, truth.count(expired), r.Evicted, r.Skipped)
	assert.Equal(t, e.reclaimed(truth), r.Reclaimed)
	assert.Equal(t, pass.live, r.LiveKeys)
	assert.Zero(t, r.Foreign)
	assert.Zero(t, r.Errors)
	assert.Equal(t, truth.oldest, r.OldestLiveKeyAge)
	assert.Equal(t, truth.lag, r.EvictionLag)
	assert.Equal(t, 4, r.Segments)
	assert.True(t, r.Finished)
	assert.Empty(t, r.Cursor)
	assert.Empty(t, r.StoppedBy)
	assert.InDelta(t, float64(pass.read)/float64(truth.count(expired)), r.ScannedPerEvicted(), 1e-9)
	if e.indexed() {
		assert.GreaterOrEqual(t, r.Pages, int64(2*dynamostore.ExpiryIndexShards), "two queries per shard at least")
	} else {
		assert.GreaterOrEqual(t, r.Pages, int64(30), "3000 items in pages of 100")
	}
	checkIdentity(t, r)
	// DynamoDB reports consumed capacity; so does the emulator's front,
	// with an estimate.
	assert.Positive(t, r.ConsumedReadUnits)
	assert.Positive(t, r.ConsumedWriteUnits)

	assert.Equal(t, int(r.Evicted+r.Reclaimed), e.calls.Count("DeleteItem"), "one DeleteItem per removed record")
	assert.Equal(t, int(r.Pages), e.calls.Count(e.readOp()), "one Scan or Query per page")
	assert.Equal(t, e.remaining(truth), tableKeys(t, e.ep.Client, e.table),
		"exactly the live records remain")

	// The live records are intact: a completed one still replays.
	rec, err := e.store(nil).Get(context.Background(), seedScope, seedKey(4))
	require.NoError(t, err)
	assert.Equal(t, dynamostore.StateCompleted, rec.State)
	assert.Equal(t, 201, rec.Response.Status)

	// A new pass finds nothing more to do.
	again, err := e.sweeper(e.client).Sweep(context.Background(), "")
	require.NoError(t, err)
	assert.Equal(t, pass.live, again.Scanned)
	assert.Zero(t, again.Evicted+again.Reclaimed+again.Skipped)
	assert.Zero(t, again.EvictionLag)
}

func TestRecordClaimedAgainBetweenScanAndDeleteSurvives(t *testing.T) {
	inModes(t, testRecordClaimedAgainBetweenScanAndDeleteSurvives)
}

func testRecordClaimedAgainBetweenScanAndDeleteSurvives(t *testing.T, e *env) {
	ctx := context.Background()
	truth := seed(t, e.ep.Client, e.table, e.clock.Now(), 400)
	const victim = 42 // an expired record
	require.Equal(t, expired, victim%kinds)
	target := keyschema.PartitionKey(seedScope, seedKey(victim))
	store := e.store(nil)

	var once sync.Once
	var newClaim *dynamostore.Claim
	var claimErr error
	hook := &deleteHook{SweepClient: e.client, before: func(pk string) {
		if pk == target {
			once.Do(func() {
				newClaim, claimErr = store.Claim(ctx, dynamostore.Request{Scope: seedScope, Key: seedKey(victim),
					Method: "POST", Path: "/payments", Fingerprint: fp("a new request")})
			})
		}
	}}
	r, err := e.sweeper(hook).Sweep(ctx, "")
	require.NoError(t, err)
	require.NoError(t, claimErr)
	require.NotNil(t, newClaim, "the hook never saw the victim's delete")
	require.Equal(t, dynamostore.Acquired, newClaim.Result)

	assert.Equal(t, int64(1), r.Skipped)
	assert.Equal(t, truth.count(expired)-1, r.Evicted)
	assert.Equal(t, e.reclaimed(truth), r.Reclaimed)
	assert.Equal(t, e.pass(truth).live, r.LiveKeys)
	assert.Equal(t, truth.lag, r.EvictionLag, "the victim was expired when scanned")
	checkIdentity(t, r)

	rec, err := store.Get(ctx, seedScope, seedKey(victim))
	require.NoError(t, err, "the new claim's record was deleted")
	assert.Equal(t, newClaim.Record.LockToken, rec.LockToken)
	assert.Equal(t, dynamostore.StateInProgress, rec.State)
	assert.True(t, rec.MatchesFingerprint(fp("a new request")))
	_, err = store.Commit(ctx, newClaim, dynamostore.Response{Status: 201}, nil)
	require.NoError(t, err, "the new claim still owns its key")
}

func TestStuckRecordCompletedBeforeItsReclaimSurvives(t *testing.T) {
	inModes(t, testStuckRecordCompletedBeforeItsReclaimSurvives)
}

func testStuckRecordCompletedBeforeItsReclaimSurvives(t *testing.T, e *env) {
	ctx := context.Background()
	truth := seed(t, e.ep.Client, e.table, e.clock.Now(), 400)
	const victim = 43 // a stuck record: its owner is slow, not dead
	require.Equal(t, stuck, victim%kinds)
	target := keyschema.PartitionKey(seedScope, seedKey(victim))
	store := e.store(nil)
	// The owner's claim, as it holds it.
	owner := &dynamostore.Claim{Result: dynamostore.Acquired, Record: &dynamostore.Record{
		Scope: seedScope, Key: seedKey(victim), Method: "POST", Path: "/payments", Fingerprint: fp(seedKey(victim)),
		State: dynamostore.StateInProgress, LockToken: seedLock(43),
		Created: e.clock.Now().Add(-10*time.Minute - 43*time.Second),
	}}

	var once sync.Once
	var completeErr error
	hook := &deleteHook{SweepClient: e.client, before: func(pk string) {
		if pk == target {
			once.Do(func() {
				_, completeErr = store.Commit(ctx, owner, dynamostore.Response{Status: 201, Body: []byte("late")}, nil)
			})
		}
	}}
	r, err := e.sweeper(hook).Sweep(ctx, "")
	require.NoError(t, err)
	if e.indexed() {
		// An index sweep does not read a stuck record before its exp:
		// every stuck record stays, and the owner completes it after.
		assert.Zero(t, r.Skipped)
		assert.Zero(t, r.Reclaimed)
		assert.Equal(t, sortedUnion(truth.byKind[liveCompleted], truth.byKind[liveInProgress], truth.byKind[stuck]),
			tableKeys(t, e.ep.Client, e.table))
		_, completeErr = store.Commit(ctx, owner, dynamostore.Response{Status: 201, Body: []byte("late")}, nil)
	} else {
		assert.Equal(t, int64(1), r.Skipped)
		assert.Equal(t, truth.count(stuck)-1, r.Reclaimed)
	}
	require.NoError(t, completeErr, "the owner could not complete its stuck record")
	assert.Equal(t, truth.count(expired), r.Evicted)
	checkIdentity(t, r)
	rec, err := store.Get(ctx, seedScope, seedKey(victim))
	require.NoError(t, err)
	assert.Equal(t, dynamostore.StateCompleted, rec.State)
	assert.Equal(t, []byte("late"), rec.Response.Body)
}

func TestSweepStoppedByItsBudgetResumesAndFinishesOnTheNextRun(t *testing.T) {
	inModes(t, testSweepStoppedByItsBudgetResumesAndFinishesOnTheNextRun)
}

func testSweepStoppedByItsBudgetResumesAndFinishesOnTheNextRun(t *testing.T, e *env) {
	ctx := context.Background()
	truth := seed(t, e.ep.Client, e.table, e.clock.Now(), 1200)
	// Each page takes a second of the test's clock; the budget is 6, about
	// half the pages of the pass.
	client := &scanClock{SweepClient: e.client, advance: e.clock.Advance, step: time.Second}

	first, err := e.sweeper(client, func(o *dynamostore.SweepOptions) { o.Budget = 6 * time.Second }).Sweep(ctx, "")
	require.NoError(t, err)
	assert.False(t, first.Finished)
	assert.Equal(t, dynamostore.SweepStoppedByBudget, first.StoppedBy)
	require.NotEmpty(t, first.Cursor)
	assert.Positive(t, first.Scanned)
	assert.Less(t, first.Scanned, e.pass(truth).read)
	assert.LessOrEqual(t, first.Pages, int64(6+4), "no page starts after the budget (one in flight per segment)")
	assert.GreaterOrEqual(t, first.Duration, 6*time.Second)
	checkIdentity(t, first)
	assert.Less(t, len(tableKeys(t, e.ep.Client, e.table)), 1200, "the first run deleted some")

	// The next run asks for 2 segments but continues the 4-segment pass.
	second, err := e.sweeper(client, func(o *dynamostore.SweepOptions) { o.Segments = 2 }).Sweep(ctx, first.Cursor)
	require.NoError(t, err)
	assert.True(t, second.Finished)
	assert.Empty(t, second.Cursor)
	if e.indexed() {
		assert.Equal(t, 2, second.Segments, "shards are swept 2 at a time now")
	} else {
		assert.Equal(t, 4, second.Segments)
	}
	checkIdentity(t, second)

	assert.Equal(t, e.pass(truth).read, first.Scanned+second.Scanned, "each item read once over the pass")
	e.assertEvictedOnce(t, truth.count(expired), first.Evicted+second.Evicted, first.Skipped+second.Skipped)
	assert.Equal(t, e.reclaimed(truth), first.Reclaimed+second.Reclaimed)
	assert.Equal(t, e.pass(truth).live, first.LiveKeys+second.LiveKeys)
	assert.Equal(t, e.remaining(truth), tableKeys(t, e.ep.Client, e.table))
}

func TestDryRunDeletesNothingAndReportsWhatItWouldDo(t *testing.T) {
	inModes(t, testDryRunDeletesNothingAndReportsWhatItWouldDo)
}

func testDryRunDeletesNothingAndReportsWhatItWouldDo(t *testing.T, e *env) {
	truth := seed(t, e.ep.Client, e.table, e.clock.Now(), 400)
	before := tableKeys(t, e.ep.Client, e.table)
	e.calls.Reset()

	r, err := e.sweeper(e.client, func(o *dynamostore.SweepOptions) { o.DryRun = true }).Sweep(context.Background(), "")
	require.NoError(t, err)
	assert.True(t, r.DryRun)
	assert.Equal(t, truth.count(expired), r.Evicted)
	assert.Equal(t, e.reclaimed(truth), r.Reclaimed)
	assert.Equal(t, e.pass(truth).live, r.LiveKeys)
	assert.Equal(t, truth.oldest, r.OldestLiveKeyAge)
	assert.Equal(t, truth.lag, r.EvictionLag)
	assert.True(t, r.Finished)
	checkIdentity(t, r)
	assert.Zero(t, e.calls.Count("DeleteItem"))
	assert.Equal(t, before, tableKeys(t, e.ep.Client, e.table))
	assert.Len(t, before, 400)
}

// sleeper advances a clock instead of waiting, and adds up what it slept.
type sleeper struct {
	clock *ddbtest.Clock
	slept atomic.Int64
}

func (s *sleeper) Sleep(_ context.Context, d time.Duration) error {
	s.slept.Add(int64(d))
	s.clock.Advance(d)
	return nil
}

func TestRateLimitSpacesPagesOnTheInjectedClock(t *testing.T) {
	inModes(t, testRateLimitSpacesPagesOnTheInjectedClock)
}

func testRateLimitSpacesPagesOnTheInjectedClock(t *testing.T, e *env) {
	// 1050 items: the last page is partial, so that no backend returns a
	// LastEvaluatedKey after it. (A page that ends exactly at the end of
	// the table may carry one, and then an empty page follows: DynamoDB
	// and the embedded emulator do, moto does not.)
	truth := seed(t, e.ep.Client, e.table, e.clock.Now(), 1050)
	s := &sleeper{clock: e.clock}
	start := e.clock.Now()
	r, err := e.sweeper(e.client, func(o *dynamostore.SweepOptions) {
		o.Segments, o.PageSize, o.ItemsPerSecond, o.Sleep = 1, 500, 100, s.Sleep
	}).Sweep(context.Background(), "")
	require.NoError(t, err)
	assert.True(t, r.Finished)
	assert.Equal(t, e.pass(truth).read, r.Scanned)
	if e.indexed() {
		// The same bucket, over 64 pages or more (two queries per
		// shard, one shard after the other): the last page (the next
		// record of the last shard, 1 item if it has one) starts once
		// the items read before it, less the first second's worth,
		// are paid for at 100 per second.
		last := int64(0)
		for _, pk := range sortedUnion(truth.byKind[liveCompleted], truth.byKind[liveInProgress], truth.byKind[stuck]) {
			if dynamostore.ExpiryBucket(dynamostore.KeySchema{}, pk) == "31" {
				last = 1
			}
		}
		assert.GreaterOrEqual(t, r.Pages, int64(2*dynamostore.ExpiryIndexShards))
		want := time.Duration(r.Scanned-last-100) * 10 * time.Millisecond
		assert.Equal(t, want, e.clock.Now().Sub(start))
		assert.Equal(t, want, time.Duration(s.slept.Load()))
		assert.Equal(t, want, r.Duration)
		return
	}
	// Pages shrink to a second's worth (100). The bucket starts with one
	// second's worth, then refills at 100 items per second: pages 1 and 2
	// start at 0 s, page k at k-2 seconds; the 11th page (50 items, the
	// last) at 9 s.
	assert.Equal(t, int64(11), r.Pages)
	assert.Equal(t, 9*time.Second, e.clock.Now().Sub(start))
	assert.Equal(t, 9*time.Second, time.Duration(s.slept.Load()))
	assert.Equal(t, 9*time.Second, r.Duration)
}

func TestRateLimitWaitPastTheBudgetStopsTheSweepInstead(t *testing.T) {
	inModes(t, testRateLimitWaitPastTheBudgetStopsTheSweepInstead)
}

func testRateLimitWaitPastTheBudgetStopsTheSweepInstead(t *testing.T, e *env) {
	n := 1000
	if e.indexed() {
		n = 2000 // 500 expired records and 32 next ones to read: more than the budget allows
	}
	seed(t, e.ep.Client, e.table, e.clock.Now(), n)
	s := &sleeper{clock: e.clock}
	start := e.clock.Now()
	r, err := e.sweeper(e.client, func(o *dynamostore.SweepOptions) {
		o.Segments, o.ItemsPerSecond, o.Sleep, o.Budget = 1, 100, s.Sleep, 3*time.Second
	}).Sweep(context.Background(), "")
	require.NoError(t, err)
	assert.False(t, r.Finished)
	assert.Equal(t, dynamostore.SweepStoppedByBudget, r.StoppedBy)
	if e.indexed() {
		// Pages of up to 100 entries: the last one starts before 3 s,
		// when at most 400 entries were paid for, and ends the sweep
		// once more than 400 are.
		assert.Greater(t, r.Scanned, int64(400))
		assert.LessOrEqual(t, r.Scanned, int64(500))
	} else {
		assert.Equal(t, int64(400), r.Scanned, "pages at 0, 0, 1 and 2 s; the next would start at 3 s, the budget")
	}
	assert.LessOrEqual(t, e.clock.Now().Sub(start), 3*time.Second, "it never sleeps past its budget")
}

// failingScans fails the Scan calls whose 1-based numbers are in fail.
type failingScans struct {
	dynamostore.SweepClient
	mu   sync.Mutex
	n    int
	fail map[int]bool
}

func (c *failingScans) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	if c.failNext() {
		return nil, ddbtest.ErrInjected
	}
	return c.SweepClient.Scan(ctx, in, optFns...)
}

// failNext numbers a call and reports whether it must fail.
func (c *failingScans) failNext() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.fail[c.n]
}

func TestFailedScanStopsItsSegmentAndTheCursorResumesFromThatPage(t *testing.T) {
	inModes(t, testFailedScanStopsItsSegmentAndTheCursorResumesFromThatPage)
}

func testFailedScanStopsItsSegmentAndTheCursorResumesFromThatPage(t *testing.T, e *env) {
	ctx := context.Background()
	truth := seed(t, e.ep.Client, e.table, e.clock.Now(), 400)
	client := &failingScans{SweepClient: e.client, fail: map[int]bool{2: true}}
	sweeper := e.sweeper(client, func(o *dynamostore.SweepOptions) { o.Segments = 1 })

	first, err := sweeper.Sweep(ctx, "")
	var se *dynamostore.StoreError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, e.readOp(), se.Op)
	assert.ErrorIs(t, err, ddbtest.ErrInjected)
	assert.False(t, first.Finished)
	assert.Equal(t, dynamostore.SweepStoppedByError, first.StoppedBy)
	assert.Equal(t, int64(1), first.Errors)
	if e.indexed() {
		// The first shard stopped at its second query; the others
		// were swept.
		assert.Less(t, first.Scanned, e.pass(truth).read)
	} else {
		assert.Equal(t, int64(100), first.Scanned, "one page before the failure")
	}
	require.NotEmpty(t, first.Cursor)

	second, err := sweeper.Sweep(ctx, first.Cursor)
	require.NoError(t, err)
	assert.True(t, second.Finished)
	assert.Equal(t, e.pass(truth).read, first.Scanned+second.Scanned)
	assert.Equal(t, truth.count(expired), first.Evicted+second.Evicted)
	assert.Equal(t, e.reclaimed(truth), first.Reclaimed+second.Reclaimed)
	assert.Equal(t, e.pass(truth).live, first.LiveKeys+second.LiveKeys)
}

func TestFailedDeletesAreCountedAndTheSweepGoesOn(t *testing.T) {
	inModes(t, testFailedDeletesAreCountedAndTheSweepGoesOn)
}

func testFailedDeletesAreCountedAndTheSweepGoesOn(t *testing.T, e *env) {
	ctx := context.Background()
	truth := seed(t, e.ep.Client, e.table, e.clock.Now(), 400)
	faulty := ddbtest.NewFaulty(e.client)
	faulty.Plan("DeleteItem", ddbtest.FailBefore, ddbtest.FailBefore)
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))

	r, err := e.sweeper(faulty, func(o *dynamostore.SweepOptions) { o.Logger = logger }).Sweep(ctx, "")
	var se *dynamostore.StoreError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "DeleteItem", se.Op)
	assert.ErrorIs(t, err, ddbtest.ErrInjected)
	assert.True(t, r.Finished, "failed deletes do not stop the pass")
	assert.Equal(t, int64(2), r.Errors)
	require.Len(t, r.ErrorMessages, 2)
	hash := regexp.MustCompile(`key [0-9a-f]{12}\)`)
	for _, m := range r.ErrorMessages {
		assert.Contains(t, m, "DeleteItem")
		assert.Regexp(t, hash, m)
	}
	assert.Equal(t, truth.count(expired)+e.reclaimed(truth)-2, r.Evicted+r.Reclaimed)
	checkIdentity(t, r)
	assert.Contains(t, logs.String(), `"level":"WARN"`)
	noKeysIn(t, logs.Bytes())
	noKeysIn(t, []byte(strings.Join(r.ErrorMessages, "\n")))

	// The next pass removes the two left behind.
	again, err := e.sweeper(e.client).Sweep(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, int64(2), again.Evicted+again.Reclaimed)
}

func TestSweepLogsOneSummaryRecordWithEveryFigureAndNoKeys(t *testing.T) {
	inModes(t, testSweepLogsOneSummaryRecordWithEveryFigureAndNoKeys)
}

func testSweepLogsOneSummaryRecordWithEveryFigureAndNoKeys(t *testing.T, e *env) {
	ctx := context.Background()
	truth := seed(t, e.ep.Client, e.table, e.clock.Now(), 400)
	target := truth.byKind[expired][3]
	store := e.store(nil)
	hook := &deleteHook{SweepClient: e.client, before: func(pk string) {
		if pk == target {
			_, _ = store.Claim(ctx, dynamostore.Request{Scope: seedScope, Key: seedKey(3*kinds + expired),
				Method: "POST", Path: "/p", Fingerprint: fp("x")})
		}
	}}
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r, err := e.sweeper(hook, func(o *dynamostore.SweepOptions) { o.Logger = logger }).Sweep(ctx, "")
	require.NoError(t, err)
	require.Equal(t, int64(1), r.Skipped)

	var summaries, skips []map[string]any
	for line := range strings.Lines(logs.String()) {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		switch rec["msg"] {
		case "idemkey sweep":
			summaries = append(summaries, rec)
		case "idemkey sweep: record changed since the scan, left in place":
			skips = append(skips, rec)
		default:
			t.Errorf("unexpected log record %s", line)
		}
	}
	require.Len(t, summaries, 1)
	s := summaries[0]
	assert.Equal(t, "INFO", s["level"])
	pass := e.pass(truth)
	want := map[string]any{
		"table": e.table, "mode": string(e.mode), "dry_run": false, "segments": 4.0, "scanned": float64(pass.read), "evicted": 99.0,
		"reclaimed": float64(e.reclaimed(truth)), "skipped": 1.0, "live_keys": float64(pass.live), "foreign": 0.0, "errors": 0.0,
		"finished": true, "stopped_by": "", "resumable": false,
		"consumed_rcu": r.ConsumedReadUnits, "consumed_wcu": r.ConsumedWriteUnits,
		"oldest_live_key_age": float64(truth.oldest), "eviction_lag": float64(truth.lag),
		"duration": 0.0, "scanned_per_evicted": float64(pass.read) / 99.0, "pages": float64(r.Pages),
	}
	for k, v := range want {
		assert.Equal(t, v, s[k], k)
	}
	require.Len(t, skips, 1)
	assert.Equal(t, "DEBUG", skips[0]["level"])
	assert.Equal(t, dynamostore.SweepKeyHash(target), skips[0]["key"])
	assert.Equal(t, "evict", skips[0]["action"])
	noKeysIn(t, logs.Bytes())
}

func TestSweepLeavesForeignItemsAndTheCursorItemAlone(t *testing.T) {
	inModes(t, testSweepLeavesForeignItemsAndTheCursorItemAlone)
}

func testSweepLeavesForeignItemsAndTheCursorItemAlone(t *testing.T, e *env) {
	ctx := context.Background()
	truth := seed(t, e.ep.Client, e.table, e.clock.Now(), 40)
	require.NoError(t, dynamostore.SaveSweepCursor(ctx, e.client, e.table, "resume-here", e.clock.Now()))
	_, err := e.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &e.table, Item: dynamostore.SweepTestItem(&dynamostore.Record{
		Scope: "s", Key: "k", Fingerprint: fp("f"), State: "weird", Expires: e.clock.Now().Add(-time.Hour)})})
	require.NoError(t, err)

	r, err := e.sweeper(e.client).Sweep(ctx, "")
	require.NoError(t, err)
	if e.indexed() {
		// The cursor item has no bucket, so it is not in the index; the
		// index does not hold the state, so the record of an unknown
		// state is not told apart before its delete, whose condition
		// leaves it alone.
		assert.Zero(t, r.Foreign)
		assert.Equal(t, int64(1), r.Skipped)
	} else {
		assert.Equal(t, int64(2), r.Foreign)
	}
	assert.Equal(t, truth.count(expired), r.Evicted)
	checkIdentity(t, r)
	cursor, err := dynamostore.LoadSweepCursor(ctx, e.client, e.table)
	require.NoError(t, err)
	assert.Equal(t, "resume-here", cursor)
	assert.Contains(t, tableKeys(t, e.ep.Client, e.table), keyschema.PartitionKey("s", "k"))
}

func TestSaveSweepCursorRoundTripsAndAnEmptyCursorDeletesTheItem(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	got, err := dynamostore.LoadSweepCursor(ctx, e.client, e.table)
	require.NoError(t, err)
	assert.Empty(t, got, "no cursor saved yet")

	require.NoError(t, dynamostore.SaveSweepCursor(ctx, e.client, e.table, "c1", e.clock.Now()))
	require.NoError(t, dynamostore.SaveSweepCursor(ctx, e.client, e.table, "c2", e.clock.Now()))
	got, err = dynamostore.LoadSweepCursor(ctx, e.client, e.table)
	require.NoError(t, err)
	assert.Equal(t, "c2", got)
	assert.Equal(t, []string{dynamostore.SweepCursorKey}, tableKeys(t, e.ep.Client, e.table))

	require.NoError(t, dynamostore.SaveSweepCursor(ctx, e.client, e.table, "", e.clock.Now()))
	got, err = dynamostore.LoadSweepCursor(ctx, e.client, e.table)
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.Empty(t, tableKeys(t, e.ep.Client, e.table))
}

func TestSweepCursorKeyNeverCollidesWithARecordKey(t *testing.T) {
	for _, scope := range []string{"", "#", "#sweep-cursor", "x"} {
		for _, key := range []string{"#sweep-cursor", "sweep-cursor", "k"} {
			assert.NotEqual(t, dynamostore.SweepCursorKey, keyschema.PartitionKey(scope, key))
		}
	}
}

func TestSweepRefusesAnInvalidCursorWithoutCallingDynamoDB(t *testing.T) {
	inModes(t, testSweepRefusesAnInvalidCursorWithoutCallingDynamoDB)
}

func testSweepRefusesAnInvalidCursorWithoutCallingDynamoDB(t *testing.T, e *env) {
	ctx := context.Background()
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	otherTable, err := dynamostore.NewSweeper(e.client, "another-table").Sweep(canceled, "")
	require.ErrorIs(t, err, context.Canceled)
	require.NotEmpty(t, otherTable.Cursor)

	e.calls.Reset()
	for name, cursor := range map[string]string{
		"not base64":    "%%%",
		"not JSON":      "bm90IGpzb24",
		"other table":   otherTable.Cursor,
		"cut short":     otherTable.Cursor[:len(otherTable.Cursor)/2],
		"wrong version": "eyJ2IjoyfQ",
	} {
		r, err := e.sweeper(e.client).Sweep(ctx, cursor)
		assert.ErrorIs(t, err, dynamostore.ErrInvalidCursor, name)
		assert.Nil(t, r, name)
	}
	assert.Zero(t, e.calls.Total())
}

func TestCanceledSweepReturnsACursorThatRunsTheWholePass(t *testing.T) {
	inModes(t, testCanceledSweepReturnsACursorThatRunsTheWholePass)
}

func testCanceledSweepReturnsACursorThatRunsTheWholePass(t *testing.T, e *env) {
	truth := seed(t, e.ep.Client, e.table, e.clock.Now(), 400)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	e.calls.Reset()
	r, err := e.sweeper(e.client).Sweep(canceled, "")
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, r)
	assert.Equal(t, dynamostore.SweepStoppedByCancel, r.StoppedBy)
	assert.False(t, r.Finished)
	assert.Zero(t, r.Scanned)
	assert.Zero(t, e.calls.Total())

	again, err := e.sweeper(e.client).Sweep(context.Background(), r.Cursor)
	require.NoError(t, err)
	assert.True(t, again.Finished)
	assert.Equal(t, e.pass(truth).read, again.Scanned)
	assert.Equal(t, truth.count(expired), again.Evicted)
}

func TestSweepStopsTheMarginBeforeTheContextDeadline(t *testing.T) {
	inModes(t, testSweepStopsTheMarginBeforeTheContextDeadline)
}

func testSweepStopsTheMarginBeforeTheContextDeadline(t *testing.T, e *env) {
	seed(t, e.ep.Client, e.table, e.clock.Now(), 400)
	// Pages take 20 minutes of the test's clock; the deadline is an hour
	// away, so the third page starts at 40 minutes, and none after.
	client := &scanClock{SweepClient: e.client, advance: e.clock.Advance, step: 20 * time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	r, err := e.sweeper(client, func(o *dynamostore.SweepOptions) { o.Segments = 1 }).Sweep(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, dynamostore.SweepStoppedByBudget, r.StoppedBy)
	assert.Equal(t, int64(3), r.Pages)
	if !e.indexed() {
		assert.Equal(t, int64(300), r.Scanned)
	}
}

func TestShortDeadlineLeavesHalfTheRemainingTimeAsMargin(t *testing.T) {
	inModes(t, testShortDeadlineLeavesHalfTheRemainingTimeAsMargin)
}

func testShortDeadlineLeavesHalfTheRemainingTimeAsMargin(t *testing.T, e *env) {
	seed(t, e.ep.Client, e.table, e.clock.Now(), 400)
	// 40 s left, a 50 s margin: the sweep still runs for about 20 s of
	// the test's clock, two pages of 10 s. (The real deadline leaves a
	// slow backend, moto under load, ample time for those two pages.)
	client := &scanClock{SweepClient: e.client, advance: e.clock.Advance, step: 10 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	r, err := e.sweeper(client, func(o *dynamostore.SweepOptions) {
		o.Segments, o.DeadlineMargin = 1, 50*time.Second
	}).Sweep(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, dynamostore.SweepStoppedByBudget, r.StoppedBy)
	assert.Equal(t, int64(2), r.Pages)
}

func TestNewSweeperAppliesDefaultsAndClamps(t *testing.T) {
	e := newEnv(t)
	o := dynamostore.NewSweeper(e.client, e.table).Options()
	assert.Equal(t, dynamostore.DefaultSweepSegments, o.Segments)
	assert.Equal(t, dynamostore.DefaultSweepPageSize, o.PageSize)
	assert.Equal(t, float64(dynamostore.DefaultSweepItemsPerSecond), o.ItemsPerSecond)
	assert.Equal(t, dynamostore.DefaultSweepMargin, o.DeadlineMargin)
	assert.NotNil(t, o.Now)
	assert.NotNil(t, o.Sleep)
	assert.NotNil(t, o.Logger)

	o = dynamostore.NewSweeper(e.client, e.table, func(o *dynamostore.SweepOptions) {
		o.Segments, o.PageSize, o.ItemsPerSecond = 5000, 1000, 50
	}).Options()
	assert.Equal(t, dynamostore.MaxSweepSegments, o.Segments)
	assert.Equal(t, 50, o.PageSize, "a page is at most a second's worth of the rate")

	assert.Panics(t, func() { dynamostore.NewSweeper(nil, "t") })
	assert.Panics(t, func() { dynamostore.NewSweeper(e.client, "") })
}

func TestReportJSONCarriesTheFiguresInSecondsAndTheCursor(t *testing.T) {
	r := &dynamostore.SweepReport{Table: "t", Scanned: 10, Evicted: 4, OldestLiveKeyAge: 90 * time.Second,
		EvictionLag: 1500 * time.Millisecond, Duration: 2 * time.Second, Cursor: "abc", StoppedBy: dynamostore.SweepStoppedByBudget,
		Started: time.Unix(1_800_000_000, 0).UTC()}
	b, err := json.Marshal(r)
	require.NoError(t, err)
	assert.JSONEq(t, `{"table":"t","dryRun":false,"segments":0,"started":"2027-01-15T08:00:00Z","durationMs":2000,
		"pages":0,"scanned":10,"evicted":4,"reclaimed":0,"skipped":0,"liveKeys":0,"foreign":0,"unowned":0,"unindexed":0,
		"oldestLiveKeyAgeSeconds":90,"evictionLagSeconds":1.5,"consumedReadUnits":0,"consumedWriteUnits":0,
		"scannedPerEvicted":2.5,"errors":0,"finished":false,"stoppedBy":"budget","cursor":"abc"}`, string(b))
	assert.Zero(t, (&dynamostore.SweepReport{Scanned: 5}).ScannedPerEvicted())

	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("x", "sweep", r)
	assert.NotContains(t, logs.String(), "abc", "the cursor holds keys and is never logged")
	assert.Contains(t, logs.String(), `"resumable":true`)
}

func TestSweepCountsNothingTwiceWhenTheClientFailsEverything(t *testing.T) {
	inModes(t, testSweepCountsNothingTwiceWhenTheClientFailsEverything)
}

func testSweepCountsNothingTwiceWhenTheClientFailsEverything(t *testing.T, e *env) {
	seed(t, e.ep.Client, e.table, e.clock.Now(), 40)
	// Every part's first call fails: the 4 segments', or the 32
	// shards' (a shard whose query fails stops; the others go on).
	parts := 4
	if e.indexed() {
		parts = dynamostore.ExpiryIndexShards
	}
	fail := map[int]bool{}
	for i := range parts {
		fail[i+1] = true
	}
	client := &failingScans{SweepClient: e.client, fail: fail}
	r, err := e.sweeper(client).Sweep(context.Background(), "")
	require.ErrorIs(t, err, ddbtest.ErrInjected)
	assert.Equal(t, int64(parts), r.Errors, "one failed call per part")
	assert.Len(t, r.ErrorMessages, min(parts, 5), "the first five at most")
	assert.Zero(t, r.Scanned)
	assert.Equal(t, dynamostore.SweepStoppedByError, r.StoppedBy)
	assert.NotEmpty(t, r.Cursor)
}

func TestADeleteAppliedBeforeItsAnswerWasLostCountsAsDone(t *testing.T) {
	inModes(t, testADeleteAppliedBeforeItsAnswerWasLostCountsAsDone)
}

func testADeleteAppliedBeforeItsAnswerWasLostCountsAsDone(t *testing.T, e *env) {
	ctx := context.Background()
	truth := seed(t, e.ep.Client, e.table, e.clock.Now(), 400)
	client, lost := e.losingAnswers("DeleteItem", 2)

	r, err := e.sweeper(client).Sweep(ctx, "")
	require.NoError(t, err)
	require.Equal(t, 2, lost.Lost(), "two deletes' answers were not lost")
	assert.Equal(t, int64(0), r.Skipped, "a retried delete that had been applied is not a record changed since the scan")
	assert.Equal(t, int64(0), r.Errors)
	assert.Equal(t, truth.count(expired)+e.reclaimed(truth), r.Evicted+r.Reclaimed)
	checkIdentity(t, r)

	again, err := e.sweeper(e.client).Sweep(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, int64(0), again.Evicted+again.Reclaimed, "the first pass left a record behind")
}

func TestARecordDeletedByAnotherBeforeTheSweepsDeleteIsSkipped(t *testing.T) {
	inModes(t, testARecordDeletedByAnotherBeforeTheSweepsDeleteIsSkipped)
}

func testARecordDeletedByAnotherBeforeTheSweepsDeleteIsSkipped(t *testing.T, e *env) {
	ctx := context.Background()
	truth := seed(t, e.ep.Client, e.table, e.clock.Now(), 400)
	target := truth.byKind[expired][5]
	var once sync.Once
	var targetSent atomic.Int32
	hook := &deleteHook{SweepClient: e.client, before: func(pk string) {
		if pk == target {
			once.Do(func() {
				// TTL, or another sweeper, deletes it first.
				_, err := e.ep.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &e.table, Key: map[string]types.AttributeValue{dynamostore.PartitionKey: &types.AttributeValueMemberS{Value: pk}}})
				require.NoError(t, err)
			})
		}
	}, sent: func(pk string, attempts int) {
		if pk == target {
			targetSent.Store(int32(attempts))
		}
	}}
	r, err := e.sweeper(hook).Sweep(ctx, "")
	require.NoError(t, err)
	if targetSent.Load() > 1 {
		// The SDK sent it again (a timeout or a dropped connection on a
		// loaded machine): the first attempt may have deleted the record,
		// so the sweep rightly counts it evicted.
		t.Logf("the target's delete was sent %d times", targetSent.Load())
		assert.Equal(t, int64(0), r.Skipped)
		assert.Equal(t, truth.count(expired), r.Evicted)
	} else {
		require.Equal(t, int32(1), targetSent.Load(), "the target's delete was sent")
		assert.Equal(t, int64(1), r.Skipped, "a delete sent once that finds its record gone did not delete it")
		assert.Equal(t, truth.count(expired)-1, r.Evicted)
	}
	checkIdentity(t, r)
}
