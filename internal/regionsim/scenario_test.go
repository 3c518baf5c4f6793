package regionsim_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/internal/regionsim"
)

// TestThreeFactsOnSeed3 runs the default scenario (200 operations over
// 10s, 2s lag, 40% of answers lost, retries into another region after
// 100ms to 1.5s, us-east-1 dark from 4s to 7s) with seed 3 in every mode,
// and checks the facts the design claims. The same run is
// scripts/multiregion-sim.sh 3.
func TestThreeFactsOnSeed3(t *testing.T) {
	ctx := context.Background()
	sc := regionsim.Scenario{Seed: 3}
	results := map[regionsim.Mode]*regionsim.Result{}
	for _, m := range regionsim.Modes {
		res, err := regionsim.Run(ctx, m, sc)
		require.NoError(t, err, m)
		t.Log(res.Line())
		results[m] = res
		assert.Equal(t, 200, res.LogicalOps)
	}

	naive := results[regionsim.Naive]
	assert.Positive(t, naive.Duplicates, "naive use duplicates under cross-region retries with lag")

	home := results[regionsim.Home]
	assert.Zero(t, home.Duplicates, "home region: no duplicate, outage included")
	assert.Positive(t, home.Unavailable, "and it pays with unavailability during the outage")

	fo := results[regionsim.HomeFailover]
	assert.Positive(t, fo.Failovers)
	assert.Positive(t, fo.Duplicates, "failover duplicates keys executed within the lag before the outage")
	assert.Equal(t, fo.DuplicateKeys, fo.FenceKeys, "the fence reports exactly the duplicates")
	assert.Equal(t, fo.Duplicates, fo.FenceReported)
	assert.Equal(t, fo.Duplicates, fo.DuplicatesInLagWindow, "every duplicate's first execution was within the lag before the outage")
	assert.Zero(t, fo.Unavailable, "failover keeps the keys available")
	assert.Less(t, fo.Duplicates, naive.Duplicates)

	strong := results[regionsim.Strong]
	assert.Zero(t, strong.Duplicates)
	assert.Zero(t, strong.Unavailable, "MRSC serves from another region during the outage")
}

func TestNoLagMeansNoNaiveDuplicates(t *testing.T) {
	// The naive duplicates come from replication lag, not from the
	// simulator: without lag (and outage) a retry in another region finds
	// the record.
	res, err := regionsim.Run(context.Background(), regionsim.Naive, regionsim.Scenario{Seed: 1, Ops: 100, Lag: -1, NoOutage: true})
	require.NoError(t, err)
	assert.Zero(t, res.Duplicates)
	assert.Zero(t, res.Unavailable)
	assert.Greater(t, res.Requests, res.LogicalOps, "clients did retry")
}
