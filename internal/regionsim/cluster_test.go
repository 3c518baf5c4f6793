package regionsim_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/regionsim"
)

const table = "items"

type fixture struct {
	t       *testing.T
	clock   *ddbtest.Clock
	cluster *regionsim.Cluster
}

func newFixture(t *testing.T, lag time.Duration, shared bool) *fixture {
	t.Helper()
	f := &fixture{t: t, clock: ddbtest.NewClock(regionsim.Epoch)}
	c, err := regionsim.Start(context.Background(), func(o *regionsim.Options) {
		o.Lag = lag
		o.Clock = f.clock.Now
		o.Shared = shared
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.CreateGlobalTable(context.Background(), table, "id"))
	f.cluster = c
	return f
}

func (f *fixture) client(region string) *dynamodb.Client { return f.cluster.Region(region).Client }

func (f *fixture) advance(d time.Duration) int {
	f.t.Helper()
	f.clock.Advance(d)
	n, err := f.cluster.Pump(context.Background())
	require.NoError(f.t, err)
	return n
}

func (f *fixture) put(region, id, value string, cond string) error {
	in := &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		"id": &types.AttributeValueMemberS{Value: id}, "v": &types.AttributeValueMemberS{Value: value},
	}}
	if cond != "" {
		in.ConditionExpression = aws.String(cond)
	}
	_, err := f.client(region).PutItem(context.Background(), in)
	return err
}

// value returns the item's v in region, read past the region's front, or
// "" when the item is absent.
func (f *fixture) value(region, id string) string {
	f.t.Helper()
	items, err := f.cluster.Items(context.Background(), region, table)
	require.NoError(f.t, err)
	for _, it := range items {
		if it["id"].(*types.AttributeValueMemberS).Value == id {
			return it["v"].(*types.AttributeValueMemberS).Value
		}
	}
	return ""
}

func TestWriteReachesOtherRegionsOnlyAfterTheLag(t *testing.T) {
	f := newFixture(t, time.Second, false)
	require.NoError(t, f.put("us-east-1", "a", "1", ""))
	assert.Equal(t, "1", f.value("us-east-1", "a"))
	assert.Equal(t, 2, f.cluster.Pending(), "one change per other region")

	assert.Zero(t, f.advance(999*time.Millisecond))
	assert.Empty(t, f.value("eu-west-1", "a"))
	assert.Equal(t, 2, f.advance(time.Millisecond))
	assert.Equal(t, "1", f.value("eu-west-1", "a"))
	assert.Equal(t, "1", f.value("ap-southeast-2", "a"))
	assert.Zero(t, f.cluster.Pending())
	assert.Zero(t, f.advance(time.Hour), "a replicated write is not replicated again")
}

func TestConditionalWriteIsCheckedAgainstTheLocalReplicaOnly(t *testing.T) {
	f := newFixture(t, time.Second, false)
	cond := "attribute_not_exists(id)"
	require.NoError(t, f.put("us-east-1", "a", "from-us", cond))
	require.NoError(t, f.put("eu-west-1", "a", "from-eu", cond), "the EU replica has not seen the US write yet")
	var ccf *types.ConditionalCheckFailedException
	assert.ErrorAs(t, f.put("us-east-1", "a", "again", cond), &ccf, "the US replica has")
}

func TestConcurrentWritesResolveLastWriterWins(t *testing.T) {
	f := newFixture(t, time.Second, false)
	require.NoError(t, f.put("us-east-1", "a", "first", ""))
	f.advance(10 * time.Millisecond)
	require.NoError(t, f.put("eu-west-1", "a", "second", ""))
	f.advance(2 * time.Second)
	for _, r := range f.cluster.Names() {
		assert.Equal(t, "second", f.value(r, "a"), "region %s", r)
	}
	// The losing write left no trace anywhere.
	items, err := f.cluster.Items(context.Background(), "us-east-1", table)
	require.NoError(t, err)
	assert.Len(t, items, 1)
}

func TestUpdatesDeletesAndTransactionsAreReplicated(t *testing.T) {
	f := newFixture(t, time.Second, false)
	ctx := context.Background()
	_, err := f.client("us-east-1").TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"id": &types.AttributeValueMemberS{Value: "t1"}, "v": &types.AttributeValueMemberS{Value: "x"}}}},
		{Put: &types.Put{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"id": &types.AttributeValueMemberS{Value: "t2"}, "v": &types.AttributeValueMemberS{Value: "y"}}}},
	}})
	require.NoError(t, err)
	f.advance(time.Second)
	assert.Equal(t, "x", f.value("ap-southeast-2", "t1"))
	assert.Equal(t, "y", f.value("ap-southeast-2", "t2"))

	_, err = f.client("eu-west-1").UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table),
		Key:              map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "t1"}},
		UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberS{Value: "z"}}})
	require.NoError(t, err)
	_, err = f.client("eu-west-1").DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "t2"}}})
	require.NoError(t, err)
	f.advance(time.Second)
	assert.Equal(t, "z", f.value("us-east-1", "t1"))
	assert.Empty(t, f.value("us-east-1", "t2"))
}

func TestCutOffRegionRefusesConnectionsAndHoldsReplication(t *testing.T) {
	f := newFixture(t, time.Second, false)
	require.NoError(t, f.put("us-east-1", "before", "1", ""))
	f.cluster.CutOff("us-east-1")
	assert.True(t, f.cluster.Down("us-east-1"))

	err := f.put("us-east-1", "during", "1", "")
	var op *net.OpError
	require.ErrorAs(t, err, &op, "the SDK client gets a connection error")
	assert.ErrorIs(t, err, regionsim.ErrCutOff)

	require.NoError(t, f.put("eu-west-1", "elsewhere", "2", ""))
	f.advance(5 * time.Second)
	assert.Empty(t, f.value("eu-west-1", "before"), "what the dark region committed stays there")
	assert.Equal(t, "2", f.value("ap-southeast-2", "elsewhere"))
	assert.Empty(t, f.value("us-east-1", "elsewhere"), "nothing reaches the dark region")

	f.cluster.Restore("us-east-1")
	f.advance(0)
	assert.Equal(t, "1", f.value("eu-west-1", "before"))
	assert.Equal(t, "2", f.value("us-east-1", "elsewhere"))
	require.NoError(t, f.put("us-east-1", "after", "3", ""))
}

func TestSharedClusterHasOneCopy(t *testing.T) {
	f := newFixture(t, time.Hour, true)
	cond := "attribute_not_exists(id)"
	require.NoError(t, f.put("us-east-1", "a", "1", cond))
	var ccf *types.ConditionalCheckFailedException
	assert.ErrorAs(t, f.put("eu-west-1", "a", "2", cond), &ccf, "every region sees every write at once")
	assert.Zero(t, f.cluster.Pending(), "nothing to replicate")
	f.cluster.CutOff("eu-west-1")
	var op *net.OpError
	assert.ErrorAs(t, f.put("eu-west-1", "b", "1", ""), &op)
	require.NoError(t, f.put("ap-southeast-2", "b", "1", ""))
}
