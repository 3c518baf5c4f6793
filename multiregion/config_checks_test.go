package multiregion_test

import (
	"context"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/multiregion"
)

// racingFirstWrites is a TopologyClient whose PutItem waits until a shared
// number of GetItems (the reads of two processes' first refresh) is done:
// two processes that start at the same time, both read "no record"
// everywhere, then both write their first record.
type racingFirstWrites struct {
	*dynamodb.Client
	reads   *atomic.Int64
	need    int64
	allRead chan struct{}
}

func (c *racingFirstWrites) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := c.Client.GetItem(ctx, in, opts...)
	if c.reads.Add(1) == c.need {
		close(c.allRead)
	}
	return out, err
}

func (c *racingFirstWrites) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	select {
	case <-c.allRead:
	case <-time.After(5 * time.Second):
	}
	return c.Client.PutItem(ctx, in, opts...)
}

func fpOf(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }

// Two processes with different configurations (one pins the tenant) start
// at once in different Local regions: each writes its own configuration as
// version 1 in its own region (conditional there only). A refresh that
// reads both records of version 1 refuses keys until replication leaves
// one, so the key is never claimed in two home regions.
func TestTwoFirstRecordsOfOneVersionThatDifferServeNothing(t *testing.T) {
	w := newWorld(t, time.Hour, false) // nothing replicates during the test
	ctx := context.Background()
	var reads atomic.Int64
	allRead := make(chan struct{})
	regionsFor := func() []multiregion.Region {
		var out []multiregion.Region
		for _, r := range w.cluster.Regions() {
			reg := multiregion.NewRegion(r.Name, r.Client, keysTable, func(o *dynamostore.Options) { o.Now = w.clock.Now; o.Lease = time.Minute })
			reg.Client = &racingFirstWrites{Client: reg.Client.(*dynamodb.Client), reads: &reads, need: 6, allRead: allRead}
			out = append(out, reg)
		}
		return out
	}
	key := keyHomedIn(t, three[0])
	p1, err := multiregion.New(regionsFor(), homeMode, func(o *multiregion.Options) { o.Local = three[0] })
	require.NoError(t, err)
	p2, err := multiregion.New(regionsFor(), homeMode, func(o *multiregion.Options) {
		o.Local = three[1]
		o.Pins = map[string]string{tenant: three[1]}
	})
	require.NoError(t, err)

	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range []*multiregion.Store{p1, p2} {
		wg.Go(func() { _, errs[i] = s.CheckTopology(ctx) })
	}
	wg.Wait()
	// A later refresh: both version-1 records are visible to both processes now.
	_, e1 := p1.CheckTopology(ctx)
	_, e2 := p2.CheckTopology(ctx)
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	assert.ErrorIs(t, e1, multiregion.ErrTopologyMismatch)
	assert.ErrorIs(t, e2, multiregion.ErrTopologyMismatch)
	assert.ErrorContains(t, e1, "two different topology records of version 1")

	req := idemkey.Request{Scope: tenant, Key: key, Method: http.MethodPost, Path: "/payments", Fingerprint: fpOf("body")}
	c1, err1 := p1.Claim(ctx, req)
	c2, err2 := p2.Claim(ctx, req)
	assert.ErrorIs(t, err1, multiregion.ErrTopologyMismatch, "%v", c1)
	assert.ErrorIs(t, err2, multiregion.ErrTopologyMismatch, "%v", c2)
}

// The replicas of a global table share its name: a region whose store
// names another table would read none of the others' records (with
// Failover, a key executed at home long before would execute again there),
// so New refuses it, and a store of another key schema.
func TestRegionsOverDifferentTablesAreRefused(t *testing.T) {
	w := newWorld(t, time.Second, false)
	ctx := context.Background()
	require.NoError(t, w.cluster.CreateGlobalTable(ctx, "keys2", dynamostore.PartitionKey))
	home := three[0]
	failover := multiregion.HomeOrder(tenant, keyHomedIn(t, home), three)[1]
	var regions []multiregion.Region
	for _, r := range w.cluster.Regions() {
		table := keysTable
		if r.Name == failover {
			table = "keys2"
		}
		regions = append(regions, multiregion.NewRegion(r.Name, r.Client, table, func(o *dynamostore.Options) { o.Now = w.clock.Now; o.Lease = time.Minute }))
	}
	_, err := multiregion.New(regions, failoverMode)
	assert.ErrorIs(t, err, multiregion.ErrInvalidConfig)
	assert.ErrorContains(t, err, `over table "keys2"`)

	regions = nil
	for _, r := range w.cluster.Regions() {
		regions = append(regions, multiregion.NewRegion(r.Name, r.Client, keysTable, func(o *dynamostore.Options) {
			if r.Name == home {
				o.Schema = dynamostore.KeySchema{TTLAttribute: "expires"}
			}
		}))
	}
	_, err = multiregion.New(regions, failoverMode)
	assert.ErrorIs(t, err, multiregion.ErrInvalidConfig)
	assert.ErrorContains(t, err, "another key schema")
}

// An MRSC table spans exactly three regions: four cannot all be its
// replicas, so Strong mode refuses them.
func TestStrongRefusesMoreRegionsThanAnMRSCTableHas(t *testing.T) {
	_, err := multiregion.New(offline("us-east-1", "us-east-2", "us-west-2", "eu-west-1"), func(o *multiregion.Options) {
		o.Mode = multiregion.Strong
		o.Effects = multiregion.EffectsKeyed
		o.Eviction = multiregion.EvictBySweeper
	})
	assert.ErrorIs(t, err, multiregion.ErrInvalidConfig)
	assert.ErrorContains(t, err, "exactly three regions")
}

// Topology.Home of a topology without regions is "", not a panic.
func TestHomeOfATopologyWithoutRegionsIsNone(t *testing.T) {
	assert.NotPanics(t, func() { assert.Empty(t, multiregion.Topology{}.Home("s", "k")) })
}

// InternalFailure (HTTP 500) is one of the common errors of every AWS API,
// DynamoDB's included (API reference, "Common Errors").
const (
	internalFailureCode   = "InternalFailure"
	internalFailureStatus = http.StatusInternalServerError
)

// internalFailureClient is a DynamoDB client of a region whose endpoint answers
// every call 500 InternalFailure: a 5xx without a modeled error code, after
// the SDK's retries (none here).
func internalFailureClient(t *testing.T, region string) *dynamodb.Client {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amzn-Errortype", internalFailureCode)
		w.WriteHeader(internalFailureStatus)
		_, _ = w.Write([]byte(`{"__type":"com.amazon.coral.service#` + internalFailureCode + `","message":"failure"}`))
	}))
	t.Cleanup(srv.Close)
	return dynamodb.New(dynamodb.Options{Region: region, BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), Retryer: aws.NopRetryer{}})
}

// A region whose endpoint answers 500 InternalFailure (a code the SDK does
// not model, so its fault is unset) is unreachable, as the docs say of a
// 5xx: keys homed elsewhere are served, and with Failover a key homed
// there goes to the next region.
func TestA5xxWithoutAModeledCodeIsAnUnavailableRegion(t *testing.T) {
	w := newWorld(t, time.Second, false)
	ctx := context.Background()
	bad := three[0]
	var regions []multiregion.Region
	for _, r := range w.cluster.Regions() {
		var client multiregion.RegionClient = r.Client
		if r.Name == bad {
			client = internalFailureClient(t, bad)
		}
		regions = append(regions, multiregion.NewRegion(r.Name, client, keysTable, func(o *dynamostore.Options) { o.Now = w.clock.Now; o.Lease = time.Minute }))
	}
	counters := &multiregion.Counters{}
	router, err := multiregion.New(regions, failoverMode, func(o *multiregion.Options) {
		o.Local = three[1]
		o.Observer = counters.Observe
	})
	require.NoError(t, err)
	// A healthy region holds the record (written through a healthy region).
	_, err = multiregion.AdvanceTopology(ctx, regions[1], multiregion.Topology{Regions: three})
	require.NoError(t, err)

	elsewhere := keyHomedIn(t, three[1])
	c, err := router.Claim(ctx, idemkey.Request{Scope: tenant, Key: elsewhere, Method: "POST", Path: "/p", Fingerprint: fpOf("x")})
	require.NoError(t, err, "a key homed in a healthy region")
	assert.Equal(t, dynamostore.Acquired, c.Result)

	homedBad := keyHomedIn(t, bad)
	c, err = router.Claim(ctx, idemkey.Request{Scope: tenant, Key: homedBad, Method: "POST", Path: "/p", Fingerprint: fpOf("y")})
	require.NoError(t, err, "with Failover, a key homed in the 5xx region fails over")
	assert.Equal(t, dynamostore.Acquired, c.Result)
	assert.Equal(t, int64(1), counters.Count(multiregion.EventFailover))
}
