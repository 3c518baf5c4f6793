package sweepbench

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/emuload"
	"github.com/idemkey/idemkey/internal/keyschema"
	"github.com/idemkey/idemkey/localstack"
)

// The seeded truth of every table size: the same records, written by a
// Store, on the same clock.
//
// Every record to remove is one both modes remove: expired, some of them
// in progress under an expired lock (their owner died). A stuck record
// whose exp is still ahead is reclaimed by a scan and left by an index
// sweep until its exp passes (see dynamostore.SweepMode), so the fixture
// has none.
const (
	expiredRecords  = 900 // completed, past their exp: evicted
	deadRecords     = 100 // in progress, lock expired, past their exp: evicted
	liveInProgress  = 50  // in progress, lock live: kept
	removedPerSweep = expiredRecords + deadRecords
	scope           = "bench"
)

// large adds the table of 200,000 records, which scripts/bench.sh sweeps
// for BENCHMARKS.md: building it is most of the test's time (about two
// minutes), and the two smaller tables already show whether index mode's
// reads are flat in the table's size.
var large = flag.Bool("large", false, "sweep a table of 200,000 records too, as scripts/bench.sh does")

// tableSizes returns the sizes of the tables swept.
func tableSizes() []int {
	if *large {
		return []int{2_000, 20_000, 200_000}
	}
	return []int{2_000, 20_000}
}

// t0 is the clock at which the expired records were completed; the sweep
// runs at t0 + 47 h (default retention 24 h, lease 5 min).
var t0 = time.Unix(1_800_000_000, 0)

// fixture is the records of every table: special (the 1,050 records the
// truth is about, as a Store wrote them) and a live completed record to
// copy as filler.
type fixture struct {
	special []map[string]types.AttributeValue
	removed map[string]bool // partition keys the sweep must remove
	live    map[string]types.AttributeValue
	indexed bool // written as for a table swept by index
}

// writeFixture writes the records with a Store on a scratch table and
// reads them back: as its writers write them on a table swept in mode
// (Options.ExpiryIndex in SweepIndex mode).
func writeFixture(t *testing.T, ep *localstack.Endpoint, mode dynamostore.SweepMode) *fixture {
	t.Helper()
	ctx := context.Background()
	table := localstack.TableName("fixture")
	require.NoError(t, dynamostore.EnsureTable(ctx, ep.Client, table, 0))
	ddbtest.DeleteOnCleanup(t, ep.Client, table)
	clock := ddbtest.NewClock(t0)
	indexed := mode == dynamostore.SweepIndex
	store := dynamostore.New(ep.Client, table, func(o *dynamostore.Options) { o.Now, o.ExpiryIndex = clock.Now, indexed })
	body := []byte(`{"id":"pay_01J9Z3K4M5N6P7Q8R9S0T1V2W3","amount":1250,"currency":"EUR","status":"succeeded","created":"2026-12-01T14:00:00Z"}`)
	claim := func(key string, complete bool) {
		req := dynamostore.Request{Scope: scope, Key: key, Method: "POST", Path: "/payments", Fingerprint: make([]byte, 32)}
		c, err := store.Claim(ctx, req)
		require.NoError(t, err)
		if complete {
			_, err = store.Commit(ctx, c, dynamostore.Response{Status: 201,
				Header: http.Header{"Content-Type": {"application/json"}, "Location": {"/payments/pay_01J9Z3K4M5N6P7Q8R9S0T1V2W3"}}, Body: body}, nil)
			require.NoError(t, err)
		}
	}
	for i := range expiredRecords {
		claim(fmt.Sprintf("expired-%04d", i), true)
	}
	for i := range deadRecords {
		claim(fmt.Sprintf("dead-%04d", i), false)
	}
	clock.Advance(46 * time.Hour) // t0 + 46 h
	claim("live-template", true)
	clock.Advance(59 * time.Minute)
	for i := range liveInProgress {
		claim(fmt.Sprintf("in-flight-%04d", i), false)
	}

	f := &fixture{removed: map[string]bool{}, indexed: indexed}
	in := &dynamodb.ScanInput{TableName: &table}
	for {
		out, err := ep.Client.Scan(ctx, in)
		require.NoError(t, err)
		for _, it := range out.Items {
			pk := it["pk"].(*types.AttributeValueMemberS).Value
			switch {
			case strings.Contains(pk, "live-template"):
				f.live = it
			default:
				f.special = append(f.special, it)
				if strings.Contains(pk, "expired-") || strings.Contains(pk, "dead-") {
					f.removed[pk] = true
				}
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	require.Len(t, f.special, removedPerSweep+liveInProgress)
	require.Len(t, f.removed, removedPerSweep)
	require.NotNil(t, f.live)
	return f
}

// fillers returns the overrides of n - len(special) copies of the live
// record: each its own key and, written for an index, the expiry bucket
// of that key.
func (f *fixture) fillers(n int) []map[string]types.AttributeValue {
	out := make([]map[string]types.AttributeValue, 0, n-len(f.special))
	for i := 0; len(out) < n-len(f.special); i++ {
		pk := keyschema.PartitionKey(scope, fmt.Sprintf("live-%07d", i))
		filler := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}
		if f.indexed {
			filler[dynamostore.ExpiryBucketAttribute] = &types.AttributeValueMemberS{Value: dynamostore.ExpiryBucket(dynamostore.KeySchema{}, pk)}
		}
		out = append(out, filler)
	}
	return out
}

// run is one sweep's figures.
type run struct {
	mode              dynamostore.SweepMode
	records, removed  int64
	scanned           int64
	readUnits, writes float64
}

// sweepOnce loads n records into a new key table (with the expiry index in
// index mode), sweeps it once in mode and checks that exactly the records
// to remove are gone.
func sweepOnce(t *testing.T, ep *localstack.Endpoint, f *fixture, n int, mode dynamostore.SweepMode) run {
	t.Helper()
	ctx := context.Background()
	table := localstack.TableName("sweep")
	require.NoError(t, dynamostore.EnsureTable(ctx, ep.Client, table, 0))
	ddbtest.DeleteOnCleanup(t, ep.Client, table)
	if mode == dynamostore.SweepIndex {
		require.NoError(t, dynamostore.EnsureExpiryIndex(ctx, ep.Client, table, dynamostore.KeySchema{}, 0))
	}
	began := time.Now()
	require.NoError(t, emuload.PutCopies(ctx, ep.URL, table, f.special, f.live, f.fillers(n)))
	clock := ddbtest.NewClock(t0.Add(47 * time.Hour))
	sweeper := dynamostore.NewSweeper(ep.Client, table, func(o *dynamostore.SweepOptions) {
		o.Mode, o.Segments, o.ItemsPerSecond, o.Now = mode, 1, -1, clock.Now
	})
	notes := 0
	if mode == dynamostore.SweepIndex {
		indexSteadyState(t, ep.Client, table, t0.Add(23*time.Hour+30*time.Minute)) // 23.5 h before this sweep
		notes = 1
	}
	loaded := time.Now()
	r, err := sweeper.Sweep(ctx, "")
	require.NoError(t, err)
	require.Empty(t, r.Errors)
	t.Logf("%s %d records: load %v, sweep %v", mode, n, loaded.Sub(began).Round(time.Millisecond), time.Since(loaded).Round(time.Millisecond))
	require.Equal(t, int64(removedPerSweep), r.Evicted, "%s %d", mode, n)
	require.Zero(t, r.Reclaimed, "%s %d", mode, n)

	// Exactly the records to remove are gone.
	for _, it := range f.special {
		out, err := ep.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: map[string]types.AttributeValue{"pk": it["pk"]}, ConsistentRead: aws.Bool(true)})
		require.NoError(t, err)
		pk := it["pk"].(*types.AttributeValueMemberS).Value
		require.Equal(t, f.removed[pk], out.Item == nil, "%s %d: %s", mode, n, pk)
	}
	desc, err := ep.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &table})
	require.NoError(t, err)
	require.Equal(t, int64(n-removedPerSweep+notes), aws.ToInt64(desc.Table.ItemCount), "%s %d: nothing else deleted", mode, n)
	return run{mode: mode, records: int64(n), removed: r.Evicted + r.Reclaimed, scanned: r.Scanned, readUnits: r.ConsumedReadUnits, writes: r.ConsumedWriteUnits}
}

// TestSweepCapacityScanVsIndex is the benchmark of issue 14: one full sweep
// of each table size in each mode, capacity as the embedded emulator's
// front estimates it by DynamoDB's rules (ReturnConsumedCapacity). It
// prints one "sweep" line per mode and size, per-key figures, and the
// write capacity the expiry index adds to each request of a Store, and
// asserts that index mode's read capacity is flat in table size (within
// 10% from 2,000 to 20,000 records, or 200,000 with -large) while scan's
// grows with it. It always
// uses the embedded emulator: tables are built with its bulk load.
func TestSweepCapacityScanVsIndex(t *testing.T) {
	start := time.Now()
	ep := localstack.ForTest(t, func(o *localstack.Options) { o.Embedded = true })
	runs := map[dynamostore.SweepMode][]run{}
	for _, mode := range []dynamostore.SweepMode{dynamostore.SweepScan, dynamostore.SweepIndex} {
		f := writeFixture(t, ep, mode)
		for _, n := range tableSizes() {
			runs[mode] = append(runs[mode], sweepOnce(t, ep, f, n, mode))
		}
	}
	for _, mode := range []dynamostore.SweepMode{dynamostore.SweepScan, dynamostore.SweepIndex} {
		for _, r := range runs[mode] {
			fmt.Printf("sweep mode=%s records=%d expired=%d read_units=%.1f write_units=%.1f\n", r.mode, r.records, r.removed, r.readUnits, r.writes)
		}
	}
	for _, mode := range []dynamostore.SweepMode{dynamostore.SweepScan, dynamostore.SweepIndex} {
		for _, r := range runs[mode] {
			fmt.Printf("sweep_per_key mode=%s records=%d read_units_per_key=%.3f write_units_per_key=%.3f scanned=%d\n",
				r.mode, r.records, r.readUnits/float64(r.removed), r.writes/float64(r.removed), r.scanned)
		}
	}
	scan, index := runs[dynamostore.SweepScan], runs[dynamostore.SweepIndex]
	small, large := index[0].readUnits, index[len(index)-1].readUnits
	require.InDelta(t, small, large, 0.1*small, "index mode's read units must stay flat: %.1f at %d records, %.1f at %d", small, index[0].records, large, index[len(index)-1].records)
	for i := 1; i < len(scan); i++ {
		grow := float64(scan[i].records) / float64(scan[i-1].records)
		require.Greater(t, scan[i].readUnits, 0.8*grow*scan[i-1].readUnits, "scan's read units must grow with the table")
	}
	require.Less(t, index[0].readUnits, scan[0].readUnits, "even at 2,000 records the index reads less")

	perRequest := requestWriteCosts(t, ep)
	for _, c := range perRequest {
		fmt.Printf("index_write_cost request=%s table_wcu=%.0f index_wcu=%.0f\n", c.name, c.table, c.index)
	}
	t.Logf("whole run: %v", time.Since(start).Round(time.Second))
}

// requestCost is the write capacity of one request of a Store.
type requestCost struct {
	name         string
	table, index float64
}

// indexSteadyState puts the index-swept table in the state of one whose
// writers all set Options.ExpiryIndex: a sweep at the given time, before
// anything expired, scans the table for records outside the index, finds
// none and notes it, so that a sweep within UnindexedScanInterval after it
// (the measured one) reads the index alone, as it does but once a day.
func indexSteadyState(t *testing.T, client *dynamodb.Client, table string, at time.Time) {
	t.Helper()
	r, err := dynamostore.NewSweeper(client, table, func(o *dynamostore.SweepOptions) {
		o.Mode, o.ItemsPerSecond, o.Now = dynamostore.SweepIndex, -1, func() time.Time { return at }
	}).Sweep(context.Background(), "")
	require.NoError(t, err)
	require.Zero(t, r.Evicted+r.Reclaimed+r.Unindexed)
	require.Empty(t, r.Cursor, "the scan finished")
}

// requestWriteCosts measures, by ReturnConsumedCapacity INDEXES, what a
// claim, a commit (Complete), a release and an eviction by the sweeper
// write on a key table with the expiry index: the table's part is what the
// same request costs without the index.
func requestWriteCosts(t *testing.T, ep *localstack.Endpoint) []requestCost {
	t.Helper()
	ctx := context.Background()
	table := localstack.TableName("costs")
	require.NoError(t, dynamostore.EnsureTable(ctx, ep.Client, table, 0))
	ddbtest.DeleteOnCleanup(t, ep.Client, table)
	require.NoError(t, dynamostore.EnsureExpiryIndex(ctx, ep.Client, table, dynamostore.KeySchema{}, 0))
	m := &indexMeter{}
	client := ep.NewClient(m.install)
	clock := ddbtest.NewClock(t0)
	store := dynamostore.New(client, table, func(o *dynamostore.Options) { o.Now, o.ExpiryIndex = clock.Now, true })
	req := dynamostore.Request{Scope: scope, Key: "cost", Method: "POST", Path: "/payments", Fingerprint: make([]byte, 32)}
	var out []requestCost
	take := func(name string) {
		tbl, idx := m.take()
		out = append(out, requestCost{name, tbl, idx})
	}
	c, err := store.Claim(ctx, req)
	require.NoError(t, err)
	take("claim")
	_, err = store.Commit(ctx, c, dynamostore.Response{Status: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"id":"pay_1","amount":1250}`)}, nil)
	require.NoError(t, err)
	take("commit")
	req.Key = "released"
	c, err = store.Claim(ctx, req)
	require.NoError(t, err)
	m.take()
	require.NoError(t, store.Release(ctx, c))
	take("release")
	indexSteadyState(t, ep.Client, table, clock.Now().Add(24*time.Hour)) // "cost" not yet expired
	clock.Advance(25 * time.Hour)                                        // "cost" expired
	r, err := dynamostore.NewSweeper(client, table, func(o *dynamostore.SweepOptions) {
		o.Mode, o.Now = dynamostore.SweepIndex, clock.Now
	}).Sweep(ctx, "")
	require.NoError(t, err)
	require.Equal(t, int64(1), r.Evicted)
	take("evict")
	return out
}

// indexMeter asks every write for ReturnConsumedCapacity INDEXES and sums
// the table's and the indexes' parts of what the backend reports.
type indexMeter struct {
	mu           sync.Mutex
	table, index float64
}

func (m *indexMeter) install(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("sweepbenchIndexMeter",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				switch p := in.Parameters.(type) {
				case *dynamodb.PutItemInput:
					p.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
				case *dynamodb.UpdateItemInput:
					p.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
				case *dynamodb.DeleteItemInput:
					p.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
				case *dynamodb.TransactWriteItemsInput:
					p.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
				}
				out, md, err := next.HandleInitialize(ctx, in)
				var cc []types.ConsumedCapacity
				switch r := out.Result.(type) {
				case *dynamodb.PutItemOutput:
					cc = optional(r.ConsumedCapacity)
				case *dynamodb.UpdateItemOutput:
					cc = optional(r.ConsumedCapacity)
				case *dynamodb.DeleteItemOutput:
					cc = optional(r.ConsumedCapacity)
				case *dynamodb.TransactWriteItemsOutput:
					cc = r.ConsumedCapacity
				}
				m.add(cc)
				return out, md, err
			}), middleware.Before)
	})
}

func optional(c *types.ConsumedCapacity) []types.ConsumedCapacity {
	if c == nil {
		return nil
	}
	return []types.ConsumedCapacity{*c}
}

func (m *indexMeter) add(cc []types.ConsumedCapacity) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range cc {
		if c.Table != nil {
			m.table += aws.ToFloat64(c.Table.CapacityUnits)
		}
		for _, v := range c.GlobalSecondaryIndexes {
			m.index += aws.ToFloat64(v.CapacityUnits)
		}
	}
}

func (m *indexMeter) take() (table, index float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	table, index = m.table, m.index
	m.table, m.index = 0, 0
	return table, index
}
