package dynamostore_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/keyschema"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/txn"
)

// sharedSchema is a single-table design's layout: the application's own
// key names (PK, SK) and TTL attribute (ttl), key records under "idemkey#".
var sharedSchema = dynamostore.KeySchema{PartitionKey: "PK", SortKey: "SK", SortKeyValue: "IDEMKEY", Prefix: "idemkey", TTLAttribute: "ttl"}

// sharedEnv is one test's table holding the application's items and key
// records.
type sharedEnv struct {
	ep     *localstack.Endpoint
	client *dynamodb.Client
	calls  *ddbtest.Counter
	clock  *ddbtest.Clock
	table  string
	mode   dynamostore.SweepMode
}

func newSharedEnv(t *testing.T) *sharedEnv {
	t.Helper()
	ep := localstack.ForTest(t)
	e := &sharedEnv{ep: ep, calls: ddbtest.NewCounter(), clock: ddbtest.NewClock(time.Unix(1_800_000_000, 0))}
	e.client = ep.NewClient(e.calls.Install)
	e.table = localstack.TableName("app")
	require.NoError(t, dynamostore.EnsureSchemaTable(context.Background(), ep.Client, e.table, sharedSchema, 0))
	ddbtest.DeleteOnCleanup(t, ep.Client, e.table)
	return e
}

func (e *sharedEnv) store(optFns ...func(*dynamostore.Options)) *dynamostore.Store {
	base := func(o *dynamostore.Options) {
		o.Now, o.Schema, o.ExpiryIndex = e.clock.Now, sharedSchema, e.mode == dynamostore.SweepIndex
	}
	return dynamostore.New(e.client, e.table, append([]func(*dynamostore.Options){base}, optFns...)...)
}

func (e *sharedEnv) sweeper(client dynamostore.SweepClient) *dynamostore.Sweeper {
	return dynamostore.NewSweeper(client, e.table, func(o *dynamostore.SweepOptions) {
		o.Now, o.Segments, o.PageSize, o.ItemsPerSecond, o.Schema = e.clock.Now, 2, 10, -1, sharedSchema
		o.Mode = e.mode
	})
}

// inSharedModes runs test once per SweepMode, each on a shared table of
// its own whose sweeper has that mode; in SweepIndex mode the table has
// the expiry index.
func inSharedModes(t *testing.T, test func(t *testing.T, e *sharedEnv)) {
	t.Helper()
	forModes(t, func(t *testing.T, mode dynamostore.SweepMode) *sharedEnv {
		e := newSharedEnv(t)
		e.mode = mode
		indexFor(t, mode, e.ep.Client, e.table, sharedSchema)
		if mode == dynamostore.SweepIndex {
			require.NoError(t, dynamostore.NoteIndexComplete(context.Background(), e.ep.Client, e.table, sharedSchema, "", e.clock.Now()))
		}
		return e
	}, test)
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// payment is an application item: a payment of an order.
func payment(pk, sk string, extra map[string]types.AttributeValue) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{"PK": s(pk), "SK": s(sk), "amount": n(1250)}
	for k, v := range extra {
		item[k] = v
	}
	return item
}

// userItems seeds the application's items: plain payments, one whose ttl
// is long past, and look-alikes that copy a key record's attributes
// without being one (no marker, or outside the prefix, or another sort
// key). It returns their primary keys.
func (e *sharedEnv) userItems(t *testing.T) []map[string]types.AttributeValue {
	t.Helper()
	past := e.clock.Now().Add(-48 * time.Hour)
	recordLike := map[string]types.AttributeValue{
		"ttl": n(past.Unix()), "state": s("completed"), "created": n(past.UnixMilli()), "lock": s("x"),
		"lock_exp": n(past.UnixMilli()), "v": n(1), "method": s("POST"), "path": s("/"), "fp": &types.AttributeValueMemberB{Value: fp("x")},
		"status": n(201), "done": n(past.UnixMilli()),
	}
	items := []map[string]types.AttributeValue{
		payment("CUSTOMER#1", "PAYMENT#1", nil),
		payment("CUSTOMER#1", "PAYMENT#2", map[string]types.AttributeValue{"ttl": n(past.Unix())}), // an expired-looking TTL
		payment("8:tenant-aorder-1", "PAYMENT#3", recordLike),                                      // a default-layout key value
		payment("idemkey#8:tenant-aorder-9", "PAYMENT#4", recordLike),                              // in the prefix, another sort key
		payment("idemkey#8:tenant-aorder-8", "IDEMKEY", recordLike),                                // in the namespace, no marker
		payment("idemkeyX#8:tenant-aorder-7", "IDEMKEY", recordLike),                               // a longer prefix
		// in the namespace and in the expiry index, no marker
		payment("idemkey#8:tenant-aorder-6", "IDEMKEY", withBucket(recordLike, "idemkey#8:tenant-aorder-6")),
	}
	keys := make([]map[string]types.AttributeValue, len(items))
	for i, item := range items {
		_, err := e.ep.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: &e.table, Item: item})
		require.NoError(t, err)
		keys[i] = map[string]types.AttributeValue{"PK": item["PK"], "SK": item["SK"]}
	}
	return keys
}

// withBucket returns a copy of item with the expiry bucket a completed key
// record at pk would have.
func withBucket(item map[string]types.AttributeValue, pk string) map[string]types.AttributeValue {
	out := map[string]types.AttributeValue{dynamostore.ExpiryBucketAttribute: s(dynamostore.ExpiryBucket(sharedSchema, pk))}
	for k, v := range item {
		out[k] = v
	}
	return out
}

// item returns the item at key, nil when there is none.
func (e *sharedEnv) item(t *testing.T, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	t.Helper()
	out, err := e.ep.Client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: &e.table, Key: key, ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	return out.Item
}

func TestSharedTableRunsTheLifecycleWithThePaymentInTheSameTransaction(t *testing.T) {
	e := newSharedEnv(t)
	ctx := context.Background()
	st := e.store()
	req := request("order-1", "a")

	c, err := st.Claim(ctx, req)
	require.NoError(t, err)
	require.Equal(t, dynamostore.Acquired, c.Result)

	again, err := st.Claim(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, dynamostore.InFlight, again.Result)

	tx := txn.New()
	tx.Put(types.Put{TableName: &e.table, Item: payment("CUSTOMER#1", "PAYMENT#order-1", nil),
		ConditionExpression: aws.String("attribute_not_exists(PK)")})
	e.calls.Reset()
	_, err = st.Commit(ctx, c, created, tx)
	require.NoError(t, err)
	assert.Equal(t, "TransactWriteItems=1", e.calls.String(), "the key record and the payment, one table, one transaction")
	assert.NotNil(t, e.item(t, map[string]types.AttributeValue{"PK": s("CUSTOMER#1"), "SK": s("PAYMENT#order-1")}))

	replay, err := st.Claim(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Replay, replay.Result)
	assert.Equal(t, created.Body, replay.Record.Response.Body)

	other, err := st.Claim(ctx, request("order-1", "b"))
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Mismatch, other.Result)

	// The record is where the schema says, with the marker and the
	// application's TTL attribute.
	raw := e.item(t, map[string]types.AttributeValue{"PK": s("idemkey#8:tenant-aorder-1"), "SK": s("IDEMKEY")})
	require.NotNil(t, raw)
	assert.Equal(t, s("2"), raw["idemkey"])
	assert.Equal(t, n(e.clock.Now().Add(dynamostore.DefaultLease+dynamostore.DefaultRetention).Unix()), raw["ttl"],
		"the claim's lock end plus the retention, kept by the commit")
	assert.NotContains(t, raw, "exp")
	assert.NotContains(t, raw, "pk")

	// Retention passes: the key is claimable again.
	e.clock.Advance(dynamostore.DefaultLease + dynamostore.DefaultRetention + 2*time.Second)
	_, err = st.Get(ctx, "tenant-a", "order-1")
	assert.ErrorIs(t, err, dynamostore.ErrNotFound)
	fresh, err := st.Claim(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Acquired, fresh.Result)
	require.NoError(t, st.Release(ctx, fresh))
	_, err = st.Get(ctx, "tenant-a", "order-1")
	assert.ErrorIs(t, err, dynamostore.ErrNotFound)
}

func TestSharedTableStoresWithDifferentPrefixesNeverSeeEachOthersKeys(t *testing.T) {
	e := newSharedEnv(t)
	ctx := context.Background()
	a := e.store()
	b := e.store(func(o *dynamostore.Options) { o.Schema.Prefix = "billing" })

	ca, err := a.Claim(ctx, request("k", "a"))
	require.NoError(t, err)
	_, err = a.Commit(ctx, ca, created, nil)
	require.NoError(t, err)

	cb, err := b.Claim(ctx, request("k", "other body"))
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Acquired, cb.Result, "the same (scope, key) under another prefix is another record")
	_, err = b.Get(ctx, "tenant-a", "k")
	require.NoError(t, err)
	rec, err := a.Get(ctx, "tenant-a", "k")
	require.NoError(t, err)
	assert.Equal(t, dynamostore.StateCompleted, rec.State)
}

func TestSharedTableClaimNeverOverwritesAnApplicationItemAtItsKey(t *testing.T) {
	e := newSharedEnv(t)
	ctx := context.Background()
	// An item that breaks the rule (it sits at a key record's key) and
	// looks expired: the claim must not replace it.
	past := e.clock.Now().Add(-time.Hour).Unix()
	squatter := payment("idemkey#8:tenant-ak", "IDEMKEY", map[string]types.AttributeValue{"ttl": n(past)})
	_, err := e.ep.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &e.table, Item: squatter})
	require.NoError(t, err)

	_, err = e.store().Claim(ctx, request("k", "a"))
	var recErr *dynamostore.RecordError
	require.ErrorAs(t, err, &recErr, "the item is not a key record")
	assert.Equal(t, squatter, e.item(t, map[string]types.AttributeValue{"PK": squatter["PK"], "SK": squatter["SK"]}), "left as it was")
}

func TestSharedTableSweeperEvictsKeyRecordsAndNeverTouchesAPayment(t *testing.T) {
	inSharedModes(t, testSharedTableSweeperEvictsKeyRecordsAndNeverTouchesAPayment)
}

func testSharedTableSweeperEvictsKeyRecordsAndNeverTouchesAPayment(t *testing.T, e *sharedEnv) {
	ctx := context.Background()
	users := e.userItems(t)
	before := make([]map[string]types.AttributeValue, len(users))
	for i, k := range users {
		before[i] = e.item(t, k)
	}
	st := e.store(func(o *dynamostore.Options) { o.Retention, o.Lease = time.Hour, time.Minute })
	// Two records that will have expired, one stuck, one live.
	for _, k := range []string{"old-1", "old-2"} {
		c, err := st.Claim(ctx, request(k, k))
		require.NoError(t, err)
		_, err = st.Commit(ctx, c, created, nil)
		require.NoError(t, err)
	}
	e.clock.Advance(2 * time.Hour)
	_, err := st.Claim(ctx, request("stuck", "s"))
	require.NoError(t, err)
	live, err := st.Claim(ctx, request("live", "l"))
	require.NoError(t, err)
	_, err = st.Commit(ctx, live, created, nil)
	require.NoError(t, err)
	e.clock.Advance(2 * time.Minute) // the stuck claim's lock expires

	e.calls.Reset()
	r, err := e.sweeper(e.client).Sweep(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, int64(2), r.Evicted)
	removed := 3
	if e.mode == dynamostore.SweepIndex {
		// The stuck record is not read before its exp: it is one of the
		// next records of the shards, as the live one is.
		removed = 2
		assert.Zero(t, r.Reclaimed)
		shards := map[string]bool{}
		for _, key := range []string{"stuck", "live"} {
			shards[dynamostore.ExpiryBucket(sharedSchema, "idemkey#"+keyschema.PartitionKey("tenant-a", key))] = true
		}
		assert.Equal(t, int64(len(shards)), r.LiveKeys)
	} else {
		assert.Equal(t, int64(1), r.Reclaimed)
		assert.Equal(t, int64(1), r.LiveKeys)
	}
	if e.mode == dynamostore.SweepIndex {
		assert.Equal(t, int64(1), r.Foreign, "the one application item in the index is foreign; the others are never read")
	} else {
		assert.Equal(t, int64(len(users)), r.Foreign, "every application item is foreign")
	}
	assert.Zero(t, r.Skipped)
	assert.Equal(t, removed, e.calls.Count("DeleteItem"))
	for i, k := range users {
		assert.Equal(t, before[i], e.item(t, k), "application item %v untouched", k["PK"])
	}
	_, err = st.Get(ctx, "tenant-a", "live")
	assert.NoError(t, err)

	// Resume keeps its cursor inside the prefix; the sweep counts it as
	// foreign and never deletes it, nor any application item.
	rs, err := e.sweeper(e.client).Resume(ctx)
	require.NoError(t, err)
	assert.Zero(t, rs.Evicted+rs.Reclaimed)
	for i, k := range users {
		assert.Equal(t, before[i], e.item(t, k))
	}
}

// swapBeforeDelete replaces the item a sweep is about to delete with an
// application item at the same key, with an expired-looking TTL: the
// race the delete's own condition must win.
type swapBeforeDelete struct {
	dynamostore.SweepClient
	t     *testing.T
	table string
	past  int64
	swaps int
}

func (c *swapBeforeDelete) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	item := map[string]types.AttributeValue{"amount": n(1), "ttl": n(c.past), "state": s("completed")}
	for k, v := range in.Key {
		item[k] = v
	}
	_, err := c.SweepClient.PutItem(ctx, &dynamodb.PutItemInput{TableName: &c.table, Item: item})
	require.NoError(c.t, err)
	c.swaps++
	return c.SweepClient.DeleteItem(ctx, in, o...)
}

func TestSharedTableSweepDeleteIsConditionedOnTheMarkerSoAnItemReplacedSinceTheScanSurvives(t *testing.T) {
	inSharedModes(t, testSharedTableSweepDeleteIsConditionedOnTheMarkerSoAnItemReplacedSinceTheScanSurvives)
}

func testSharedTableSweepDeleteIsConditionedOnTheMarkerSoAnItemReplacedSinceTheScanSurvives(t *testing.T, e *sharedEnv) {
	ctx := context.Background()
	st := e.store(func(o *dynamostore.Options) { o.Retention, o.Lease = time.Hour, time.Minute })
	c, err := st.Claim(ctx, request("k", "a"))
	require.NoError(t, err)
	_, err = st.Commit(ctx, c, created, nil)
	require.NoError(t, err)
	e.clock.Advance(2 * time.Hour)

	swap := &swapBeforeDelete{SweepClient: e.client, t: t, table: e.table, past: e.clock.Now().Add(-time.Hour).Unix()}
	r, err := e.sweeper(swap).Sweep(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, 1, swap.swaps)
	assert.Equal(t, int64(1), r.Skipped, "the delete's condition failed")
	assert.Zero(t, r.Evicted)
	got := e.item(t, map[string]types.AttributeValue{"PK": s("idemkey#8:tenant-ak"), "SK": s("IDEMKEY")})
	require.NotNil(t, got, "the application item that took the key's place is still there")
	assert.Equal(t, n(1), got["amount"])
}

func TestSharedTableReleaseKeyAndListenersFollowTheSchema(t *testing.T) {
	e := newSharedEnv(t)
	ctx := context.Background()
	st := e.store()
	c, err := st.Claim(ctx, request("k", "a"))
	require.NoError(t, err)
	_, err = st.ReleaseKey(ctx, "tenant-a", "k")
	assert.ErrorIs(t, err, dynamostore.ErrLockHeld)
	rec, err := st.ReleaseKey(ctx, "tenant-a", "k", func(o *dynamostore.ReleaseKeyOptions) { o.InProgress = true })
	require.NoError(t, err)
	assert.Equal(t, c.Record.LockToken, rec.LockToken)
	assert.Nil(t, e.item(t, map[string]types.AttributeValue{"PK": s("idemkey#8:tenant-ak"), "SK": s("IDEMKEY")}))
}

func TestEnsureSchemaTableCreatesTheTableWithTheSchemaAndTTL(t *testing.T) {
	e := newSharedEnv(t) // created by EnsureSchemaTable
	ctx := context.Background()
	desc, err := e.ep.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &e.table})
	require.NoError(t, err)
	keys := map[types.KeyType]string{}
	for _, k := range desc.Table.KeySchema {
		keys[k.KeyType] = aws.ToString(k.AttributeName)
	}
	assert.Equal(t, map[types.KeyType]string{types.KeyTypeHash: "PK", types.KeyTypeRange: "SK"}, keys)
	ttl, err := e.ep.Client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &e.table})
	require.NoError(t, err)
	assert.Equal(t, "ttl", aws.ToString(ttl.TimeToLiveDescription.AttributeName))
	// Idempotent: a second call checks and succeeds.
	require.NoError(t, dynamostore.EnsureSchemaTable(ctx, e.ep.Client, e.table, sharedSchema, 0))
}

// createAppTable creates the application's own table, with key PK, SK and,
// if ttlAttr is set, TTL on it.
func createAppTable(t *testing.T, ep *localstack.Endpoint, ttlAttr string) string {
	t.Helper()
	ctx := context.Background()
	table := localstack.TableName("app")
	_, err := ep.Client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   &table,
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("PK"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("SK"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("PK"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("SK"), KeyType: types.KeyTypeRange},
		},
	})
	require.NoError(t, err)
	ddbtest.DeleteOnCleanup(t, ep.Client, table)
	ddbtest.WaitActive(t, ep.Client, table)
	if ttlAttr != "" {
		_, err = ep.Client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: &table,
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: &ttlAttr, Enabled: aws.Bool(true)}})
		require.NoError(t, err)
	}
	return table
}

func TestEnsureSchemaTableNamesBothAttributesWhenTheTablesTTLIsElsewhere(t *testing.T) {
	ep := localstack.ForTest(t)
	table := createAppTable(t, ep, "expiresAt")
	err := dynamostore.EnsureSchemaTable(context.Background(), ep.Client, table, sharedSchema, 0)
	require.ErrorIs(t, err, dynamostore.ErrTableSchema)
	assert.Contains(t, err.Error(), `"expiresAt"`)
	assert.Contains(t, err.Error(), `"ttl"`)

	fixed := sharedSchema
	fixed.TTLAttribute = "expiresAt"
	assert.NoError(t, dynamostore.EnsureSchemaTable(context.Background(), ep.Client, table, fixed, 0), "the table's own TTL attribute fits")
}

func TestEnsureSchemaTableNeverEnablesTTLOnATableItDidNotCreate(t *testing.T) {
	ep := localstack.ForTest(t)
	table := createAppTable(t, ep, "")
	calls := ddbtest.NewCounter()
	err := dynamostore.EnsureSchemaTable(context.Background(), ep.NewClient(calls.Install), table, sharedSchema, 0)
	require.ErrorIs(t, err, dynamostore.ErrTableSchema)
	assert.Contains(t, err.Error(), "TTL off")
	assert.Zero(t, calls.Count("UpdateTimeToLive"))
	assert.Zero(t, calls.Count("CreateTable"))
	ttl, err := ep.Client.DescribeTimeToLive(context.Background(), &dynamodb.DescribeTimeToLiveInput{TableName: &table})
	require.NoError(t, err)
	assert.NotEqual(t, types.TimeToLiveStatusEnabled, ttl.TimeToLiveDescription.TimeToLiveStatus)
}

func TestEnsureSchemaTableRefusesATableWithOtherKeys(t *testing.T) {
	ep := localstack.ForTest(t)
	table := createAppTable(t, ep, "ttl")
	for name, schema := range map[string]dynamostore.KeySchema{
		"other partition key": {PartitionKey: "pk", SortKey: "SK", SortKeyValue: "X", Prefix: "idemkey", TTLAttribute: "ttl"},
		"no sort key":         {PartitionKey: "PK", Prefix: "idemkey", TTLAttribute: "ttl"},
		"default schema":      {},
	} {
		err := dynamostore.EnsureSchemaTable(context.Background(), ep.Client, table, schema, 0)
		assert.ErrorIs(t, err, dynamostore.ErrTableSchema, name)
	}
}

func TestKeySchemaValidationPanicsAtConstruction(t *testing.T) {
	client := dynamodb.New(dynamodb.Options{Region: "us-east-1"})
	for name, tc := range map[string]struct {
		schema dynamostore.KeySchema
		says   string
	}{
		"sort key without value":   {dynamostore.KeySchema{PartitionKey: "PK", SortKey: "SK", Prefix: "p"}, "SortKeyValue"},
		"value without sort key":   {dynamostore.KeySchema{SortKeyValue: "x", Prefix: "p"}, "without a SortKey"},
		"shared without prefix":    {dynamostore.KeySchema{PartitionKey: "PK", SortKey: "SK", SortKeyValue: "x"}, "needs a Prefix"},
		"other pk without prefix":  {dynamostore.KeySchema{PartitionKey: "PK"}, "needs a Prefix"},
		"prefix with #":            {dynamostore.KeySchema{Prefix: "a#b"}, "'#'"},
		"prefix with :":            {dynamostore.KeySchema{Prefix: "3:x"}, "':'"},
		"prefix with space":        {dynamostore.KeySchema{Prefix: "a b"}, "printable"},
		"ttl is the partition key": {dynamostore.KeySchema{PartitionKey: "PK", TTLAttribute: "PK", Prefix: "p"}, "key attribute"},
		"ttl is the sort key":      {dynamostore.KeySchema{PartitionKey: "PK", SortKey: "SK", SortKeyValue: "x", TTLAttribute: "SK", Prefix: "p"}, "key attribute"},
		"sort key is the pk":       {dynamostore.KeySchema{PartitionKey: "PK", SortKey: "PK", SortKeyValue: "x", Prefix: "p"}, "is the PartitionKey"},
		"key named like a field":   {dynamostore.KeySchema{PartitionKey: "s", Prefix: "p"}, `"s"`},
		"ttl named like a field":   {dynamostore.KeySchema{TTLAttribute: "e"}, `"e"`},
		"marker as a key":          {dynamostore.KeySchema{PartitionKey: "idemkey", Prefix: "p"}, `"idemkey"`},
		"prefix too long":          {dynamostore.KeySchema{Prefix: strings.Repeat("p", 65)}, "more than 64"},
	} {
		err := tc.schema.Validate()
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), tc.says, name)
		assert.PanicsWithValue(t, "dynamostore: New: "+err.Error(), func() {
			dynamostore.New(client, "t", func(o *dynamostore.Options) { o.Schema = tc.schema })
		}, name)
		assert.Panics(t, func() {
			dynamostore.NewSweeper(client, "t", func(o *dynamostore.SweepOptions) { o.Schema = tc.schema })
		}, name)
	}
	assert.NoError(t, dynamostore.KeySchema{}.Validate())
	assert.NoError(t, sharedSchema.Validate())
	assert.NoError(t, dynamostore.KeySchema{Prefix: "idemkey"}.Validate(), "a prefix on the default names")
}

func TestStoreOptionsReportTheEffectiveSchema(t *testing.T) {
	client := dynamodb.New(dynamodb.Options{Region: "us-east-1"})
	got := dynamostore.New(client, "t").Options().Schema
	assert.Equal(t, dynamostore.KeySchema{PartitionKey: "pk", TTLAttribute: "exp"}, got)
	assert.Equal(t, sharedSchema, dynamostore.New(client, "t", func(o *dynamostore.Options) { o.Schema = sharedSchema }).Options().Schema)
}
