package regionsim_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/regionsim"
)

// Seed 1 of each scripted fence scenario (scripts/multiregion-sim.sh 1
// prints the same lines): on the previous main each episode duplicated
// its key; now none does.
func TestZombieFailoverExecutionCannotCommitAfterTheHomeExecutedOnSeed1(t *testing.T) {
	res := runFence(t, regionsim.HomeFailoverZombie, 1)
	assert.Greater(t, res.Executions, res.LogicalOps, "the stalled failover requests did run their handlers")
	assert.Zero(t, res.Duplicates, "their commits were fenced off: %v", res.DuplicateKeys)
	assert.Empty(t, res.FenceKeys)
}

func TestHomeRetryDecidesFromItsReplicaWhenTheFailoverRegionIsDarkOnSeed1(t *testing.T) {
	res := runFence(t, regionsim.HomeFailoverReplica, 1)
	assert.Equal(t, res.LogicalOps, res.Failovers, "each key executed in a failover region")
	assert.Equal(t, res.LogicalOps, res.Executions, "and never again")
	assert.Zero(t, res.Duplicates, "%v", res.DuplicateKeys)
}

func TestReplicatedTTLDeleteErasesNoLiveRecordOnSeed1(t *testing.T) {
	res := runFence(t, regionsim.HomeTTLReplicated, 1)
	assert.Equal(t, 40, res.LogicalOps, "20 keys, each used by two operations")
	assert.Zero(t, res.Duplicates, "%v", res.DuplicateKeys)
	assert.Zero(t, res.Unavailable)
}

func runFence(t *testing.T, mode regionsim.Mode, seed uint64) *regionsim.Result {
	t.Helper()
	res, err := regionsim.Run(context.Background(), mode, regionsim.Scenario{Seed: seed})
	require.NoError(t, err)
	t.Log(res.Line())
	return res
}

// Over seeds 1 to 5 (scripts/multiregion-sim.sh runs 1 to 20): HomeRegion
// shows no duplicate in any scenario, and Failover duplicates only
// operations first executed in the outage region within the lag before the
// outage, each one reported by the fence. 20 operations per seed (the
// scripted scenarios: two episodes).
func TestSeeds1To5HomeRegionNeverDuplicatesAndFailoverOnlyInTheLagWindow(t *testing.T) {
	t.Parallel()
	modes := []regionsim.Mode{regionsim.Home, regionsim.HomeFailover,
		regionsim.HomeFailoverZombie, regionsim.HomeFailoverReplica, regionsim.HomeTTLReplicated}
	totals := map[regionsim.Mode]*regionsim.Result{}
	for _, m := range modes {
		totals[m] = &regionsim.Result{Mode: m}
	}
	var mu sync.Mutex
	t.Run("seeds", func(t *testing.T) {
		for seed := uint64(1); seed <= 5; seed++ {
			t.Run(fmt.Sprint(seed), func(t *testing.T) {
				for _, m := range modes {
					res, err := regionsim.Run(context.Background(), m, regionsim.Scenario{Seed: seed, Ops: 20})
					require.NoError(t, err, "mode %s", m)
					if m == regionsim.HomeFailover {
						assert.Equal(t, res.Duplicates, res.DuplicatesInLagWindow, "a duplicate outside the lag window")
						assert.Equal(t, res.DuplicateKeys, res.FenceKeys, "the fence reports exactly the duplicates")
					} else {
						assert.Zero(t, res.Duplicates, "mode %s: %v", m, res.DuplicateKeys)
					}
					mu.Lock()
					tot := totals[m]
					tot.Requests += res.Requests
					tot.LogicalOps += res.LogicalOps
					tot.Duplicates += res.Duplicates
					tot.Unavailable += res.Unavailable
					tot.DuplicatesInLagWindow += res.DuplicatesInLagWindow
					tot.FenceReported += res.FenceReported
					mu.Unlock()
				}
			})
		}
	})
	for _, m := range modes {
		tot := totals[m]
		ddbtest.Report(t, tot.Line()+fmt.Sprintf(" in_lag_window=%d fence_reported=%d seeds=1-5", tot.DuplicatesInLagWindow, tot.FenceReported))
	}
}
