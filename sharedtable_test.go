package idemkey_test

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/txn"
)

// singleTable is a table of the application's (PK, SK, TTL on ttl) that
// holds its orders and the key records.
var singleTable = dynamostore.KeySchema{PartitionKey: "PK", SortKey: "SK", SortKeyValue: "IDEMKEY", Prefix: "idemkey", TTLAttribute: "ttl"}

func newSingleTable(t *testing.T) (*localstack.Endpoint, *dynamodb.Client, *ddbtest.Counter, string) {
	t.Helper()
	ep := localstack.ForTest(t)
	table := localstack.TableName("app")
	require.NoError(t, dynamostore.EnsureSchemaTable(context.Background(), ep.Client, table, singleTable, 0))
	ddbtest.DeleteOnCleanup(t, ep.Client, table)
	calls := ddbtest.NewCounter()
	return ep, ep.NewClient(calls.Install), calls, table
}

// shipOrder stages the order's item in the same table as its key record.
func shipOrder(table, id string, runs *int) idemkey.Func {
	return func(ctx context.Context) (idemkey.Response, error) {
		*runs++
		tx, _ := txn.FromContext(ctx)
		tx.Put(types.Put{TableName: &table, Item: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: "ORDER#" + id}, "SK": &types.AttributeValueMemberS{Value: "SHIPMENT"},
		}, ConditionExpression: aws.String("attribute_not_exists(PK)")})
		return idemkey.Response{Status: 200, Body: []byte("shipped " + id)}, nil
	}
}

func orderRequest(id string) idemkey.Request {
	sum := sha256.Sum256([]byte(id))
	return idemkey.Request{Scope: "warehouse-7", Key: id, Method: "SHIP", Path: "/orders", Fingerprint: sum[:]}
}

func TestOneTripOnASingleTableCommitsTheKeyAndTheOrderInOneCall(t *testing.T) {
	ep, client, calls, table := newSingleTable(t)
	ctx := context.Background()
	guard := idemkey.New(dynamostore.New(client, table, func(o *dynamostore.Options) { o.Schema = singleTable }),
		func(o *idemkey.Options) { o.Mode = idemkey.OneTrip })
	runs := 0
	res, err := guard.Do(ctx, orderRequest("o-1"), shipOrder(table, "o-1", &runs))
	require.NoError(t, err)
	assert.False(t, res.Replayed)
	assert.Equal(t, "TransactWriteItems=1", calls.String())

	calls.Reset()
	again, err := guard.Do(ctx, orderRequest("o-1"), shipOrder(table, "o-1", &runs))
	require.NoError(t, err)
	assert.True(t, again.Replayed)
	assert.Equal(t, "shipped o-1", string(again.Response.Body))
	assert.Equal(t, 1, calls.Count("TransactWriteItems"), "the losing commit is answered from the winner's record")
	assert.Equal(t, 2, runs, "one-trip runs the function before it learns of the replay; its staged order is discarded")

	out, err := ep.Client.Scan(ctx, &dynamodb.ScanInput{TableName: &table})
	require.NoError(t, err)
	assert.Len(t, out.Items, 2, "one order and one key record in one table")
}

func TestCacheOnASingleTableAnswersReplaysWithoutACall(t *testing.T) {
	_, client, calls, table := newSingleTable(t)
	ctx := context.Background()
	clock := ddbtest.NewClock(time.Unix(1_800_000_000, 0))
	store := dynamostore.New(client, table, func(o *dynamostore.Options) { o.Schema = singleTable; o.Now = clock.Now })
	guard := idemkey.New(store, func(o *idemkey.Options) { o.Cache = idemkey.NewCache(10, time.Minute); o.Now = clock.Now })
	runs := 0
	_, err := guard.Do(ctx, orderRequest("o-2"), shipOrder(table, "o-2", &runs))
	require.NoError(t, err)
	calls.Reset()
	res, err := guard.Do(ctx, orderRequest("o-2"), shipOrder(table, "o-2", &runs))
	require.NoError(t, err)
	assert.True(t, res.Replayed)
	assert.Zero(t, calls.Total(), "answered from the cache")
	assert.Equal(t, 1, runs)

	// Another guard (another process) over the same table replays from
	// the record under the prefix.
	other := idemkey.New(store)
	res, err = other.Do(ctx, orderRequest("o-2"), shipOrder(table, "o-2", &runs))
	require.NoError(t, err)
	assert.True(t, res.Replayed)
	assert.Equal(t, 1, runs)
}
