package multiregion_test

import (
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/multiregion"
)

// The us-east-1 and eu-west-1 clients swapped: the names and pins match the
// topology record, so only the clients' own region can tell. New refuses
// the swap, in both multi-region modes, naming both regions and making no
// call.
func TestNewRefusesSwappedRegionClients(t *testing.T) {
	var calls []string
	usEast1 := dynamodb.New(dynamodb.Options{Region: "us-east-1"}, opLog(&calls))
	euWest1 := dynamodb.New(dynamodb.Options{Region: "eu-west-1"}, opLog(&calls))
	swapped := []multiregion.Region{
		multiregion.NewRegion("us-east-1", euWest1, "keys"),
		multiregion.NewRegion("eu-west-1", usEast1, "keys"),
	}
	for _, mode := range []func(*multiregion.Options){homeMode, strongMode("us-east-1")} {
		_, err := multiregion.New(swapped, mode)
		require.Error(t, err)
		assert.ErrorIs(t, err, multiregion.ErrInvalidConfig)
		var ce *multiregion.ConfigError
		require.True(t, errors.As(err, &ce))
		assert.Equal(t, "regions[0]", ce.Field)
		assert.Contains(t, ce.Reason, `region "us-east-1"`)
		assert.Contains(t, ce.Reason, `AWS region "eu-west-1"`)
	}
	assert.Empty(t, calls, "the refusal is made without I/O")

	// Each client in its own region is accepted.
	_, err := multiregion.New([]multiregion.Region{
		multiregion.NewRegion("us-east-1", usEast1, "keys"),
		multiregion.NewRegion("eu-west-1", euWest1, "keys"),
	}, homeMode)
	require.NoError(t, err)
	assert.Empty(t, calls)
}

// A region built by hand can mix clients: the store's, Client and Scanner
// are each checked.
func TestNewRefusesARegionWhoseStoreClientOrScannerIsAnotherRegions(t *testing.T) {
	usEast1 := dynamodb.New(dynamodb.Options{Region: "us-east-1"})
	euWest1 := dynamodb.New(dynamodb.Options{Region: "eu-west-1"})
	own := func() multiregion.Region {
		return multiregion.NewRegion("us-east-1", usEast1, "keys")
	}
	cases := map[string]func(r *multiregion.Region){
		"store's client": func(r *multiregion.Region) {
			r.Store = dynamostore.New(euWest1, "keys", func(o *dynamostore.Options) { o.Region = "us-east-1" })
		},
		"Client":  func(r *multiregion.Region) { r.Client = euWest1 },
		"Scanner": func(r *multiregion.Region) { r.Scanner = euWest1 },
	}
	for role, swap := range cases {
		r := own()
		swap(&r)
		_, err := multiregion.New([]multiregion.Region{r, multiregion.NewRegion("eu-west-1", euWest1, "keys")}, homeMode)
		assert.ErrorIs(t, err, multiregion.ErrInvalidConfig, role)
		assert.ErrorContains(t, err, "the "+role+` of region "us-east-1" is configured for AWS region "eu-west-1"`, role)
	}
}

// unreported is a client wrapper without Options(): its region is unknown.
type unreported struct{ multiregion.RegionClient }

// A client that does not say its region cannot be checked, so it is refused
// in the multi-region modes; a single region has no other region to swap
// it with.
func TestNewRefusesAClientThatDoesNotReportItsRegion(t *testing.T) {
	usEast1 := dynamodb.New(dynamodb.Options{Region: "us-east-1"})
	euWest1 := dynamodb.New(dynamodb.Options{Region: "eu-west-1"})
	wrapped := multiregion.NewRegion("us-east-1", unreported{usEast1}, "keys")
	_, err := multiregion.New([]multiregion.Region{wrapped, multiregion.NewRegion("eu-west-1", euWest1, "keys")}, homeMode)
	assert.ErrorIs(t, err, multiregion.ErrInvalidConfig)
	assert.ErrorContains(t, err, "does not report its AWS region")

	_, err = multiregion.New([]multiregion.Region{wrapped})
	assert.NoError(t, err)
}

// A lease shorter than MinLease leaves a request no time under the clock
// skew the protocol assumes: refused in the multi-region modes, naming the
// bound.
func TestNewRefusesALeaseShorterThanTheClockSkewMargin(t *testing.T) {
	regions := func(lease time.Duration) []multiregion.Region {
		var out []multiregion.Region
		for _, n := range three {
			out = append(out, multiregion.NewRegion(n, dynamodb.New(dynamodb.Options{Region: n}), "keys",
				func(o *dynamostore.Options) { o.Lease = lease }))
		}
		return out
	}
	for _, mode := range []func(*multiregion.Options){homeMode, strongMode("us-east-1")} {
		_, err := multiregion.New(regions(multiregion.MinLease-time.Millisecond), mode)
		assert.ErrorIs(t, err, multiregion.ErrInvalidConfig)
		assert.ErrorContains(t, err, "shorter than MinLease (2s)")
		_, err = multiregion.New(regions(multiregion.MinLease), mode)
		assert.NoError(t, err)
	}
	_, err := multiregion.New(regions(time.Millisecond)[:1])
	assert.NoError(t, err, "a single region is a dynamostore.Store: its Lease is its own")
}
