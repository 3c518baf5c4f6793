package multiregion_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/multiregion"
)

// The tests of this file combine features as a deployment does: topology
// changes with regional sweepers, failover chains, removed regions.

// regionalSweeper is region's sweeper in HomeRegion mode: over its own
// replica, deleting what owner's SweepOwner gives it.
func (w *world) regionalSweeper(owner *multiregion.Store, region string) *dynamostore.Sweeper {
	w.t.Helper()
	owns, err := owner.SweepOwner(region)
	require.NoError(w.t, err)
	return dynamostore.NewSweeper(w.cluster.Region(region).Client, keysTable, func(o *dynamostore.SweepOptions) {
		o.Region = region
		o.Owns = owns
		o.Now = w.clock.Now
		o.ItemsPerSecond = -1
		o.Segments = 1
	})
}

func (w *world) sweep(owner *multiregion.Store, region string) *dynamostore.SweepReport {
	w.t.Helper()
	rep, err := w.regionalSweeper(owner, region).Sweep(context.Background(), "")
	require.NoError(w.t, err)
	return rep
}

// keyRecords returns the partition keys of the key records in region's
// replica (the topology record left out).
func (w *world) keyRecords(region string) []string {
	w.t.Helper()
	items, err := w.cluster.Items(context.Background(), region, keysTable)
	require.NoError(w.t, err)
	var out []string
	for _, it := range items {
		pk := it[dynamostore.PartitionKey].(*types.AttributeValueMemberS).Value
		if pk != multiregion.TopologyPartitionKey {
			out = append(out, pk)
		}
	}
	return out
}

// keyFailingOverTo returns a key whose first failover region is r, and its
// home.
func keyFailingOverTo(t *testing.T, r string) (key, home string) {
	t.Helper()
	for i := range 1000 {
		k := fmt.Sprintf("key-%d", i)
		if o := multiregion.HomeOrder(tenant, k, three); o[0] != r && o[1] == r {
			return k, o[0]
		}
	}
	t.Fatalf("no key fails over to %s", r)
	return "", ""
}

// rehoming is a key homed in x under t1 (the three regions, written as
// the topology record through writer) and pinned to y, its first failover
// region, under t2.
type rehoming struct {
	x, y, key string
	writer    multiregion.Region
	pins      map[string]string
	t1, t2    multiregion.Topology
}

func (w *world) rehoming() rehoming {
	w.t.Helper()
	rh := rehoming{x: three[0], key: keyHomedIn(w.t, three[0]), t1: multiregion.Topology{Regions: three}}
	rh.y = multiregion.HomeOrder(tenant, rh.key, three)[1]
	rh.writer = writerOtherThan(w.t, w, rh.x, rh.y)
	rh.pins = map[string]string{tenant: rh.y}
	rh.t2 = multiregion.Topology{Regions: three, Pins: rh.pins}
	_, err := multiregion.AdvanceTopology(context.Background(), rh.writer, rh.t1)
	require.NoError(w.t, err)
	return rh
}

// advanceTopology runs every step of the change to next through writer,
// waiting the lag and the refresh between steps.
func (w *world) advanceTopology(writer multiregion.Region, next multiregion.Topology, wait time.Duration) {
	w.t.Helper()
	for range 3 {
		_, err := multiregion.AdvanceTopology(context.Background(), writer, next)
		require.NoError(w.t, err)
		w.advance(wait)
	}
}

// Finding 1: a key homed in X leaves an abandoned claim there; a pin moves
// its home to Y (prepare, switch, finish); after the lease a retry executes
// and commits in Y. Within the lag, X's regional sweeper sees X's stale
// copy, which X wrote. Were it X's to delete, the delete (the later write)
// would replicate to Y and erase Y's completed record, and the next retry
// would execute again. The sweeper's right follows the topology record: X
// no longer homes the key, so X leaves it; Y, its home, keeps its live
// record.
func TestRehomedKeysStaleCopyIsNotSweptByItsOldHome(t *testing.T) {
	const lag = 10 * time.Second
	w := newWorld(t, lag, false)
	ctx := context.Background()
	rh := w.rehoming()
	x, y, key, writer, p, t2 := rh.x, rh.y, rh.key, rh.writer, rh.pins, rh.t2
	w.advance(2 * lag)

	before := w.router(homeMode, refresh(time.Second))
	abandoned, err := before.Claim(ctx, idemkey.Request{Scope: tenant, Key: key, Method: "POST", Path: "/payments", Fingerprint: fp("x")})
	require.NoError(t, err)
	require.Equal(t, dynamostore.Acquired, abandoned.Result)
	require.Equal(t, x, abandoned.Record.Region)
	w.advance(2 * lag) // the abandoned claim reaches Y

	w.advanceTopology(writer, t2, 2*lag)
	after := w.router(homeMode, refresh(time.Second), pins(p))
	rec, err := after.CheckTopology(ctx)
	require.NoError(t, err)
	require.False(t, rec.Changing())
	require.True(t, rec.Active.Equal(t2))
	w.advance(time.Minute) // past the abandoned claim's lease

	svc := newService(t, after)
	first := svc.post(key, `{"amount":3}`)
	require.Equal(t, http.StatusCreated, first.status, first.body)
	require.Equal(t, int64(1), svc.executed.Load())

	// Within the lag: Y's commit has not reached X, whose replica still
	// holds X's abandoned claim, its lock long expired.
	repX := w.sweep(after, x)
	assert.Zero(t, repX.Reclaimed+repX.Evicted, "X's sweeper deletes nothing of a key it no longer homes")
	repY := w.sweep(after, y)
	assert.Zero(t, repY.Reclaimed+repY.Evicted, "Y's record is live")

	w.advance(2 * lag)
	retry := svc.post(key, `{"amount":3}`)
	assert.Equal(t, http.StatusCreated, retry.status, retry.body)
	assert.Equal(t, "true", retry.header.Get(handler.ReplayedHeader), "the completed record survived")
	assert.Equal(t, int64(1), svc.executed.Load(), "executed once")
}

// Finding 2: the home is dark; a request fails over to B, executes and
// stalls past its lease before committing; its claim has replicated to C.
// B goes dark and the retry fails over to C, which finds B's abandoned
// claim in its replica. It can retire it only in B, which is unreachable,
// so it fails closed rather than execute beside a commit that can still
// land. Once B is back the stalled commit lands and the retry replays it.
func TestFailoverRegionFailsClosedOnAnotherFailoverRegionsAbandonedClaim(t *testing.T) {
	const lag = time.Second
	w := newWorld(t, lag, false)
	router := w.router(failoverMode)
	stalling := newStallingService(t, router)
	retrier := newService(t, router)
	home := "eu-west-1"
	key := keyHomedIn(t, home)
	order := router.Order(tenant, key)
	b, c := order[1], order[2]

	w.cluster.CutOff(home)
	resume := stalling.postStalled(key, `{"amount":6}`)
	w.advance(2 * lag)     // B's claim reaches C
	w.advance(time.Minute) // past its lease
	w.cluster.CutOff(b)

	retry := retrier.post(key, `{"amount":6}`)
	assert.Equal(t, http.StatusServiceUnavailable, retry.status, "C cannot retire B's abandoned claim: fail closed")
	assert.Zero(t, retrier.executed.Load(), "nothing ran in C")

	w.cluster.Restore(b)
	first := resume()
	require.Equal(t, http.StatusCreated, first.status, first.body)
	again := retrier.post(key, `{"amount":6}`)
	assert.Equal(t, http.StatusCreated, again.status, again.body)
	assert.Equal(t, "true", again.header.Get(handler.ReplayedHeader))
	assert.Equal(t, int64(1), stalling.executed.Load()+retrier.executed.Load(), "executed once")
	w.cluster.Restore(home)
	w.advance(2 * lag)
	for _, r := range three {
		assert.LessOrEqual(t, len(w.effects(r, key)), 1, "region %s", r)
	}
	assert.Empty(t, w.effects(c, key+"#2"))
}

// Finding 5: a region R is removed by the topology procedure. The records R
// wrote (the home records of keys R homed, the failover records R wrote
// for keys homed elsewhere) are handed to the remaining sweepers: each is
// the key's home's to delete once no topology lists R. During the change,
// a key whose two topologies home it in different regions is nobody's, and
// the sweep reports it as Unowned (eviction lag once expired) until the
// change is finished.
func TestRemovedRegionsRecordsAreSweptByTheRemainingRegions(t *testing.T) {
	const lag = time.Second
	w := newWorld(t, lag, false)
	ctx := context.Background()
	removed := three[2]
	remaining := three[:2]
	t1 := multiregion.Topology{Regions: three}
	t2 := multiregion.Topology{Regions: remaining}
	writer := writerOtherThan(t, w, removed)
	_, err := multiregion.AdvanceTopology(ctx, writer, t1)
	require.NoError(t, err)

	homedInR := keyHomedIn(t, removed)
	failedOverToR, darkHome := keyFailingOverTo(t, removed)

	old := newService(t, w.router(failoverMode))
	require.Equal(t, http.StatusCreated, old.post(homedInR, `{"amount":1}`).status)
	w.cluster.CutOff(darkHome)
	require.Equal(t, http.StatusCreated, old.post(failedOverToR, `{"amount":2}`).status)
	require.Equal(t, int64(1), w.counters.Count(multiregion.EventFailover))
	w.cluster.Restore(darkHome)
	w.advance(2 * lag)
	for _, r := range remaining {
		require.Len(t, w.keyRecords(r), 2, "R's two records reached %s", r)
	}

	newRouter, err := multiregion.New(w.regions[:2], failoverMode, refresh(time.Second))
	require.NoError(t, err)
	for range 2 { // prepare, switch
		_, err = multiregion.AdvanceTopology(ctx, writer, t2)
		require.NoError(t, err)
		w.advance(2 * lag)
	}
	w.advance(25 * time.Hour) // past the records' retention
	homeNow := t2.Home(tenant, homedInR)
	during := w.sweep(newRouter, homeNow)
	assert.Zero(t, during.Evicted, "during the change the key R homed has two homes: nobody deletes it")
	assert.GreaterOrEqual(t, during.Unowned, int64(1), "and the sweep reports it")

	_, err = multiregion.AdvanceTopology(ctx, writer, t2) // finish
	require.NoError(t, err)
	w.advance(2 * lag)
	var evicted, foreignUnowned int64
	for _, r := range remaining {
		rep := w.sweep(newRouter, r)
		evicted += rep.Evicted
		foreignUnowned += rep.Unowned
	}
	assert.Equal(t, int64(2), evicted, "each of R's records is deleted once, by the key's home")
	assert.Zero(t, foreignUnowned)
	w.advance(2 * lag)
	for _, r := range remaining {
		assert.Empty(t, w.keyRecords(r), "nothing of R's is left in %s", r)
	}
}
