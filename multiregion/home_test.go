package multiregion_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/multiregion"
)

var three = []string{"us-east-1", "eu-west-1", "ap-southeast-2"}

// offline returns regions whose stores are never called: the tests of this
// file exercise routing decisions only. Each region has its own client,
// configured for that region and without an endpoint.
func offline(names ...string) []multiregion.Region {
	var out []multiregion.Region
	for _, n := range names {
		out = append(out, multiregion.NewRegion(n, dynamodb.New(dynamodb.Options{Region: n}), "keys"))
	}
	return out
}

func TestHomeOrderIsDeterministicAndIgnoresConfigurationOrder(t *testing.T) {
	want := multiregion.HomeOrder("tenant-a", "order-42", three)
	for range 3 {
		assert.Equal(t, want, multiregion.HomeOrder("tenant-a", "order-42", three))
	}
	reversed := slices.Clone(three)
	slices.Reverse(reversed)
	assert.Equal(t, want, multiregion.HomeOrder("tenant-a", "order-42", reversed))
	assert.ElementsMatch(t, three, want, "the order is a permutation of the regions")
	assert.Equal(t, []string{"us-east-1", "eu-west-1", "ap-southeast-2"}, three, "HomeOrder must not modify its input")
}

func TestHomeOrderSeparatesScopeFromKey(t *testing.T) {
	// ("ab", "c") and ("a", "bc") concatenate alike; their orders must be
	// independent draws. Over many such pairs, some homes must differ.
	differ := 0
	for i := range 200 {
		a := multiregion.HomeOrder(fmt.Sprintf("s%dx", i), "k", three)
		b := multiregion.HomeOrder(fmt.Sprintf("s%d", i), "xk", three)
		if a[0] != b[0] {
			differ++
		}
	}
	assert.Greater(t, differ, 80, "scope and key must be length-delimited in the hash")
}

func TestHomeOrderSpreadsKeysEvenlyOverThreeRegions(t *testing.T) {
	const n = 30000
	count := map[string]int{}
	for i := range n {
		count[multiregion.HomeOrder("tenant", fmt.Sprintf("key-%d", i), three)[0]]++
	}
	for _, r := range three {
		share := float64(count[r]) / n
		assert.InDelta(t, 1.0/3, share, 0.02, "region %s homes %.3f of the keys", r, share)
	}
}

func TestAddingARegionMovesOnlyTheKeysItWins(t *testing.T) {
	four := append(slices.Clone(three), "sa-east-1")
	moved := 0
	const n = 10000
	for i := range n {
		key := fmt.Sprintf("key-%d", i)
		before := multiregion.HomeOrder("t", key, three)
		after := multiregion.HomeOrder("t", key, four)
		if before[0] != after[0] {
			require.Equal(t, "sa-east-1", after[0], "a key may only move to the new region")
			moved++
		}
		assert.Equal(t, before, slices.DeleteFunc(after, func(s string) bool { return s == "sa-east-1" }),
			"the old regions keep their relative order")
	}
	assert.InDelta(t, 0.25, float64(moved)/n, 0.03)
}

func TestFailoverOrderExcludesTheHome(t *testing.T) {
	s, err := multiregion.New(offline(three...), func(o *multiregion.Options) {
		o.Mode = multiregion.HomeRegion
		o.Eviction = multiregion.EvictBySweeper
	})
	require.NoError(t, err)
	for i := range 100 {
		key := fmt.Sprintf("k%d", i)
		order := s.Order("t", key)
		require.Len(t, order, 3)
		assert.Equal(t, s.Home("t", key), order[0])
		assert.NotContains(t, order[1:], order[0])
		assert.ElementsMatch(t, three, order)
		assert.Equal(t, multiregion.HomeOrder("t", key, three), order)
	}
}

func TestPinnedScopeIsHomedInItsRegion(t *testing.T) {
	s, err := multiregion.New(offline(three...), func(o *multiregion.Options) {
		o.Mode = multiregion.HomeRegion
		o.Eviction = multiregion.EvictBySweeper
		o.Pins = map[string]string{"eu-tenant": "eu-west-1"}
	})
	require.NoError(t, err)
	for i := range 100 {
		key := fmt.Sprintf("k%d", i)
		order := s.Order("eu-tenant", key)
		assert.Equal(t, "eu-west-1", order[0])
		assert.Equal(t, "eu-west-1", s.Home("eu-tenant", key))
		hashed := slices.DeleteFunc(multiregion.HomeOrder("eu-tenant", key, three), func(r string) bool { return r == "eu-west-1" })
		assert.Equal(t, hashed, order[1:], "the failover order keeps the hash order of the other regions")
	}
	// Other scopes are not pinned.
	homes := map[string]bool{}
	for i := range 100 {
		homes[s.Home("other", fmt.Sprintf("k%d", i))] = true
	}
	assert.Len(t, homes, 3)
}

func TestHomeOrderWeightsAreUniform(t *testing.T) {
	// A chi-square check of the first region over many keys, so that a
	// bias of the hash (not only of one region) would show.
	const n = 9000
	count := map[string]float64{}
	for i := range n {
		count[multiregion.HomeOrder(fmt.Sprint(i%7), fmt.Sprintf("op-%d", i), three)[0]]++
	}
	chi := 0.0
	for _, r := range three {
		d := count[r] - n/3.0
		chi += d * d / (n / 3.0)
	}
	assert.Less(t, chi, 13.8, "chi-square with 2 degrees of freedom, p = 0.001")
	assert.False(t, math.IsNaN(chi))
}

func TestNewCopiesPinsSoChangingTheCallersMapChangesNothing(t *testing.T) {
	p := map[string]string{"eu-tenant": "eu-west-1"}
	s, err := multiregion.New(offline(three...), func(o *multiregion.Options) {
		o.Mode = multiregion.HomeRegion
		o.Eviction = multiregion.EvictBySweeper
		o.Pins = p
	})
	require.NoError(t, err)
	want := map[string][]string{}
	for i := range 20 {
		key := fmt.Sprintf("k%d", i)
		want["eu-tenant/"+key] = s.Order("eu-tenant", key)
		want["other/"+key] = s.Order("other", key)
	}

	p["eu-tenant"] = "us-east-1"
	p["other"] = "ap-southeast-2"
	for i := range 20 {
		key := fmt.Sprintf("k%d", i)
		assert.Equal(t, want["eu-tenant/"+key], s.Order("eu-tenant", key))
		assert.Equal(t, "eu-west-1", s.Home("eu-tenant", key))
		assert.Equal(t, want["other/"+key], s.Order("other", key))
	}
}
