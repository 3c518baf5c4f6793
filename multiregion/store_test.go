package multiregion_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/regionsim"
	"github.com/idemkey/idemkey/multiregion"
	"github.com/idemkey/idemkey/txn"
)

const (
	keysTable    = "keys"
	effectsTable = "effects"
	tenant       = "t1"
)

// world is three emulated regions of one global key table and one global
// effects table, replicated with a lag on a virtual clock.
type world struct {
	t        *testing.T
	clock    *ddbtest.Clock
	cluster  *regionsim.Cluster
	regions  []multiregion.Region
	counters *multiregion.Counters
	names    []string
}

func newWorld(t *testing.T, lag time.Duration, shared bool) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{t: t, clock: ddbtest.NewClock(regionsim.Epoch), counters: &multiregion.Counters{}, names: three}
	c, err := regionsim.Start(ctx, func(o *regionsim.Options) {
		o.Regions = three
		o.Lag = lag
		o.Clock = w.clock.Now
		o.Shared = shared
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	w.cluster = c
	require.NoError(t, c.CreateGlobalTable(ctx, keysTable, dynamostore.PartitionKey))
	require.NoError(t, c.CreateGlobalTable(ctx, effectsTable, "id"))
	for _, r := range c.Regions() {
		w.regions = append(w.regions, multiregion.NewRegion(r.Name, r.Client, keysTable, func(o *dynamostore.Options) {
			o.Now = w.clock.Now
			o.Lease = time.Minute
		}))
	}
	return w
}

func (w *world) router(optFns ...func(*multiregion.Options)) *multiregion.Store {
	w.t.Helper()
	s, err := multiregion.New(w.regions, append([]func(*multiregion.Options){func(o *multiregion.Options) {
		o.Observer = w.counters.Observe
	}}, optFns...)...)
	require.NoError(w.t, err)
	return s
}

func homeMode(o *multiregion.Options) {
	o.Mode = multiregion.HomeRegion
	o.Eviction = multiregion.EvictBySweeper
}

func failoverMode(o *multiregion.Options) {
	o.Mode = multiregion.HomeRegion
	o.Eviction = multiregion.EvictBySweeper
	o.Failover = true
}

// advance moves the clock and applies the replication that is due.
func (w *world) advance(d time.Duration) {
	w.t.Helper()
	w.clock.Advance(d)
	_, err := w.cluster.Pump(context.Background())
	require.NoError(w.t, err)
}

func (w *world) store(region string) *dynamostore.Store {
	for _, r := range w.regions {
		if r.Name == region {
			return r.Store
		}
	}
	w.t.Fatalf("no region %s", region)
	return nil
}

// effects returns the effect items of key in region.
func (w *world) effects(region, key string) []string {
	w.t.Helper()
	items, err := w.cluster.Items(context.Background(), region, effectsTable)
	require.NoError(w.t, err)
	var ids []string
	for _, it := range items {
		if it["key"].(*types.AttributeValueMemberS).Value == key {
			ids = append(ids, it["id"].(*types.AttributeValueMemberS).Value)
		}
	}
	return ids
}

// keyHomedIn returns a key whose home (by HomeOrder) is region.
func keyHomedIn(t *testing.T, region string) string {
	for i := range 1000 {
		key := fmt.Sprintf("key-%d", i)
		if multiregion.HomeOrder(tenant, key, three)[0] == region {
			return key
		}
	}
	t.Fatalf("no key homed in %s", region)
	return ""
}

// service is handler.New over a store, in front of a handler that stages
// one effect item per execution and answers 201 with the execution number.
type service struct {
	t        *testing.T
	executed atomic.Int64
	srv      *httptest.Server
}

func newService(t *testing.T, store idemkey.Store) *service {
	s := &service{t: t}
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.executed.Add(1)
		key := r.Header.Get(handler.HeaderName)
		tx, _ := txn.FromContext(r.Context())
		tx.Put(types.Put{TableName: aws.String(effectsTable), Item: map[string]types.AttributeValue{
			"id":  &types.AttributeValueMemberS{Value: fmt.Sprintf("%s#%d", key, n)},
			"key": &types.AttributeValueMemberS{Value: key},
		}})
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set(multiregion.PromotedHeader, "forged by a handler")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"execution":%d}`, n)
	})
	mw := handler.New(store, func(o *handler.Options) {
		o.Scope = func(*http.Request) (string, error) { return tenant, nil }
	})
	s.srv = httptest.NewServer(mw(inner))
	t.Cleanup(s.srv.Close)
	return s
}

type reply struct {
	status int
	header http.Header
	body   string
}

func (s *service) post(key, body string) reply {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.srv.URL+"/payments", strings.NewReader(body))
	require.NoError(s.t, err)
	req.Header.Set(handler.HeaderName, key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func TestHandlerOverHomeRouterServesKeysHomedInEveryRegion(t *testing.T) {
	w := newWorld(t, time.Hour, false) // nothing replicates during the test
	svc := newService(t, w.router(homeMode))
	for i, home := range three {
		key := keyHomedIn(t, home)
		t.Run(home, func(t *testing.T) {
			first := svc.post(key, `{"amount":100}`)
			require.Equal(t, http.StatusCreated, first.status, first.body)
			assert.Equal(t, fmt.Sprintf(`{"execution":%d}`, i+1), first.body)
			assert.Empty(t, first.header.Get(handler.ReplayedHeader))

			replay := svc.post(key, `{ "amount" : 100 }`)
			assert.Equal(t, http.StatusCreated, replay.status)
			assert.Equal(t, first.body, replay.body)
			assert.Equal(t, "true", replay.header.Get(handler.ReplayedHeader))
			assert.Empty(t, replay.header.Get(multiregion.PromotedHeader), "a handler cannot store the promotion marker")

			reused := svc.post(key, `{"amount":999}`)
			assert.Equal(t, http.StatusUnprocessableEntity, reused.status)
			assert.Equal(t, "application/problem+json", reused.header.Get("Content-Type"))

			// The key and its effect were written in the home region only.
			for _, r := range three {
				rec, err := w.store(r).Get(context.Background(), tenant, key)
				if r == home {
					require.NoError(t, err)
					assert.Equal(t, dynamostore.StateCompleted, rec.State)
					assert.Equal(t, home, rec.Region)
					assert.Len(t, w.effects(r, key), 1)
				} else {
					assert.ErrorIs(t, err, dynamostore.ErrNotFound, "region %s", r)
					assert.Empty(t, w.effects(r, key))
				}
			}
		})
	}
	assert.Equal(t, int64(3), svc.executed.Load())
}

func TestHomeRegionFailsClosedWhenTheHomeIsUnreachable(t *testing.T) {
	w := newWorld(t, time.Second, false)
	router := w.router(homeMode)
	svc := newService(t, router)
	key := keyHomedIn(t, "eu-west-1")
	w.cluster.CutOff("eu-west-1")

	got := svc.post(key, `{"amount":1}`)
	assert.Equal(t, http.StatusServiceUnavailable, got.status, got.body)
	assert.NotEmpty(t, got.header.Get("Retry-After"))
	assert.Zero(t, svc.executed.Load(), "nothing runs when the home is unreachable")
	assert.Equal(t, int64(1), w.counters.Count(multiregion.EventFailClosed))

	_, err := router.Claim(context.Background(), idemkey.Request{Scope: tenant, Key: key, Fingerprint: fp("x")})
	var re *multiregion.RegionError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, []string{"eu-west-1"}, re.Regions)
	var se *dynamostore.StoreError
	assert.ErrorAs(t, err, &se, "the Guard maps a StoreError to 503")
	var op *net.OpError
	assert.ErrorAs(t, err, &op, "the SDK saw a connection error")
	assert.ErrorIs(t, err, regionsim.ErrCutOff)

	// Keys homed elsewhere are served.
	other := svc.post(keyHomedIn(t, "us-east-1"), `{"amount":1}`)
	assert.Equal(t, http.StatusCreated, other.status)

	w.cluster.Restore("eu-west-1")
	back := svc.post(key, `{"amount":1}`)
	assert.Equal(t, http.StatusCreated, back.status)
}

func fp(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

func TestFailoverDuplicateWithinTheLagIsReportedByReconcile(t *testing.T) {
	w := newWorld(t, 2*time.Second, false)
	router := w.router(failoverMode)
	svc := newService(t, router)
	home := "us-east-1"
	key := keyHomedIn(t, home)
	next := router.Order(tenant, key)[1]

	first := svc.post(key, `{"amount":7}`)
	require.Equal(t, http.StatusCreated, first.status)
	w.advance(500 * time.Millisecond) // within the lag: not replicated
	w.cluster.CutOff(home)

	// The client timed out and retries: the home is dark, the record has
	// not left it, and the failover region executes again.
	second := svc.post(key, `{"amount":7}`)
	require.Equal(t, http.StatusCreated, second.status)
	assert.Equal(t, `{"execution":2}`, second.body)
	assert.Equal(t, int64(1), w.counters.Count(multiregion.EventFailover))
	assert.Equal(t, []string{key + "#2"}, w.effects(next, key), "the failover execution committed its effect in the failover region")

	// Further retries during the outage replay the failover execution.
	third := svc.post(key, `{"amount":7}`)
	assert.Equal(t, "true", third.header.Get(handler.ReplayedHeader))
	assert.Equal(t, second.body, third.body)

	w.cluster.Restore(home)
	w.advance(3 * time.Second)
	rep, err := router.Reconcile(context.Background())
	require.NoError(t, err)
	require.Len(t, rep.TwoRegion, 1)
	dup := rep.TwoRegion[0]
	assert.Equal(t, tenant, dup.Scope)
	assert.Equal(t, key, dup.Key)
	assert.Equal(t, home, dup.Home)
	assert.Equal(t, home, dup.HomeRecord.Region)
	assert.Empty(t, dup.PromotedFrom)
	require.Len(t, dup.Others, 1)
	assert.Equal(t, next, dup.Others[0].Region)
	assert.Equal(t, []string{home, next}, dup.Regions())
	assert.Equal(t, 1, rep.FailoverRecords)
	assert.Zero(t, rep.Promoted)
	assert.Empty(t, rep.Pending)
	assert.Equal(t, int64(1), w.counters.Count(multiregion.EventTwoRegionExecution))

	// The home region answers from now on: its own execution.
	after := svc.post(key, `{"amount":7}`)
	assert.Equal(t, first.body, after.body)
	assert.Equal(t, "true", after.header.Get(handler.ReplayedHeader))
	assert.Equal(t, int64(2), svc.executed.Load())
	assert.Len(t, w.effects(home, key), 2, "both executions' effects replicated")

	// Reconcile reports the key on every run until it expires.
	again, err := router.Reconcile(context.Background())
	require.NoError(t, err)
	assert.Len(t, again.TwoRegion, 1)
}

func TestFailoverReplaysARecordReplicatedBeforeTheOutage(t *testing.T) {
	w := newWorld(t, time.Second, false)
	router := w.router(failoverMode)
	svc := newService(t, router)
	home := "ap-southeast-2"
	key := keyHomedIn(t, home)

	first := svc.post(key, `{"amount":3}`)
	require.Equal(t, http.StatusCreated, first.status)
	w.advance(2 * time.Second) // replicated
	w.cluster.CutOff(home)

	retry := svc.post(key, `{"amount":3}`)
	assert.Equal(t, http.StatusCreated, retry.status)
	assert.Equal(t, "true", retry.header.Get(handler.ReplayedHeader))
	assert.Equal(t, first.body, retry.body)
	reused := svc.post(key, `{"amount":4}`)
	assert.Equal(t, http.StatusUnprocessableEntity, reused.status, "the replicated record's fingerprint decides")
	assert.Equal(t, int64(1), svc.executed.Load())
	assert.Equal(t, int64(2), w.counters.Count(multiregion.EventFailover), "every failover decision is reported")

	w.cluster.Restore(home)
	rep, err := router.Reconcile(context.Background())
	require.NoError(t, err)
	assert.Zero(t, rep.FailoverRecords)
	assert.Empty(t, rep.TwoRegion)
}

func TestHomeClaimPromotesAFailoverExecution(t *testing.T) {
	w := newWorld(t, time.Hour, false) // the failover record never replicates
	router := w.router(failoverMode)
	svc := newService(t, router)
	home := "eu-west-1"
	key := keyHomedIn(t, home)
	next := router.Order(tenant, key)[1]

	w.cluster.CutOff(home)
	first := svc.post(key, `{"amount":5}`)
	require.Equal(t, http.StatusCreated, first.status)
	w.cluster.Restore(home)

	// Back home: the claim finds the failover execution in its own region
	// and replays it instead of executing a second time.
	retry := svc.post(key, `{"amount":5}`)
	assert.Equal(t, http.StatusCreated, retry.status)
	assert.Equal(t, "true", retry.header.Get(handler.ReplayedHeader))
	assert.Equal(t, first.body, retry.body)
	assert.Empty(t, retry.header.Get(multiregion.PromotedHeader))
	assert.Equal(t, int64(1), svc.executed.Load())
	assert.Equal(t, int64(1), w.counters.Count(multiregion.EventPromoted))

	raw, err := w.store(home).Get(context.Background(), tenant, key)
	require.NoError(t, err)
	failover, err := w.store(next).Get(context.Background(), tenant+"\x00failover@"+next, key)
	require.NoError(t, err)
	assert.Equal(t, next+" "+failover.LockToken, raw.Response.Header.Get(multiregion.PromotedHeader), "the home record names the execution it came from")
	viaRouter, err := router.Get(context.Background(), tenant, key)
	require.NoError(t, err)
	assert.Empty(t, viaRouter.Response.Header.Get(multiregion.PromotedHeader))

	rep, err := router.Reconcile(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, rep.FailoverRecords)
	assert.Zero(t, rep.Promoted)
	assert.Empty(t, rep.TwoRegion, "a promoted execution is not a duplicate")
}

func TestReconcilePromotesAFailoverExecutionIntoAnAbsentHome(t *testing.T) {
	w := newWorld(t, time.Hour, false)
	router := w.router(failoverMode)
	svc := newService(t, router)
	home := "us-east-1"
	key := keyHomedIn(t, home)

	w.cluster.CutOff(home)
	first := svc.post(key, `{"amount":6}`)
	require.Equal(t, http.StatusCreated, first.status)
	w.cluster.Restore(home)

	rep, err := router.Reconcile(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Promoted)
	assert.Empty(t, rep.TwoRegion)
	assert.Equal(t, int64(1), w.counters.Count(multiregion.EventPromoted))

	rec, err := w.store(home).Get(context.Background(), tenant, key)
	require.NoError(t, err)
	assert.Equal(t, dynamostore.StateCompleted, rec.State)
	assert.Equal(t, first.body, string(rec.Response.Body))

	retry := svc.post(key, `{"amount":6}`)
	assert.Equal(t, "true", retry.header.Get(handler.ReplayedHeader))
	assert.Equal(t, first.body, retry.body)
	assert.Equal(t, int64(1), svc.executed.Load())
	assert.Equal(t, int64(1), w.counters.Count(multiregion.EventPromoted), "answered from the home record, no second promotion")
}

func TestFailoverRefusesScopesThatCouldCollideWithFailoverRecords(t *testing.T) {
	w := newWorld(t, time.Second, false)
	router := w.router(failoverMode)
	ctx := context.Background()
	for _, scope := range []string{"t1\x00failover@eu-west-1", strings.Repeat("s", dynamostore.MaxScopeBytes)} {
		_, err := router.Claim(ctx, idemkey.Request{Scope: scope, Key: "k", Fingerprint: fp("x")})
		assert.ErrorIs(t, err, dynamostore.ErrInvalidRequest)
	}
	// Without failover no failover record can exist: a NUL is allowed.
	c, err := w.router(homeMode).Claim(ctx, idemkey.Request{Scope: "a\x00b", Key: "k", Fingerprint: fp("x")})
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Acquired, c.Result)
}

func TestReconcileNeedsHomeModeAndScanners(t *testing.T) {
	w := newWorld(t, time.Second, false)
	_, err := w.router(func(o *multiregion.Options) {
		o.Mode = multiregion.Strong
		o.Effects = multiregion.EffectsKeyed
		o.Eviction = multiregion.EvictBySweeper
	}).Reconcile(context.Background())
	assert.ErrorIs(t, err, multiregion.ErrInvalidConfig)

	regions := append([]multiregion.Region(nil), w.regions...)
	regions[1].Scanner = nil
	s, err := multiregion.New(regions, failoverMode)
	require.NoError(t, err)
	_, err = s.Reconcile(context.Background())
	assert.ErrorIs(t, err, multiregion.ErrNoScanner)
}

func strongMode(local string) func(*multiregion.Options) {
	return func(o *multiregion.Options) {
		o.Mode = multiregion.Strong
		o.Local = local
		o.Effects = multiregion.EffectsKeyed
		o.Eviction = multiregion.EvictBySweeper
	}
}

func TestStrongServesAnyRegionAndFallsBackWhenOneIsUnreachable(t *testing.T) {
	w := newWorld(t, 0, true) // one linearizable copy: the MRSC model
	ctx := context.Background()
	a, b := w.router(strongMode("us-east-1")), w.router(strongMode("eu-west-1"))
	req := idemkey.Request{Scope: tenant, Key: "k1", Method: "POST", Path: "/p", Fingerprint: fp("body")}

	c, err := a.Claim(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Acquired, c.Result)
	assert.Equal(t, "us-east-1", c.Record.Region)
	inFlight, err := b.Claim(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, dynamostore.InFlight, inFlight.Result, "the other region sees the claim at once")
	_, err = a.Commit(ctx, c, idemkey.Response{Status: 201, Body: []byte("ok")}, nil)
	require.NoError(t, err)
	replay, err := b.Claim(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Replay, replay.Result)

	w.cluster.CutOff("us-east-1")
	req.Key = "k2"
	c2, err := a.Claim(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Acquired, c2.Result)
	assert.Equal(t, "eu-west-1", c2.Record.Region, "served by the next region")
	assert.Equal(t, int64(1), w.counters.Count(multiregion.EventRegionFallback))
	_, err = a.Commit(ctx, c2, idemkey.Response{Status: 201}, nil)
	require.NoError(t, err)
	rec, err := b.Get(ctx, tenant, "k2")
	require.NoError(t, err)
	assert.Equal(t, dynamostore.StateCompleted, rec.State)
}

func TestStrongCommitRefusesStagedEffectsAndWritesNothing(t *testing.T) {
	w := newWorld(t, 0, true)
	ctx := context.Background()
	s := w.router(strongMode("us-east-1"))
	c, err := s.Claim(ctx, idemkey.Request{Scope: tenant, Key: "k", Fingerprint: fp("b")})
	require.NoError(t, err)
	tx := txn.New()
	tx.Put(types.Put{TableName: aws.String(effectsTable), Item: map[string]types.AttributeValue{
		"id": &types.AttributeValueMemberS{Value: "e1"}, "key": &types.AttributeValueMemberS{Value: "k"},
	}})
	_, err = s.Commit(ctx, c, idemkey.Response{Status: 201}, tx)
	assert.ErrorIs(t, err, multiregion.ErrTransactionsUnsupported)
	rec, err := s.Get(ctx, tenant, "k")
	require.NoError(t, err)
	assert.Equal(t, dynamostore.StateInProgress, rec.State, "the key was not completed")
	assert.Empty(t, w.effects("us-east-1", "k"), "the effect was not written")
}

// conflicting wraps a region's client and answers the next PutItem calls
// with ReplicatedWriteConflictException without sending them: the error an
// MRSC table returns while another region writes the same item, which no
// emulator produces.
type conflicting struct {
	*dynamodb.Client
	conflicts atomic.Int64
	puts      atomic.Int64
}

func (c *conflicting) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.puts.Add(1)
	if c.conflicts.Add(-1) >= 0 {
		return nil, &types.ReplicatedWriteConflictException{Message: aws.String("One or more items in this request are being modified by a request in another Region")}
	}
	return c.Client.PutItem(ctx, in, o...)
}

func TestStrongRetriesReplicatedWriteConflicts(t *testing.T) {
	w := newWorld(t, 0, true)
	ctx := context.Background()
	client := &conflicting{Client: w.cluster.Region("us-east-1").Client}
	regions := append([]multiregion.Region{multiregion.NewRegion("us-east-1", client, keysTable)}, w.regions[1:]...)
	counters := &multiregion.Counters{}
	s, err := multiregion.New(regions, strongMode("us-east-1"), func(o *multiregion.Options) {
		o.Observer = counters.Observe
		o.ConflictRetry = multiregion.RetryOptions{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}
	})
	require.NoError(t, err)

	client.conflicts.Store(2)
	c, err := s.Claim(ctx, idemkey.Request{Scope: tenant, Key: "k1", Fingerprint: fp("b")})
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Acquired, c.Result)
	assert.Equal(t, int64(3), client.puts.Load())
	assert.Equal(t, int64(2), counters.Count(multiregion.EventConflictRetry))

	// Past MaxAttempts the conflict is returned (not tried in another
	// region: it is not an outage), and the Guard answers it as unavailable.
	client.conflicts.Store(10)
	client.puts.Store(0)
	_, err = s.Claim(ctx, idemkey.Request{Scope: tenant, Key: "k2", Fingerprint: fp("b")})
	var rwc *types.ReplicatedWriteConflictException
	assert.ErrorAs(t, err, &rwc)
	assert.Equal(t, int64(3), client.puts.Load())
	assert.Zero(t, counters.Count(multiregion.EventRegionFallback))

	_, err = idemkey.New(s).Do(ctx, idemkey.Request{Scope: tenant, Key: "k3", Fingerprint: fp("b")}, func(context.Context) (idemkey.Response, error) {
		t.Error("must not run")
		return idemkey.Response{}, nil
	})
	assert.ErrorIs(t, err, idemkey.ErrUnavailable)
}

func TestSingleRegionIsTheRegionStore(t *testing.T) {
	w := newWorld(t, time.Hour, false)
	s, err := multiregion.New(w.regions[:1])
	require.NoError(t, err)
	g := idemkey.New(s)
	ctx := context.Background()
	req := idemkey.Request{Scope: tenant, Key: "k", Fingerprint: fp("b")}
	res, err := g.Do(ctx, req, func(context.Context) (idemkey.Response, error) {
		return idemkey.Response{Status: 201, Body: []byte("made")}, nil
	})
	require.NoError(t, err)
	assert.True(t, res.Stored)
	again, err := g.Do(ctx, req, func(context.Context) (idemkey.Response, error) {
		t.Error("must not run twice")
		return idemkey.Response{}, nil
	})
	require.NoError(t, err)
	assert.True(t, again.Replayed)
	rec, err := w.regions[0].Store.Get(ctx, tenant, "k")
	require.NoError(t, err)
	assert.Equal(t, "made", string(rec.Response.Body))
}

func TestFailoverWithNoReachableRegionFailsClosed(t *testing.T) {
	w := newWorld(t, time.Second, false)
	svc := newService(t, w.router(failoverMode))
	for _, r := range three {
		w.cluster.CutOff(r)
	}
	got := svc.post(keyHomedIn(t, "eu-west-1"), `{"amount":1}`)
	assert.Equal(t, http.StatusServiceUnavailable, got.status)
	assert.Zero(t, svc.executed.Load())
	assert.Equal(t, int64(1), w.counters.Count(multiregion.EventFailClosed))
	assert.Zero(t, w.counters.Count(multiregion.EventFailover), "no claim was made anywhere")
}

func TestHomeExecutionGoesAheadWhenAFailoverRecordCannotBeRead(t *testing.T) {
	w := newWorld(t, time.Second, false)
	router := w.router(failoverMode)
	svc := newService(t, router)
	key := keyHomedIn(t, "us-east-1")
	dark := router.Order(tenant, key)[2]
	w.cluster.CutOff(dark)

	got := svc.post(key, `{"amount":1}`)
	assert.Equal(t, http.StatusCreated, got.status)
	assert.Equal(t, int64(1), svc.executed.Load())
	assert.Equal(t, int64(1), w.counters.Count(multiregion.EventFenceCheckSkipped), "the unread region is reported; Reconcile covers it")
}

// TestStoreWithoutFailoverExecutesAgainAKeyAFailoverStoreExecuted: only a
// Store with Failover on reads the failover records before executing at
// home. A key executed by failover while its home was dark, retried at
// home through a Store with Failover off (a fleet redeployed without it),
// executes again; Reconcile reports the duplicate. Hence the rule of
// Options.Failover: keep it on until Reconcile has found no live failover
// record for a full Retention after the last failover.
func TestStoreWithoutFailoverExecutesAgainAKeyAFailoverStoreExecuted(t *testing.T) {
	w := newWorld(t, time.Hour, false)
	home := "eu-west-1"
	key := keyHomedIn(t, home)

	withFailover := newService(t, w.router(failoverMode))
	w.cluster.CutOff(home)
	first := withFailover.post(key, `{"amount":7}`)
	require.Equal(t, http.StatusCreated, first.status, first.body)
	w.cluster.Restore(home)

	router := w.router(homeMode)
	withoutFailover := newService(t, router)
	retry := withoutFailover.post(key, `{"amount":7}`)
	assert.Equal(t, http.StatusCreated, retry.status, retry.body)
	assert.Empty(t, retry.header.Get(handler.ReplayedHeader), "executed again: the failover record was not read")
	assert.Equal(t, int64(1), withoutFailover.executed.Load())

	rep, err := router.Reconcile(context.Background())
	require.NoError(t, err)
	require.Len(t, rep.TwoRegion, 1)
	assert.Equal(t, []string{home, router.Order(tenant, key)[1]}, rep.TwoRegion[0].Regions())
}

// TestSecondFailoverRegionCanExecuteAKeyTheFirstExecuted: the home is dark
// and the key executes in its first failover region B; B then becomes
// unreachable too, before its failover record has replicated. The retry
// goes to the next region C, which cannot see B's record, and executes
// again: a duplicate the home never executed, within B's replication lag.
// Reconcile reports it.
func TestSecondFailoverRegionCanExecuteAKeyTheFirstExecuted(t *testing.T) {
	w := newWorld(t, time.Hour, false)
	router := w.router(failoverMode)
	svc := newService(t, router)
	home := "eu-west-1"
	key := keyHomedIn(t, home)
	order := router.Order(tenant, key)
	b, c := order[1], order[2]

	w.cluster.CutOff(home)
	first := svc.post(key, `{"amount":9}`)
	require.Equal(t, http.StatusCreated, first.status, first.body)
	w.cluster.CutOff(b)
	retry := svc.post(key, `{"amount":9}`)
	assert.Equal(t, http.StatusCreated, retry.status, retry.body)
	assert.Empty(t, retry.header.Get(handler.ReplayedHeader))
	assert.Equal(t, int64(2), svc.executed.Load(), "executed in two failover regions")
	assert.Equal(t, []string{key + "#2"}, w.effects(c, key))

	w.cluster.Restore(home)
	w.cluster.Restore(b)
	rep, err := router.Reconcile(context.Background())
	require.NoError(t, err)
	require.Len(t, rep.TwoRegion, 1)
	assert.Equal(t, []string{b, c}, rep.TwoRegion[0].Regions(), "the first is promoted home, the second reported")
	assert.Equal(t, 1, rep.Promoted)
}
