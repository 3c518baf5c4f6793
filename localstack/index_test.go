package localstack_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/localstack"
)

var expiryIndex = types.GlobalSecondaryIndex{
	IndexName: aws.String("expiry"),
	KeySchema: []types.KeySchemaElement{
		{AttributeName: aws.String("exp_bucket"), KeyType: types.KeyTypeHash},
		{AttributeName: aws.String("exp"), KeyType: types.KeyTypeRange},
	},
	Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
}

var expiryAttributes = []types.AttributeDefinition{
	{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
	{AttributeName: aws.String("exp_bucket"), AttributeType: types.ScalarAttributeTypeS},
	{AttributeName: aws.String("exp"), AttributeType: types.ScalarAttributeTypeN},
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func num(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

// keyTable creates a key table, with the expiry index when indexed, and
// deletes it when the test ends.
func keyTable(t *testing.T, ep *localstack.Endpoint, indexed bool) string {
	t.Helper()
	table := localstack.TableName("gsi")
	in := &dynamodb.CreateTableInput{
		TableName: &table, BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: expiryAttributes[:1],
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	}
	if indexed {
		in.AttributeDefinitions = expiryAttributes
		in.GlobalSecondaryIndexes = []types.GlobalSecondaryIndex{expiryIndex}
	}
	_, err := ep.Client.CreateTable(context.Background(), in)
	require.NoError(t, err)
	ddbtest.DeleteOnCleanup(t, ep.Client, table)
	return table
}

// queryAll reads a bucket's entries with exp below before, in pages of
// limit, calling between (if not nil) after each page.
func queryAll(t *testing.T, c *dynamodb.Client, table, bucket, before string, limit int32, forward bool, between func(page []map[string]types.AttributeValue)) []string {
	t.Helper()
	in := &dynamodb.QueryInput{
		TableName: &table, IndexName: expiryIndex.IndexName, Limit: aws.Int32(limit), ScanIndexForward: aws.Bool(forward),
		KeyConditionExpression:    aws.String("#b = :b AND #e < :t"),
		ExpressionAttributeNames:  map[string]string{"#b": "exp_bucket", "#e": "exp"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":b": str(bucket), ":t": num(before)},
	}
	var got []string
	for range 100 {
		out, err := c.Query(context.Background(), in)
		require.NoError(t, err)
		require.LessOrEqual(t, len(out.Items), int(limit))
		for _, it := range out.Items {
			got = append(got, it["pk"].(*types.AttributeValueMemberS).Value+"@"+it["exp"].(*types.AttributeValueMemberN).Value)
		}
		if between != nil {
			between(out.Items)
		}
		if len(out.LastEvaluatedKey) == 0 {
			return got
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	t.Fatal("no end after 100 pages")
	return nil
}

func TestQueryOnGlobalSecondaryIndexOrdersBySortKeyValueAndPages(t *testing.T) {
	ep := localstack.ForTest(t)
	table := keyTable(t, ep, true)
	// exp values of different lengths: ordered as numbers, 9 before 10.
	for i, exp := range []string{"100", "9", "1000", "10", "99", "5000", "7"} {
		putItemT(t, ep.Client, table, map[string]types.AttributeValue{"pk": str(fmt.Sprintf("k%d", i)), "exp_bucket": str("c01"), "exp": num(exp), "body": str("x")})
	}
	putItemT(t, ep.Client, table, map[string]types.AttributeValue{"pk": str("other"), "exp_bucket": str("c02"), "exp": num("8")})
	putItemT(t, ep.Client, table, map[string]types.AttributeValue{"pk": str("sparse"), "exp": num("8")}) // no bucket: not in the index

	want := []string{"k6@7", "k1@9", "k3@10", "k4@99", "k0@100", "k2@1000"}
	assert.Equal(t, want, queryAll(t, ep.Client, table, "c01", "5000", 2, true, nil))
	assert.Equal(t, []string{"k2@1000", "k0@100", "k4@99", "k3@10", "k1@9", "k6@7"}, queryAll(t, ep.Client, table, "c01", "5000", 4, false, nil))
	assert.Equal(t, []string{"other@8"}, queryAll(t, ep.Client, table, "c02", "5000", 10, true, nil))

	// The sweeper's pattern: delete each page's items before asking for the
	// next page, whose ExclusiveStartKey then names a deleted item.
	deleted := queryAll(t, ep.Client, table, "c01", "5000", 2, true, func(page []map[string]types.AttributeValue) {
		for _, it := range page {
			_, err := ep.Client.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: &table, Key: map[string]types.AttributeValue{"pk": it["pk"]}})
			require.NoError(t, err)
		}
	})
	assert.Equal(t, want, deleted)
	assert.Empty(t, queryAll(t, ep.Client, table, "c01", "5000", 2, true, nil))

	_, err := ep.Client.Query(context.Background(), &dynamodb.QueryInput{
		TableName: &table, IndexName: expiryIndex.IndexName, ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("exp_bucket = :b"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":b": str("c01")},
	})
	assert.Error(t, err, "consistent reads of a global secondary index are refused")
}

func TestUpdateTableAddsAGlobalSecondaryIndexOverExistingItems(t *testing.T) {
	ep := localstack.ForTest(t)
	ctx := context.Background()
	table := keyTable(t, ep, false)
	for i := range 5 {
		putItemT(t, ep.Client, table, map[string]types.AttributeValue{"pk": str(fmt.Sprintf("k%d", i)), "exp_bucket": str("c01"), "exp": num(fmt.Sprint(100 + i))})
	}
	_, err := ep.Client.UpdateTable(ctx, &dynamodb.UpdateTableInput{
		TableName:            &table,
		AttributeDefinitions: expiryAttributes,
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
			IndexName: expiryIndex.IndexName, KeySchema: expiryIndex.KeySchema, Projection: expiryIndex.Projection,
		}}},
	})
	require.NoError(t, err)
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := ep.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &table})
		require.NoError(t, err)
		require.Len(t, out.Table.GlobalSecondaryIndexes, 1)
		gsi := out.Table.GlobalSecondaryIndexes[0]
		assert.Equal(t, expiryIndex.KeySchema[0].AttributeName, gsi.KeySchema[0].AttributeName)
		if out.Table.TableStatus == types.TableStatusActive && gsi.IndexStatus == types.IndexStatusActive {
			break
		}
		require.True(t, time.Now().Before(deadline), "index %s still %s", aws.ToString(gsi.IndexName), gsi.IndexStatus)
		time.Sleep(200 * time.Millisecond)
	}
	putItemT(t, ep.Client, table, map[string]types.AttributeValue{"pk": str("new"), "exp_bucket": str("c01"), "exp": num("50")})
	assert.Equal(t, []string{"new@50", "k0@100", "k1@101", "k2@102", "k3@103", "k4@104"}, queryAll(t, ep.Client, table, "c01", "1000", 4, true, nil))
}

func TestConsumedCapacityCountsIndexWritesAndIndexEntriesRead(t *testing.T) {
	ep := localstack.ForTest(t, func(o *localstack.Options) { o.Embedded = true })
	c := ep.Client
	ctx := context.Background()
	table := keyTable(t, ep, true)
	indexes := types.ReturnConsumedCapacityIndexes
	type cost struct{ total, table, index float64 }
	costOf := func(cc *types.ConsumedCapacity) cost {
		require.NotNil(t, cc)
		got := cost{total: aws.ToFloat64(cc.CapacityUnits), table: aws.ToFloat64(cc.Table.CapacityUnits)}
		if u, ok := cc.GlobalSecondaryIndexes["expiry"]; ok {
			got.index = aws.ToFloat64(u.CapacityUnits)
		}
		return got
	}
	key := map[string]types.AttributeValue{"pk": str("a")}
	big := strings.Repeat("x", 1500) // the item exceeds 1 KB; its index entry does not

	put, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, ReturnConsumedCapacity: indexes,
		Item: map[string]types.AttributeValue{"pk": str("a"), "exp_bucket": str("p01"), "exp": num("100"), "body": str(big)}})
	require.NoError(t, err)
	assert.Equal(t, cost{3, 2, 1}, costOf(put.ConsumedCapacity), "a new item in the index: one index write")

	update := func(expr string, values map[string]types.AttributeValue) cost {
		out, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &table, Key: key, ReturnConsumedCapacity: indexes,
			UpdateExpression: aws.String(expr), ExpressionAttributeValues: values})
		require.NoError(t, err)
		return costOf(out.ConsumedCapacity)
	}
	assert.Equal(t, cost{2, 2, 0}, update("SET note = :v", map[string]types.AttributeValue{":v": str("n")}), "an attribute the index does not project: no index write")
	assert.Equal(t, cost{4, 2, 2}, update("SET exp_bucket = :b, exp = :e", map[string]types.AttributeValue{":b": str("c01"), ":e": num("200")}), "a new index key: a delete and a put")
	out, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, ReturnConsumedCapacity: indexes,
		Item: map[string]types.AttributeValue{"pk": str("a"), "exp": num("200"), "body": str(big)}})
	require.NoError(t, err)
	assert.Equal(t, cost{3, 2, 1}, costOf(out.ConsumedCapacity), "out of the index (no bucket): one delete")
	assert.Equal(t, cost{3, 2, 1}, update("SET exp_bucket = :b", map[string]types.AttributeValue{":b": str("c01")}), "back into the index: one put")

	del, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &table, Key: key, ReturnConsumedCapacity: indexes})
	require.NoError(t, err)
	assert.Equal(t, cost{3, 2, 1}, costOf(del.ConsumedCapacity), "a delete is charged the deleted item and its index entry")

	tx, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{ReturnConsumedCapacity: indexes,
		TransactItems: []types.TransactWriteItem{{Put: &types.Put{TableName: &table,
			Item: map[string]types.AttributeValue{"pk": str("b"), "exp_bucket": str("c01"), "exp": num("100")}}}}})
	require.NoError(t, err)
	require.Len(t, tx.ConsumedCapacity, 1)
	assert.Equal(t, cost{3, 2, 1}, costOf(&tx.ConsumedCapacity[0]), "a transaction doubles the table write, not the index's")

	// 100 index entries of 2+40 (pk) + 10+3 (exp_bucket) + 3+3 (exp: 3 or 4
	// digits) = 61 bytes: 6,100 bytes read, two 4 KB blocks, one read unit
	// eventually consistent. The items themselves are 1.5 KB more each.
	for i := range 100 {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: map[string]types.AttributeValue{
			"pk": str(fmt.Sprintf("%040d", i)), "exp_bucket": str("c02"), "exp": num(fmt.Sprint(200 + i)), "body": str(big)}})
		require.NoError(t, err)
	}
	q, err := c.Query(ctx, &dynamodb.QueryInput{TableName: &table, IndexName: expiryIndex.IndexName, ReturnConsumedCapacity: indexes,
		KeyConditionExpression:    aws.String("exp_bucket = :b AND exp < :t"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":b": str("c02"), ":t": num("1000")}})
	require.NoError(t, err)
	require.Len(t, q.Items, 100)
	assert.Equal(t, cost{1, 0, 1}, costOf(q.ConsumedCapacity))
	empty, err := c.Query(ctx, &dynamodb.QueryInput{TableName: &table, IndexName: expiryIndex.IndexName, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		KeyConditionExpression:    aws.String("exp_bucket = :b"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":b": str("c99")}})
	require.NoError(t, err)
	assert.Equal(t, 0.5, aws.ToFloat64(empty.ConsumedCapacity.CapacityUnits), "an empty page costs the minimum")

	// A Scan is charged the whole items it read, whatever it returns:
	// 101 items of about 1.56 KB (158 KB: 39 blocks of 4 KB, 19.5 units).
	scan, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: &table, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		ProjectionExpression: aws.String("pk")})
	require.NoError(t, err)
	require.Len(t, scan.Items, 101)
	assert.Equal(t, 19.5, aws.ToFloat64(scan.ConsumedCapacity.CapacityUnits))
}

func putItemT(t *testing.T, c *dynamodb.Client, table string, item map[string]types.AttributeValue) {
	t.Helper()
	_, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: &table, Item: item})
	require.NoError(t, err)
}
