package multiregion_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/multiregion"
)

// opLog records the name of every operation a client sends.
func opLog(ops *[]string) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("oplog", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				*ops = append(*ops, middleware.GetOperationName(ctx))
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
		})
	}
}

// A table created without MultiRegionConsistency (on the emulator, or on
// moto with AWS_ENDPOINT_URL_DYNAMODB, whose DescribeTable leaves the field
// out, as DynamoDB does for a single-Region or MREC table) is not MRSC.
// Strong mode refuses it on the first call, with one DescribeTable and
// nothing read or written, and every later call without asking again.
func TestStrongRefusesATableThatIsNotMRSC(t *testing.T) {
	ctx := context.Background()
	ep, err := localstack.Start(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ep.Close() })
	table := fmt.Sprintf("not-mrsc-%d", time.Now().UnixNano())

	var ops []string
	var regions []multiregion.Region
	for _, name := range []string{"us-east-1", "us-east-2", "us-west-2"} {
		inRegion := func(o *dynamodb.Options) { o.Region = name }
		// A table in each region (moto keeps regions apart; the emulator
		// has one table for all).
		require.NoError(t, dynamostore.EnsureTableWithoutTTL(ctx, ep.NewClient(inRegion), table, time.Minute))
		regions = append(regions, multiregion.NewRegion(name, ep.NewClient(inRegion, opLog(&ops)), table))
	}
	s, err := multiregion.New(regions, strongMode("us-east-2"))
	require.NoError(t, err, "New makes no call")
	assert.Empty(t, ops)

	_, err = s.Claim(ctx, idemkey.Request{Scope: tenant, Key: "k", Method: "POST", Path: "/p", Fingerprint: fp("a")})
	require.Error(t, err)
	assert.ErrorIs(t, err, multiregion.ErrNotStrongTable)
	assert.ErrorIs(t, err, multiregion.ErrInvalidConfig)
	var ce *multiregion.ConfigError
	require.True(t, errors.As(err, &ce))
	assert.Contains(t, ce.Reason, "MRSC global table", "the remedy")
	assert.Contains(t, ce.Reason, "HomeRegion mode", "the alternative")
	var se *dynamostore.StoreError
	assert.False(t, errors.As(err, &se), "permanent: not answered as an unavailable store")

	_, err = s.Get(ctx, tenant, "k")
	assert.ErrorIs(t, err, multiregion.ErrNotStrongTable)
	assert.Equal(t, []string{"DescribeTable"}, ops, "one DescribeTable, in Local's region first; no read or write of a key")
}

// The check waits for a region that answers: with Local unreachable it
// asks the next region, and with none reachable the call fails as
// unavailable and the next call checks again. The shared cluster describes
// its table as MRSC, as DynamoDB describes one.
func TestStrongTableCheckSkipsUnreachableRegions(t *testing.T) {
	w := newWorld(t, 0, true)
	ctx := context.Background()
	s, err := multiregion.New(w.regions, strongMode("us-east-1"))
	require.NoError(t, err)
	for _, r := range three {
		w.cluster.CutOff(r)
	}
	_, err = s.Get(ctx, tenant, "k")
	var re *multiregion.RegionError
	require.True(t, errors.As(err, &re), "%v", err)
	assert.Equal(t, []string{"us-east-1", "eu-west-1", "ap-southeast-2"}, re.Regions)

	w.cluster.Restore("ap-southeast-2")
	c, err := s.Claim(ctx, idemkey.Request{Scope: tenant, Key: "k", Method: "POST", Path: "/p", Fingerprint: fp("a")})
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Acquired, c.Result)
}
