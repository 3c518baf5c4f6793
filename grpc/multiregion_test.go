package grpc_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	idemgrpc "github.com/idemkey/idemkey/grpc"
	"github.com/idemkey/idemkey/grpc/internal/testpb"
	"github.com/idemkey/idemkey/internal/regionsim"
	"github.com/idemkey/idemkey/multiregion"
)

// Two servers in two regions, each with its own router over a three-region
// global table in HomeRegion mode: a retry that lands in the other region,
// before any replication, is a replay.
func TestOverTheMultiRegionStoreARetryInAnotherRegionIsReplayed(t *testing.T) {
	ctx := context.Background()
	cluster, err := regionsim.Start(ctx, func(o *regionsim.Options) { o.Lag = time.Hour })
	require.NoError(t, err)
	t.Cleanup(func() { _ = cluster.Close() })
	require.NoError(t, cluster.CreateGlobalTable(ctx, "keys", dynamostore.PartitionKey))
	require.NoError(t, cluster.CreateGlobalTable(ctx, "effects", "id"))
	router := func() *multiregion.Store {
		var regions []multiregion.Region
		for _, r := range cluster.Regions() {
			regions = append(regions, multiregion.NewRegion(r.Name, r.Client, "keys"))
		}
		s, err := multiregion.New(regions, func(o *multiregion.Options) {
			o.Mode = multiregion.HomeRegion
			o.Eviction = multiregion.EvictBySweeper
		})
		require.NoError(t, err)
		return s
	}
	east := newHarness(t, func(s *setup) { s.store = func(*harness) idemkey.Store { return router() } })
	west := newHarness(t, func(s *setup) { s.store = func(*harness) idemkey.Store { return router() } })
	east.svc.effects, west.svc.effects = "effects", "effects"

	req := &testpb.ChargeRequest{Account: "acc", Cents: 4}
	first := east.charge(east.dial("alice"), "mr-1", req)
	require.NoError(t, first.err)
	again := west.charge(west.dial("alice"), "mr-1", req)
	require.NoError(t, again.err)
	assert.Equal(t, first.reply.Id, again.reply.Id)
	assert.Equal(t, []string{"true"}, again.header.Get(idemgrpc.ReplayedMetadata))
	assert.Zero(t, west.svc.executed.Load(), "the other region did not execute")

	reused := west.charge(west.dial("alice"), "mr-1", &testpb.ChargeRequest{Account: "acc", Cents: 5})
	assert.Equal(t, "KEY_REUSED", reused.reason())

	home := router().Order("alice", "mr-1")[0]
	items, err := cluster.Items(ctx, home, "effects")
	require.NoError(t, err)
	assert.Len(t, items, 1, "one effect, in the key's home region")
}
