package multiregion_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/multiregion"
)

func refresh(d time.Duration) func(*multiregion.Options) {
	return func(o *multiregion.Options) { o.TopologyRefresh = d }
}

func pins(p map[string]string) func(*multiregion.Options) {
	return func(o *multiregion.Options) { o.Pins = p }
}

func TestFirstHomeRegionStoreWritesItsConfigurationAsTheTopologyRecord(t *testing.T) {
	w := newWorld(t, time.Hour, false)
	ctx := context.Background()
	_, err := multiregion.LoadTopology(ctx, w.regions[0])
	require.ErrorIs(t, err, multiregion.ErrNoTopology)

	rec, err := w.router(homeMode).CheckTopology(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), rec.Version)
	assert.True(t, rec.Active.Equal(multiregion.Topology{Regions: three}))
	assert.False(t, rec.Changing())

	stored, err := multiregion.LoadTopology(ctx, w.regions[0])
	require.NoError(t, err)
	assert.Equal(t, rec, stored)
}

func TestStoreWhoseConfigurationContradictsTheTopologyRecordServesNothing(t *testing.T) {
	w := newWorld(t, time.Hour, false)
	ctx := context.Background()
	_, err := multiregion.AdvanceTopology(ctx, w.regions[0], multiregion.Topology{Regions: three})
	require.NoError(t, err)

	pinned := w.router(homeMode, pins(map[string]string{tenant: three[1]}))
	_, err = pinned.CheckTopology(ctx)
	require.ErrorIs(t, err, multiregion.ErrTopologyMismatch)
	require.ErrorIs(t, err, multiregion.ErrInvalidConfig)
	var ce *multiregion.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Reason, "AdvanceTopology")

	svc := newService(t, pinned)
	got := svc.post(keyHomedIn(t, three[0]), `{"amount":1}`)
	assert.GreaterOrEqual(t, got.status, 500, got.body)
	assert.Zero(t, svc.executed.Load(), "nothing runs under a contradicted configuration")
}

func TestAdvanceTopologyStepsThroughPrepareSwitchFinishAndRefusesAThirdTopology(t *testing.T) {
	w := newWorld(t, time.Hour, false)
	ctx := context.Background()
	t1 := multiregion.Topology{Regions: three}
	t2 := multiregion.Topology{Regions: three, Pins: map[string]string{tenant: three[2]}}
	t3 := multiregion.Topology{Regions: three[:2]}
	var got []string
	for _, to := range []multiregion.Topology{t1, t1, t2, t2, t2, t2} {
		rec, err := multiregion.AdvanceTopology(ctx, w.regions[0], to)
		require.NoError(t, err)
		got = append(got, rec.String())
		if rec.Version == 2 {
			_, err := multiregion.AdvanceTopology(ctx, w.regions[0], t3)
			require.ErrorIs(t, err, multiregion.ErrTopologyStep, "a third topology while a change is in progress")
		}
	}
	assert.Equal(t, []string{
		"v1 active " + t1.String(),
		"v1 active " + t1.String(),
		"v2 active " + t1.String() + " consulted " + t2.String(),
		"v3 active " + t2.String() + " consulted " + t1.String(),
		"v4 active " + t2.String(),
		"v4 active " + t2.String(),
	}, got)

	_, err := multiregion.AdvanceTopology(ctx, w.regions[0], multiregion.Topology{Regions: []string{"a", "a"}})
	assert.ErrorIs(t, err, multiregion.ErrTopologyStep)
}

// TestRetryBetweenProcessesOnAdjacentTopologyRecordsExecutesOnce: a pin
// change moves a key from h1 to h2. One process still acts on the prepare
// record (claims in h1), the other already on the switch record (claims
// in h2); nothing replicates meanwhile. A retry reaching the other process
// is answered from the first execution, in either order.
func TestRetryBetweenProcessesOnAdjacentTopologyRecordsExecutesOnce(t *testing.T) {
	t1 := multiregion.Topology{Regions: three}
	for _, firstAtNew := range []bool{true, false} {
		t.Run(map[bool]string{true: "new process first", false: "old process first"}[firstAtNew], func(t *testing.T) {
			w := newWorld(t, time.Hour, false) // nothing replicates during the test
			ctx := context.Background()
			key := keyHomedIn(t, three[0])
			p := map[string]string{tenant: multiregion.HomeOrder(tenant, key, three)[1]} // moves key
			t2 := multiregion.Topology{Regions: three, Pins: p}
			h1, h2 := t1.Home(tenant, key), t2.Home(tenant, key)
			require.NotEqual(t, h1, h2)

			_, err := multiregion.AdvanceTopology(ctx, w.regions[0], t1)
			require.NoError(t, err)
			_, err = multiregion.AdvanceTopology(ctx, w.regions[0], t2) // prepare
			require.NoError(t, err)
			oldRouter := w.router(homeMode, refresh(time.Hour))
			_, err = oldRouter.CheckTopology(ctx)
			require.NoError(t, err)
			_, err = multiregion.AdvanceTopology(ctx, w.regions[0], t2) // switch
			require.NoError(t, err)
			newRouter := w.router(homeMode, pins(p), refresh(time.Hour))
			_, err = newRouter.CheckTopology(ctx)
			require.NoError(t, err)

			old, next := newService(t, oldRouter), newService(t, newRouter)
			first, second := old, next
			if firstAtNew {
				first, second = next, old
			}
			a := first.post(key, `{"amount":5}`)
			require.Equal(t, http.StatusCreated, a.status, a.body)
			b := second.post(key, `{"amount":5}`)
			assert.Equal(t, http.StatusCreated, b.status, b.body)
			assert.Equal(t, a.body, b.body, "the retry is answered with the first execution's response")
			assert.Equal(t, int64(1), old.executed.Load()+next.executed.Load(), "executed once")
			var effects []string
			for _, r := range three {
				effects = append(effects, w.effects(r, key)...)
			}
			assert.Len(t, effects, 1)
		})
	}
}

// TestProcessWithoutTheAddedRegionRefusesItsKeysDuringTheChange: a
// process deployed before a region was added has no client for it; during
// the change it answers 503 for the keys homed there under the new
// topology (another process serves them), and serves the others.
func TestProcessWithoutTheAddedRegionRefusesItsKeysDuringTheChange(t *testing.T) {
	w := newWorld(t, time.Hour, false)
	ctx := context.Background()
	t1 := multiregion.Topology{Regions: three[:2]}
	t2 := multiregion.Topology{Regions: three}
	_, err := multiregion.AdvanceTopology(ctx, w.regions[0], t1)
	require.NoError(t, err)
	_, err = multiregion.AdvanceTopology(ctx, w.regions[0], t2) // prepare
	require.NoError(t, err)

	oldRouter, err := multiregion.New(w.regions[:2], homeMode)
	require.NoError(t, err)
	old := newService(t, oldRouter)
	moved, stays := keyHomedIn(t, three[2]), ""
	for _, r := range three[:2] {
		if k := keyHomedIn(t, r); t1.Home(tenant, k) == r {
			stays = k
			break
		}
	}
	require.NotEmpty(t, stays)

	got := old.post(moved, `{"amount":1}`)
	assert.Equal(t, http.StatusServiceUnavailable, got.status, got.body)
	assert.Zero(t, old.executed.Load())
	got = old.post(stays, `{"amount":1}`)
	assert.Equal(t, http.StatusCreated, got.status, got.body)

	next := newService(t, w.router(homeMode))
	got = next.post(moved, `{"amount":1}`)
	assert.Equal(t, http.StatusCreated, got.status, got.body)
}

// TestStoreDoesNotWriteAFirstTopologyRecordWhileAnotherRegionHoldsOne: a
// record written through one region and not yet replicated is found by a
// store whose own region holds none; that store writes nothing (its first
// record would replicate over the newer one, last writer wins).
func TestStoreDoesNotWriteAFirstTopologyRecordWhileAnotherRegionHoldsOne(t *testing.T) {
	w := newWorld(t, time.Hour, false) // nothing replicates during the test
	ctx := context.Background()
	t1 := multiregion.Topology{Regions: three}
	t2 := multiregion.Topology{Regions: three, Pins: map[string]string{tenant: three[2]}}
	_, err := multiregion.AdvanceTopology(ctx, w.regions[0], t1)
	require.NoError(t, err)
	_, err = multiregion.AdvanceTopology(ctx, w.regions[0], t2)
	require.NoError(t, err)

	rec, err := w.router(homeMode, func(o *multiregion.Options) { o.Local = three[1] }).CheckTopology(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), rec.Version, "the newest record, read where it was written")
	assert.True(t, rec.Changing())
	_, err = multiregion.LoadTopology(ctx, w.regions[1])
	assert.ErrorIs(t, err, multiregion.ErrNoTopology, "nothing written in the store's own region")
}

// hangingTopologyReads is a region's client whose reads of the topology
// record never answer: a partitioned region. It records the deadline of
// each read it held.
type hangingTopologyReads struct {
	*dynamodb.Client
	deadlines chan time.Time
}

func (h *hangingTopologyReads) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	deadline, _ := ctx.Deadline()
	<-ctx.Done()
	h.deadlines <- deadline
	return nil, ctx.Err()
}

func TestTopologyRefreshIsBoundedWhenARegionDoesNotAnswer(t *testing.T) {
	w := newWorld(t, time.Hour, false) // the record stays in the region that wrote it
	ctx := context.Background()
	written, err := multiregion.AdvanceTopology(ctx, w.regions[0], multiregion.Topology{Regions: three})
	require.NoError(t, err)

	hang := &hangingTopologyReads{Client: w.regions[2].Client.(*dynamodb.Client), deadlines: make(chan time.Time, 1)}
	w.regions[2].Client = hang
	router := w.router(homeMode, func(o *multiregion.Options) { o.TopologyReadTimeout = 50 * time.Millisecond })

	outer, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	outerDeadline, _ := outer.Deadline()
	rec, err := router.CheckTopology(outer)
	require.NoError(t, err, "the record is read from the regions that answer")
	assert.Equal(t, written.Version, rec.Version)
	held := <-hang.deadlines
	require.False(t, held.IsZero(), "the silent region's read has a deadline of its own")
	assert.True(t, held.Before(outerDeadline.Add(-50*time.Second)),
		"it is bounded by TopologyReadTimeout, not by the request's deadline (held until %v, request until %v)", held, outerDeadline)
}

// writerOtherThan returns a region of w other than the named ones, to
// write the topology record through while they are cut off.
func writerOtherThan(t *testing.T, w *world, names ...string) multiregion.Region {
	t.Helper()
	for _, r := range w.regions {
		if !slices.Contains(names, r.Name) {
			return r
		}
	}
	t.Fatalf("every region is excluded")
	return multiregion.Region{}
}

// TestHomeClaimDuringATopologyChangeRunsTheFailoverFence: a key executes
// in its failover region while its home is dark; the home is back and a
// change that does not move the key (a pin of another scope) is in
// progress. The retry at home reads the failover record, as a claim does
// between changes: it is promoted and replayed, not executed again.
func TestHomeClaimDuringATopologyChangeRunsTheFailoverFence(t *testing.T) {
	w := newWorld(t, time.Hour, false) // the failover record never replicates
	ctx := context.Background()
	home := "eu-west-1"
	key := keyHomedIn(t, home)
	writer := writerOtherThan(t, w, home)
	t1 := multiregion.Topology{Regions: three}
	_, err := multiregion.AdvanceTopology(ctx, writer, t1)
	require.NoError(t, err)

	router := w.router(failoverMode, refresh(time.Second))
	svc := newService(t, router)
	_, err = router.CheckTopology(ctx)
	require.NoError(t, err)

	w.cluster.CutOff(home)
	first := svc.post(key, `{"amount":5}`)
	require.Equal(t, http.StatusCreated, first.status, first.body)
	require.Equal(t, int64(1), w.counters.Count(multiregion.EventFailover))
	w.cluster.Restore(home)

	t2 := multiregion.Topology{Regions: three, Pins: map[string]string{"some-other-tenant": three[0]}}
	require.Equal(t, t1.Home(tenant, key), t2.Home(tenant, key))
	_, err = multiregion.AdvanceTopology(ctx, writer, t2) // prepare
	require.NoError(t, err)
	w.advance(2 * time.Second) // past TopologyRefresh
	rec, err := router.CheckTopology(ctx)
	require.NoError(t, err)
	require.True(t, rec.Changing())

	retry := svc.post(key, `{"amount":5}`)
	assert.Equal(t, http.StatusCreated, retry.status, retry.body)
	assert.Equal(t, "true", retry.header.Get(handler.ReplayedHeader))
	assert.Equal(t, first.body, retry.body)
	assert.Equal(t, int64(1), svc.executed.Load(), "no second execution in the home region")
	assert.Equal(t, int64(1), w.counters.Count(multiregion.EventPromoted))
	for _, r := range three {
		assert.LessOrEqual(t, len(w.effects(r, key)), 1, "region %s", r)
	}

	// As between changes, a scope that could name a failover record is refused.
	_, err = router.Claim(ctx, idemkey.Request{Scope: tenant + "\x00failover@" + home, Key: key, Fingerprint: fp("x")})
	assert.ErrorIs(t, err, dynamostore.ErrInvalidRequest)
}

// TestHomeClaimAfterASwitchFencesAFailoverExecutionInTheNewHome: a key
// executes in its failover region h2 while its home h1 is dark; then a pin
// moves the key's home to h2. After the switch the claim goes to h2's home
// record, and the consulted home h1 holds nothing: the failover record h2
// wrote under the old topology, beside the new home record, is what the
// fence finds. It is promoted and replayed.
func TestHomeClaimAfterASwitchFencesAFailoverExecutionInTheNewHome(t *testing.T) {
	w := newWorld(t, time.Hour, false)
	ctx := context.Background()
	key := keyHomedIn(t, three[0])
	order := multiregion.HomeOrder(tenant, key, three)
	h1, h2 := order[0], order[1]
	writer := writerOtherThan(t, w, h1)
	t1 := multiregion.Topology{Regions: three}
	p := map[string]string{tenant: h2}
	t2 := multiregion.Topology{Regions: three, Pins: p}
	_, err := multiregion.AdvanceTopology(ctx, writer, t1)
	require.NoError(t, err)

	old := newService(t, w.router(failoverMode))
	w.cluster.CutOff(h1)
	first := old.post(key, `{"amount":8}`)
	require.Equal(t, http.StatusCreated, first.status, first.body)
	require.Equal(t, int64(1), w.counters.Count(multiregion.EventFailover))
	_, err = w.store(h2).Get(ctx, tenant+"\x00failover@"+h2, key)
	require.NoError(t, err, "the failover execution ran in h2")
	w.cluster.Restore(h1)

	_, err = multiregion.AdvanceTopology(ctx, writer, t2) // prepare
	require.NoError(t, err)
	rec, err := multiregion.AdvanceTopology(ctx, writer, t2) // switch
	require.NoError(t, err)
	require.True(t, rec.Active.Equal(t2))
	newRouter := w.router(failoverMode, pins(p))
	_, err = newRouter.CheckTopology(ctx)
	require.NoError(t, err)

	next := newService(t, newRouter)
	retry := next.post(key, `{"amount":8}`)
	assert.Equal(t, http.StatusCreated, retry.status, retry.body)
	assert.Equal(t, "true", retry.header.Get(handler.ReplayedHeader))
	assert.Equal(t, first.body, retry.body)
	assert.Equal(t, int64(1), old.executed.Load()+next.executed.Load(), "executed once")
	assert.Equal(t, int64(1), w.counters.Count(multiregion.EventPromoted))
	raw, err := w.store(h2).Get(ctx, tenant, key)
	require.NoError(t, err)
	assert.NotEmpty(t, raw.Response.Header.Get(multiregion.PromotedHeader), "h2's home record is the promoted failover execution")
}

// TestHomeClaimFencesAFailoverRecordOfARegionBeingRemoved: a key executes
// in its failover region R while its home is dark, and R's failover record
// replicates home. R is then being removed: after the switch, processes
// list only the remaining regions and have no client for R. Their claim at
// home decides from the home's replica of R's failover record: a replay.
func TestHomeClaimFencesAFailoverRecordOfARegionBeingRemoved(t *testing.T) {
	w := newWorld(t, time.Second, false)
	ctx := context.Background()
	removed := three[2]
	key, home := keyFailingOverTo(t, removed)
	writer := writerOtherThan(t, w, home, removed)
	t1 := multiregion.Topology{Regions: three}
	t2 := multiregion.Topology{Regions: three[:2]}
	require.Equal(t, home, t2.Home(tenant, key))
	_, err := multiregion.AdvanceTopology(ctx, writer, t1)
	require.NoError(t, err)

	old := newService(t, w.router(failoverMode))
	w.cluster.CutOff(home)
	first := old.post(key, `{"amount":2}`)
	require.Equal(t, http.StatusCreated, first.status, first.body)
	require.Equal(t, int64(1), w.counters.Count(multiregion.EventFailover))
	w.cluster.Restore(home)
	w.advance(2 * time.Second) // R's failover record reaches the home

	_, err = multiregion.AdvanceTopology(ctx, writer, t2) // prepare
	require.NoError(t, err)
	_, err = multiregion.AdvanceTopology(ctx, writer, t2) // switch
	require.NoError(t, err)
	newRouter, err := multiregion.New(w.regions[:2], failoverMode, func(o *multiregion.Options) { o.Observer = w.counters.Observe })
	require.NoError(t, err)
	_, err = newRouter.CheckTopology(ctx)
	require.NoError(t, err)

	next := newService(t, newRouter)
	retry := next.post(key, `{"amount":2}`)
	assert.Equal(t, http.StatusCreated, retry.status, retry.body)
	assert.Equal(t, "true", retry.header.Get(handler.ReplayedHeader))
	assert.Equal(t, first.body, retry.body)
	assert.Equal(t, int64(1), old.executed.Load()+next.executed.Load(), "executed once")
	assert.Equal(t, int64(1), w.counters.Count(multiregion.EventPromoted))
	assert.Zero(t, w.counters.Count(multiregion.EventFenceCheckSkipped), "a region the process does not list is not reported as unreadable")
}
