package dynamostore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/keyschema"
)

// On a global table evicted without TTL, each region's sweeper deletes only
// the records its own region wrote: a delete of another region's record
// from a replica that has not seen its newest write would replicate and win.
func TestSweepWithRegionDeletesOnlyTheRecordsThatRegionWrote(t *testing.T) {
	inModes(t, testSweepWithRegionDeletesOnlyTheRecordsThatRegionWrote)
}

func testSweepWithRegionDeletesOnlyTheRecordsThatRegionWrote(t *testing.T, e *env) {
	ctx := context.Background()
	if e.indexed() {
		e.indexComplete(t, "a", "b")
	}
	lease := func(o *dynamostore.Options) { o.Retention, o.Lease = 2*time.Minute, time.Minute }
	stores := map[string]*dynamostore.Store{
		"a": e.store(nil, lease, func(o *dynamostore.Options) { o.Region = "a" }),
		"b": e.store(nil, lease, func(o *dynamostore.Options) { o.Region = "b" }),
		"":  e.store(nil, lease),
	}
	for region, s := range stores {
		done, err := s.Claim(ctx, request("done-"+region, "x"))
		require.NoError(t, err)
		_, err = s.Commit(ctx, done, created, nil)
		require.NoError(t, err)
	}
	e.clock.Advance(90 * time.Second)
	for region, s := range stores {
		_, err := s.Claim(ctx, request("stuck-"+region, "x"))
		require.NoError(t, err)
	}
	e.clock.Advance(100 * time.Second) // the completed records expired (claim + lease + retention), the claims' locks ran out

	r, err := e.sweeper(e.client, func(o *dynamostore.SweepOptions) { o.Region = "a" }).Sweep(ctx, "")
	require.NoError(t, err)
	checkIdentity(t, r)
	assert.Equal(t, int64(1), r.Evicted, "a's completed record")
	stuckGone := !e.indexed() // an index sweep reads stuck records once their exp passed
	if e.indexed() {
		assert.Zero(t, r.Reclaimed)
		// The expired records of b and of none, and in each shard the
		// stuck records up to a's (the next of its own: live until its
		// exp), all of them in the shards without a's.
		assert.GreaterOrEqual(t, r.Foreign, int64(2))
		assert.Equal(t, int64(1), r.LiveKeys, "a's stuck record")
		assert.GreaterOrEqual(t, r.Foreign+r.LiveKeys, int64(2+1))
		assert.LessOrEqual(t, r.Foreign+r.LiveKeys, int64(2+3))
	} else {
		assert.Equal(t, int64(1), r.Reclaimed, "a's stuck claim")
		assert.Equal(t, int64(4), r.Foreign, "b's records and the region-less ones are left alone")
	}

	raw := e.store(nil, lease, func(o *dynamostore.Options) { o.Now = func() time.Time { return e.clock.Now().Add(-80 * time.Second) } })
	for _, key := range []string{"done-a", "stuck-a", "done-b", "stuck-b", "done-", "stuck-"} {
		_, err := raw.Get(ctx, "tenant-a", key)
		gone := errors.Is(err, dynamostore.ErrNotFound)
		if !gone {
			require.NoError(t, err)
		}
		assert.Equal(t, key == "done-a" || (stuckGone && key == "stuck-a"), gone, key)
	}

	r, err = e.sweeper(e.client).Sweep(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, int64(2), r.Evicted, "without Region every expired record goes")
	assert.Equal(t, 2*int64(btoi(stuckGone)), r.Reclaimed)
}

// btoi is 1 for true, 0 for false.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A record of no region (its Store has no Options.Region) is deleted by no
// regional sweep: a regional sweep counts it as Unowned and, once it
// expired, as eviction lag, and warns, so that a table that only grows
// shows on the lag alarm. A record of another region is that region's to
// delete: neither unowned nor lag here.
func TestRegionalSweepCountsRecordsOfNoRegionAsUnownedLag(t *testing.T) {
	inModes(t, testRegionalSweepCountsRecordsOfNoRegionAsUnownedLag)
}

func testRegionalSweepCountsRecordsOfNoRegionAsUnownedLag(t *testing.T, e *env) {
	ctx := context.Background()
	if e.indexed() {
		e.indexComplete(t, "a", "b")
	}
	lease := func(o *dynamostore.Options) { o.Retention, o.Lease = 2*time.Minute, time.Minute }
	for key, s := range map[string]*dynamostore.Store{
		"done-":  e.store(nil, lease),
		"done-b": e.store(nil, lease, func(o *dynamostore.Options) { o.Region = "b" }),
	} {
		c, err := s.Claim(ctx, request(key, "x"))
		require.NoError(t, err)
		_, err = s.Commit(ctx, c, created, nil)
		require.NoError(t, err)
	}
	e.clock.Advance(3*time.Minute + 10*time.Second) // both expired 10 s ago (claim + lease + retention)

	var logs bytes.Buffer
	r, err := e.sweeper(e.client, func(o *dynamostore.SweepOptions) {
		o.Region = "a"
		o.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	}).Sweep(ctx, "")
	require.NoError(t, err)
	checkIdentity(t, r)
	assert.Zero(t, r.Evicted)
	assert.Equal(t, int64(2), r.Foreign)
	assert.Equal(t, int64(1), r.Unowned, "the record of no region")
	assert.InDelta(t, (10 * time.Second).Seconds(), r.EvictionLag.Seconds(), 1, "the unowned record's expiry, not b's")
	var rec map[string]any
	require.NoError(t, json.Unmarshal(logs.Bytes(), &rec))
	assert.Equal(t, "WARN", rec["level"])
	assert.EqualValues(t, 1, rec["unowned"])

	r, err = e.sweeper(e.client, func(o *dynamostore.SweepOptions) { o.Region = "b" }).Sweep(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, int64(1), r.Evicted, "b's record")
	assert.Equal(t, int64(1), r.Unowned)
}

// With Owns, a regional sweep deletes the records the hook gives it,
// whichever region wrote them (a key that changed home), leaves those it
// does not, and counts those no region may delete as Unowned lag.
func TestSweepWithOwnsDeletesWhatTheHookGivesItWhoeverWroteIt(t *testing.T) {
	inModes(t, testSweepWithOwnsDeletesWhatTheHookGivesItWhoeverWroteIt)
}

func testSweepWithOwnsDeletesWhatTheHookGivesItWhoeverWroteIt(t *testing.T, e *env) {
	ctx := context.Background()
	if e.indexed() {
		e.indexComplete(t, "a", "b")
	}
	lease := func(o *dynamostore.Options) { o.Retention, o.Lease = 2*time.Minute, time.Minute }
	a := e.store(nil, lease, func(o *dynamostore.Options) { o.Region = "a" })
	b := e.store(nil, lease, func(o *dynamostore.Options) { o.Region = "b" })
	for _, w := range []struct {
		s   *dynamostore.Store
		key string
	}{{b, "rehomed-to-a"}, {a, "rehomed-to-b"}, {a, "changing"}} {
		c, err := w.s.Claim(ctx, request(w.key, "x"))
		require.NoError(t, err)
		_, err = w.s.Commit(ctx, c, created, nil)
		require.NoError(t, err)
	}
	e.clock.Advance(4 * time.Minute) // every record expired
	var (
		mu    sync.Mutex
		asked []string
	)
	owns := func(_ context.Context, scope, key, writer string) (bool, bool) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, scope+"/"+key+"@"+writer)
		return key == "rehomed-to-a", key == "changing"
	}
	r, err := e.sweeper(e.client, func(o *dynamostore.SweepOptions) {
		o.Region = "a"
		o.Owns = owns
		o.Segments = 1
	}).Sweep(ctx, "")
	require.NoError(t, err)
	checkIdentity(t, r)
	assert.Equal(t, int64(1), r.Evicted, "the record b wrote of a key a homes now")
	assert.Equal(t, int64(1), r.Unowned, "the record no region may delete now")
	assert.Positive(t, r.EvictionLag)
	assert.Subset(t, asked, []string{"tenant-a/rehomed-to-a@b", "tenant-a/rehomed-to-b@a", "tenant-a/changing@a"})

	raw := e.store(nil, lease, func(o *dynamostore.Options) { o.Now = func() time.Time { return e.clock.Now().Add(-3 * time.Minute) } })
	for key, want := range map[string]bool{"rehomed-to-a": true, "rehomed-to-b": false, "changing": false} {
		_, err := raw.Get(ctx, "tenant-a", key)
		assert.Equal(t, want, errors.Is(err, dynamostore.ErrNotFound), key)
	}
	assert.Panics(t, func() {
		e.sweeper(e.client, func(o *dynamostore.SweepOptions) { o.Owns = owns })
	}, "Owns without Region")
}

// A regional sweep's live figures are its own region's, in both modes:
// here region b's records expire before a's in every shard of the index,
// so the next record of each shard is b's, and an index sweep of a reads
// on to a's next one. A scan counts every live record of a; an index sweep
// the next one of a in each shard holding one (and those of a read on the
// same page), whose age is the oldest.
func TestRegionalSweepReportsItsOwnRegionsLiveKeysAndOldestAge(t *testing.T) {
	inModes(t, testRegionalSweepReportsItsOwnRegionsLiveKeysAndOldestAge)
}

func testRegionalSweepReportsItsOwnRegionsLiveKeysAndOldestAge(t *testing.T, e *env) {
	ctx := context.Background()
	if e.indexed() {
		e.indexComplete(t, "a")
	}
	now := e.clock.Now()
	record := func(key, region string, created time.Time, retention time.Duration) *dynamostore.Record {
		return &dynamostore.Record{Scope: "tenant-a", Key: key, Method: "POST", Path: "/payments", Fingerprint: fp(key),
			LockToken: seedLock(len(key)), State: dynamostore.StateCompleted, Region: region,
			Created: created, Completed: created.Add(time.Second), LockExpires: created.Add(time.Minute),
			Expires: created.Add(time.Minute + retention), Response: &dynamostore.Response{Status: 201}}
	}
	var recs []*dynamostore.Record
	var own []string
	for i := range 10 { // a's: an hour old and older, a day's retention
		key := fmt.Sprintf("a-%02d", i)
		recs = append(recs, record(key, "a", now.Add(-time.Hour-time.Duration(i)*time.Minute), 24*time.Hour))
		own = append(own, keyschema.PartitionKey("tenant-a", key))
	}
	var others []string
	for i := range 320 { // b's: younger, expiring within two hours
		key := fmt.Sprintf("b-%03d", i)
		recs = append(recs, record(key, "b", now.Add(-time.Minute), time.Hour+time.Duration(i)*time.Second))
		others = append(others, keyschema.PartitionKey("tenant-a", key))
	}
	put(t, e.ep.Client, e.table, recs)
	if e.indexed() {
		require.Equal(t, int64(dynamostore.ExpiryIndexShards), nextShards(others), "b has a record in every shard")
	}

	r, err := e.sweeper(e.client, func(o *dynamostore.SweepOptions) { o.Region = "a" }).Sweep(ctx, "")
	require.NoError(t, err)
	require.True(t, r.Finished)
	checkIdentity(t, r)
	assert.Zero(t, r.Evicted)
	assert.Equal(t, time.Hour+9*time.Minute, r.OldestLiveKeyAge, "a's oldest record")
	if e.indexed() {
		// a's next record in each shard holding one, and a's others that
		// the same page read.
		assert.GreaterOrEqual(t, r.LiveKeys, nextShards(own))
		assert.LessOrEqual(t, r.LiveKeys, int64(len(own)))
		assert.Positive(t, r.Foreign, "b's records read before them")
	} else {
		assert.Equal(t, int64(len(own)), r.LiveKeys)
		assert.Equal(t, int64(len(others)), r.Foreign)
	}
	assert.Len(t, tableKeys(t, e.ep.Client, e.table), len(own)+len(others))
}
