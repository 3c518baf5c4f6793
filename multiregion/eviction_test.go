package multiregion_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/multiregion"
)

// On an MREC table a TTL deletion replicates and can win over a newer write
// of the key in its home region, so HomeRegion mode refuses TTL eviction,
// the default, with and without failover.
func TestHomeRegionRefusesTTLEviction(t *testing.T) {
	for _, failover := range []bool{false, true} {
		_, err := multiregion.New(offline(three...), func(o *multiregion.Options) {
			o.Mode = multiregion.HomeRegion
			o.Failover = failover
		})
		require.Error(t, err, "failover %v", failover)
		assert.ErrorIs(t, err, multiregion.ErrTTLReplicated)
		assert.ErrorIs(t, err, multiregion.ErrInvalidConfig)
		var ce *multiregion.ConfigError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "Eviction", ce.Field)
		assert.Contains(t, ce.Reason, "SweepOptions.Region")

		_, err = multiregion.New(offline(three...), func(o *multiregion.Options) {
			o.Mode = multiregion.HomeRegion
			o.Failover = failover
			o.Eviction = multiregion.EvictBySweeper
		})
		assert.NoError(t, err, "a sweeper per region is accepted")
	}
	_, err := multiregion.New(offline("us-east-1"))
	assert.NoError(t, err, "a single-region table keeps TTL")
}
