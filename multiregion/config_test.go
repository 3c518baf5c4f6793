package multiregion_test

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/multiregion"
)

func TestNewRefusesConfigurationsThatLoseTheGuarantee(t *testing.T) {
	client := dynamodb.New(dynamodb.Options{Region: "us-east-1"})
	unnamed := dynamostore.New(client, "keys") // writes no region
	cases := []struct {
		name    string
		regions []multiregion.Region
		opts    func(*multiregion.Options)
		field   string
		is      error
	}{
		{"strong with staged effects", offline(three...), func(o *multiregion.Options) {
			o.Mode = multiregion.Strong
			o.Eviction = multiregion.EvictBySweeper
		}, "Effects", multiregion.ErrTransactionsUnsupported},
		{"strong with TTL eviction", offline(three...), func(o *multiregion.Options) {
			o.Mode = multiregion.Strong
			o.Effects = multiregion.EffectsKeyed
		}, "Eviction", multiregion.ErrTTLUnsupported},
		{"home with keyed effects", offline(three...), func(o *multiregion.Options) {
			o.Mode = multiregion.HomeRegion
			o.Effects = multiregion.EffectsKeyed
		}, "Effects", multiregion.ErrInvalidConfig},
		{"no region", nil, func(o *multiregion.Options) {}, "regions", multiregion.ErrInvalidConfig},
		{"single region mode with three regions", offline(three...), func(o *multiregion.Options) {}, "regions", multiregion.ErrInvalidConfig},
		{"duplicate region", offline("a", "a"), func(o *multiregion.Options) { o.Mode = multiregion.HomeRegion }, "regions[1]", multiregion.ErrInvalidConfig},
		{"region without a name", offline(""), func(o *multiregion.Options) {}, "regions[0]", multiregion.ErrInvalidConfig},
		{"region name with NUL", offline("a\x00b"), func(o *multiregion.Options) {}, "regions[0]", multiregion.ErrInvalidConfig},
		{"region without a store", []multiregion.Region{{Name: "a"}}, func(o *multiregion.Options) {}, "regions[0]", multiregion.ErrInvalidConfig},
		{"store writing no region name", []multiregion.Region{{Name: "a", Store: unnamed}}, func(o *multiregion.Options) {
			o.Mode = multiregion.HomeRegion
		}, "regions[0]", multiregion.ErrInvalidConfig},
		{"store writing another region name", []multiregion.Region{offline("b")[0], {Name: "a", Store: offline("c")[0].Store}}, func(o *multiregion.Options) {
			o.Mode = multiregion.Strong
			o.Effects = multiregion.EffectsNone
			o.Eviction = multiregion.EvictBySweeper
		}, "regions[1]", multiregion.ErrInvalidConfig},
		{"pin to an unknown region", offline(three...), func(o *multiregion.Options) {
			o.Mode = multiregion.HomeRegion
			o.Pins = map[string]string{"t": "mars-1"}
		}, "Pins", multiregion.ErrInvalidConfig},
		{"pins outside home mode", offline("a"), func(o *multiregion.Options) { o.Pins = map[string]string{"t": "a"} }, "Pins", multiregion.ErrInvalidConfig},
		{"failover outside home mode", offline(three...), func(o *multiregion.Options) {
			o.Mode = multiregion.Strong
			o.Effects = multiregion.EffectsKeyed
			o.Eviction = multiregion.EvictBySweeper
			o.Failover = true
		}, "Failover", multiregion.ErrInvalidConfig},
		{"unknown local region", offline(three...), func(o *multiregion.Options) {
			o.Mode = multiregion.HomeRegion
			o.Local = "mars-1"
		}, "Local", multiregion.ErrInvalidConfig},
		{"unknown mode", offline("a"), func(o *multiregion.Options) { o.Mode = 7 }, "Mode", multiregion.ErrInvalidConfig},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := multiregion.New(tc.regions, tc.opts)
			require.Error(t, err)
			assert.Nil(t, s)
			var ce *multiregion.ConfigError
			require.True(t, errors.As(err, &ce), "%T: %v", err, err)
			assert.Equal(t, tc.field, ce.Field)
			assert.ErrorIs(t, err, tc.is)
			assert.ErrorIs(t, err, multiregion.ErrInvalidConfig, "every refusal is a configuration error")
			assert.NotEmpty(t, ce.Reason)
		})
	}
}

func TestNewAcceptsEachModeWithItsDocumentedAlternatives(t *testing.T) {
	cases := []struct {
		name    string
		regions []multiregion.Region
		opts    func(*multiregion.Options)
	}{
		{"single region (the default)", offline("us-east-1"), func(o *multiregion.Options) {}},
		{"single region with a store writing no region", []multiregion.Region{{Name: "a", Store: dynamostore.New(dynamodb.New(dynamodb.Options{}), "keys")}}, func(o *multiregion.Options) {}},
		{"home region, fail closed", offline(three...), func(o *multiregion.Options) {
			o.Mode = multiregion.HomeRegion
			o.Eviction = multiregion.EvictBySweeper
		}},
		{"home region with failover and pins", offline(three...), func(o *multiregion.Options) {
			o.Mode = multiregion.HomeRegion
			o.Eviction = multiregion.EvictBySweeper
			o.Failover = true
			o.Pins = map[string]string{"t": "eu-west-1"}
		}},
		{"strong with keyed effects and a sweeper", offline(three...), func(o *multiregion.Options) {
			o.Mode = multiregion.Strong
			o.Local = "eu-west-1"
			o.Effects = multiregion.EffectsKeyed
			o.Eviction = multiregion.EvictBySweeper
		}},
		{"strong without effects", offline(three...), func(o *multiregion.Options) {
			o.Mode = multiregion.Strong
			o.Effects = multiregion.EffectsNone
			o.Eviction = multiregion.EvictBySweeper
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := multiregion.New(tc.regions, tc.opts)
			require.NoError(t, err)
			var o multiregion.Options
			tc.opts(&o)
			assert.Equal(t, o.Mode, s.Mode())
			assert.Len(t, s.Regions(), len(tc.regions))
		})
	}
}

func TestStrongOrderPrefersTheLocalRegion(t *testing.T) {
	s, err := multiregion.New(offline(three...), func(o *multiregion.Options) {
		o.Mode = multiregion.Strong
		o.Local = "ap-southeast-2"
		o.Effects = multiregion.EffectsKeyed
		o.Eviction = multiregion.EvictBySweeper
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"ap-southeast-2", "us-east-1", "eu-west-1"}, s.Order("t", "k"))
}
