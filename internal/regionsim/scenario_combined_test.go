package regionsim_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/internal/regionsim"
)

// The combined scenarios over seeds 1 to 3, 10 episodes each
// (scripts/multiregion-sim.sh runs 20 per seed): HomeRegion never
// duplicates, with regional sweepers, topology changes, a removed region
// and clocks skewed within the bound; failover duplicates only within the
// lag window, every one reported; a skew beyond the bound duplicates.
func TestCombinedScenariosKeepTheGuaranteeWithinTheirBounds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	beyond := 0
	for seed := uint64(1); seed <= 3; seed++ {
		sc := regionsim.Scenario{Seed: seed, Ops: 100}
		for _, m := range regionsim.CombinedModes {
			res, err := regionsim.Run(ctx, m, sc)
			require.NoError(t, err, "%s seed %d", m, seed)
			t.Log(res.Line())
			assert.Equal(t, 10, res.LogicalOps, "%s seed %d", m, seed)
			switch m {
			case regionsim.HomeFailoverChain:
				assert.Equal(t, res.Duplicates, res.DuplicatesInLagWindow, "seed %d: only within the lag window", seed)
				assert.Equal(t, res.DuplicateKeys, res.FenceKeys, "seed %d: every one reported, nothing else", seed)
			case regionsim.HomeSkewedClocksBeyond:
				beyond += res.Duplicates
			default:
				assert.Zero(t, res.Duplicates, "%s seed %d", m, seed)
			}
			if m == regionsim.HomeSkewedClocks {
				assert.Equal(t, res.LogicalOps, res.Executions, "seed %d: within the bound no key runs twice", seed)
			}
			assert.Zero(t, res.Leftover, "%s seed %d: the removed region's records are swept", m, seed)
		}
	}
	assert.Positive(t, beyond, "a skew beyond multiregion.MaxClockSkew duplicates")
}
