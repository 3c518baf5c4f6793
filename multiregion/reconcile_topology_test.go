package multiregion_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/multiregion"
)

// A key executes in its failover region R while its home A is dark, and
// again in A while R is unreachable (within R's lag: the fence cannot read
// R's record). R is then removed from the topology. Reconcile in a process
// that lists only the remaining regions still finds R's failover record,
// in the home's replica, and reports the two executions.
func TestReconcileReportsATwoRegionExecutionOfARemovedRegion(t *testing.T) {
	const lag = time.Second
	w := newWorld(t, lag, false)
	ctx := context.Background()
	removed := three[2]
	key, home := keyFailingOverTo(t, removed)
	writer := writerOtherThan(t, w, home, removed)
	_, err := multiregion.AdvanceTopology(ctx, writer, multiregion.Topology{Regions: three})
	require.NoError(t, err)

	old := newService(t, w.router(failoverMode))
	w.cluster.CutOff(home)
	require.Equal(t, http.StatusCreated, old.post(key, `{"amount":3}`).status)
	w.cluster.CutOff(removed) // before its failover record replicates
	w.cluster.Restore(home)
	require.Equal(t, http.StatusCreated, old.post(key, `{"amount":3}`).status)
	require.Equal(t, int64(2), old.executed.Load(), "the duplicate of R's lag window")
	w.cluster.Restore(removed)
	w.advance(2 * lag)

	w.advanceTopology(writer, multiregion.Topology{Regions: three[:2]}, 2*lag)
	remaining, err := multiregion.New(w.regions[:2], failoverMode)
	require.NoError(t, err)
	rep, err := remaining.Reconcile(ctx)
	require.NoError(t, err)
	require.Len(t, rep.TwoRegion, 1, "R's execution is found in the home's replica")
	assert.Equal(t, home, rep.TwoRegion[0].Home)
	assert.Equal(t, []string{home, removed}, rep.TwoRegion[0].Regions())
	assert.Equal(t, 1, rep.FailoverRecords)
	assert.Empty(t, rep.Pending)
}

// A key homed in X executes in its failover region Y while X is dark; a
// pin then moves its home to Y. During the change the key has two homes:
// Reconcile, in a process of either topology, leaves it Pending instead of
// promoting it into the home of its own configuration. Once the change is
// finished it is promoted into Y, its home under the record.
func TestReconcileFollowsTheTopologyRecordsHomeOfAKey(t *testing.T) {
	const lag = time.Second
	w := newWorld(t, lag, false)
	ctx := context.Background()
	rh := w.rehoming()
	x, y, key, writer, p, t2 := rh.x, rh.y, rh.key, rh.writer, rh.pins, rh.t2
	var err error

	svc := newService(t, w.router(failoverMode))
	w.cluster.CutOff(x)
	require.Equal(t, http.StatusCreated, svc.post(key, `{"amount":5}`).status)
	require.Equal(t, int64(1), w.counters.Count(multiregion.EventFailover))
	w.cluster.Restore(x)
	w.advance(2 * lag)

	for step, name := range []string{"prepare", "switch"} {
		_, err = multiregion.AdvanceTopology(ctx, writer, t2)
		require.NoError(t, err)
		w.advance(2 * lag)
		for _, cfg := range []func(*multiregion.Options){func(*multiregion.Options) {}, pins(p)} {
			rep, err := w.router(failoverMode, cfg).Reconcile(ctx)
			require.NoError(t, err, name)
			assert.Zero(t, rep.Promoted, "%s (step %d): nothing promoted while the key has two homes", name, step)
			assert.Equal(t, []string{strconv.Quote(tenant) + "/" + strconv.Quote(key)}, rep.Pending, name)
		}
	}
	_, err = multiregion.AdvanceTopology(ctx, writer, t2) // finish
	require.NoError(t, err)
	w.advance(2 * lag)
	rep, err := w.router(failoverMode, pins(p)).Reconcile(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Promoted)
	assert.Empty(t, rep.Pending)
	home, err := w.store(y).Get(ctx, tenant, key)
	require.NoError(t, err, "promoted into Y, the key's home under the record")
	assert.NotEmpty(t, home.Response.Header.Get(multiregion.PromotedHeader))
	assert.Equal(t, y, home.Region)
}
