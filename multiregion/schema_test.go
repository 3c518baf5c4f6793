package multiregion_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/regionsim"
	"github.com/idemkey/idemkey/multiregion"
	"github.com/idemkey/idemkey/txn"
)

// appTable is a global table of the application's own (partition key PK,
// TTL on ttl) that holds its payments and the key records.
const appTable = "app"

var appSchema = dynamostore.KeySchema{PartitionKey: "PK", Prefix: "idemkey", TTLAttribute: "ttl"}

// newSharedWorld is newWorld over one shared table per region.
func newSharedWorld(t *testing.T, lag time.Duration) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{t: t, clock: ddbtest.NewClock(regionsim.Epoch), counters: &multiregion.Counters{}, names: three}
	c, err := regionsim.Start(ctx, func(o *regionsim.Options) {
		o.Regions = three
		o.Lag = lag
		o.Clock = w.clock.Now
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	w.cluster = c
	require.NoError(t, c.CreateGlobalTable(ctx, appTable, "PK"))
	for _, r := range c.Regions() {
		w.regions = append(w.regions, multiregion.NewRegion(r.Name, r.Client, appTable, func(o *dynamostore.Options) {
			o.Now = w.clock.Now
			o.Lease = time.Minute
			o.Schema = appSchema
		}))
	}
	return w
}

// items returns region's items of the shared table whose PK begins with
// prefix.
func (w *world) items(region, prefix string) []map[string]types.AttributeValue {
	w.t.Helper()
	all, err := w.cluster.Items(context.Background(), region, appTable)
	require.NoError(w.t, err)
	var out []map[string]types.AttributeValue
	for _, it := range all {
		if strings.HasPrefix(it["PK"].(*types.AttributeValueMemberS).Value, prefix) {
			out = append(out, it)
		}
	}
	return out
}

// newPaymentService stages each execution's payment in the shared table.
func newPaymentService(t *testing.T, store *multiregion.Store) (*service, *atomic.Int64) {
	s := &service{t: t}
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.executed.Add(1)
		tx, _ := txn.FromContext(r.Context())
		tx.Put(types.Put{TableName: aws.String(appTable), Item: map[string]types.AttributeValue{
			"PK":  &types.AttributeValueMemberS{Value: fmt.Sprintf("PAYMENT#%s#%d", r.Header.Get(handler.HeaderName), n)},
			"ttl": &types.AttributeValueMemberN{Value: "1"}, // an expired-looking TTL: never the sweeper's
		}})
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"execution":%d}`, n)
	})
	mw := handler.New(store, func(o *handler.Options) {
		o.Scope = func(*http.Request) (string, error) { return tenant, nil }
	})
	s.srv = httptest.NewServer(mw(inner))
	t.Cleanup(s.srv.Close)
	return s, &s.executed
}

func TestHomeRoutingOnASharedTableWritesEachKeyAndPaymentInItsHomeUnderThePrefix(t *testing.T) {
	w := newSharedWorld(t, time.Hour)
	router := w.router(homeMode)
	svc, executed := newPaymentService(t, router)
	for _, home := range three {
		key := keyHomedIn(t, home)
		first := svc.post(key, `{"amount":1}`)
		require.Equal(t, http.StatusCreated, first.status, first.body)
		replay := svc.post(key, `{"amount":1}`)
		assert.Equal(t, "true", replay.header.Get(handler.ReplayedHeader))
		for _, r := range three {
			records := w.items(r, "idemkey#"+fmt.Sprint(len(tenant))+":"+tenant+key)
			payments := w.items(r, "PAYMENT#"+key+"#")
			if r == home {
				assert.Len(t, records, 1, "the key record, in its home, under the prefix")
				assert.Len(t, payments, 1, "its payment, same table, same transaction")
			} else {
				assert.Empty(t, records, r)
				assert.Empty(t, payments, r)
			}
		}
	}
	assert.Equal(t, int64(3), executed.Load())

	// The topology record lives in the schema's namespace too, and the
	// default layout's key holds nothing.
	assert.Len(t, w.items(three[0], "idemkey##idemkey/multiregion/topology"), 1)
	assert.Empty(t, w.items(three[0], multiregion.TopologyPartitionKey))
	rec, err := multiregion.LoadTopology(context.Background(), w.regions[0])
	require.NoError(t, err)
	assert.True(t, rec.Active.Equal(multiregion.Topology{Regions: three}))

	// Each region's sweeper evicts only key records and never a payment,
	// whose ttl says it expired long ago.
	w.advance(25 * time.Hour)
	require.Len(t, w.items(three[0], "PAYMENT#"), 3, "replicated")
	for _, r := range w.cluster.Regions() {
		sw := dynamostore.NewSweeper(r.Client, appTable, func(o *dynamostore.SweepOptions) {
			o.Now, o.ItemsPerSecond, o.Region, o.Schema = w.clock.Now, -1, r.Name, appSchema
		})
		rep, err := sw.Sweep(context.Background(), "")
		require.NoError(t, err)
		assert.Equal(t, int64(1), rep.Evicted, r.Name)
		assert.Len(t, w.items(r.Name, "PAYMENT#"), 3, "region %s keeps every payment", r.Name)
	}
}

func TestFailoverRecordsOnASharedTableAreFoundByReconcile(t *testing.T) {
	w := newSharedWorld(t, time.Hour)
	router := w.router(failoverMode)
	svc, executed := newPaymentService(t, router)
	home := "us-east-1"
	key := keyHomedIn(t, home)
	next := router.Order(tenant, key)[1]

	w.cluster.CutOff(home)
	first := svc.post(key, `{"amount":6}`)
	require.Equal(t, http.StatusCreated, first.status, first.body)
	scope := tenant + "\x00failover@" + next
	assert.Len(t, w.items(next, fmt.Sprintf("idemkey#%d:%s%s", len(scope), scope, key)), 1, "the failover record, under the prefix")
	w.cluster.Restore(home)

	rep, err := router.Reconcile(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, rep.FailoverRecords)
	assert.Equal(t, 1, rep.Promoted)
	retry := svc.post(key, `{"amount":6}`)
	assert.Equal(t, "true", retry.header.Get(handler.ReplayedHeader))
	assert.Equal(t, first.body, retry.body)
	assert.Equal(t, int64(1), executed.Load())
}
