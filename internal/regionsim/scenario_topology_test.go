package regionsim_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/internal/regionsim"
)

// TestRollingDeployAddingARegionExecutesOnceInHomeRegion runs the rolling
// deploy that adds eu-central-1 under load (old and new processes serving
// at once, retries reaching either, 2s lag) with seed 1: the same run as
// scripts/multiregion-sim.sh 1 -modes home-topology-change.
func TestRollingDeployAddingARegionExecutesOnceInHomeRegion(t *testing.T) {
	res, err := regionsim.Run(context.Background(), regionsim.HomeTopologyChange, regionsim.Scenario{Seed: 1})
	require.NoError(t, err)
	t.Log(res.Line())
	assert.Equal(t, 200, res.LogicalOps)
	assert.Zero(t, res.Duplicates, "keys re-homed to the new region execute once: %v", res.DuplicateKeys)
	assert.Equal(t, 200, res.Completed, "every operation got its answer")
	assert.Greater(t, res.Requests, res.LogicalOps, "clients did retry")
}

// Seeds 2 to 4 of the rolling deploy; scripts/multiregion-sim.sh runs
// seeds 1 to 20 for the figure of multiregion/README.md.
func TestRollingDeployAddingARegionOverSeeds2To4HasNoDuplicates(t *testing.T) {
	t.Parallel()
	for seed := uint64(2); seed <= 4; seed++ {
		res, err := regionsim.Run(context.Background(), regionsim.HomeTopologyChange, regionsim.Scenario{Seed: seed})
		require.NoError(t, err, seed)
		t.Logf("seed %d: %s", seed, res.Line())
		assert.Zero(t, res.Duplicates, "seed %d: %v", seed, res.DuplicateKeys)
	}
}
