package dynamostore_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
)

// rawRecord reads the item at key as DynamoDB stores it, with the random
// lock token replaced by "LOCK".
func rawRecord(t *testing.T, client *dynamodb.Client, table string, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	t.Helper()
	out, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: &table, Key: key, ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.NotNil(t, out.Item)
	require.IsType(t, &types.AttributeValueMemberS{}, out.Item["lock"])
	out.Item["lock"] = &types.AttributeValueMemberS{Value: "LOCK"}
	return out.Item
}

// The record format on the default schema is the one every existing table
// holds, plus the expiry bucket (which readers of older versions ignore):
// this pins it attribute by attribute, in both states.
func TestDefaultSchemaRecordFormatIsUnchanged(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	st := e.store(nil)
	c, err := st.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	key := map[string]types.AttributeValue{"pk": s("8:tenant-ak1")}
	now := e.clock.Now()
	inProgress := map[string]types.AttributeValue{
		"pk": s("8:tenant-ak1"), "v": n(1), "method": s("POST"), "path": s("/payments"),
		"fp": &types.AttributeValueMemberB{Value: fp("a")}, "state": s("in_progress"), "lock": s("LOCK"),
		"lock_exp": n(now.Add(dynamostore.DefaultLease).UnixMilli()), "created": n(now.UnixMilli()),
		// exp: the end of the lock plus the retention, rounded up to
		// the second; the commit keeps it.
		"exp": n((now.Add(dynamostore.DefaultLease+dynamostore.DefaultRetention).UnixMilli() + 999) / 1000),
		// The expiry bucket: shard 7 (a hash of the partition key value,
		// modulo 32), whatever the state.
		"exp_bucket": s("07"),
	}
	assert.Equal(t, inProgress, rawRecord(t, e.ep.Client, e.table, key))

	e.clock.Advance(1500)
	done := e.clock.Now()
	_, err = st.Complete(ctx, c, dynamostore.Response{Status: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"id":"p1"}`)})
	require.NoError(t, err)
	completed := map[string]types.AttributeValue{}
	for k, v := range inProgress {
		completed[k] = v
	}
	completed["state"] = s("completed")
	completed["done"] = n(done.UnixMilli())
	completed["status"] = n(201)
	completed["hdr"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		"Content-Type": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("application/json")}},
	}}
	completed["body"] = &types.AttributeValueMemberB{Value: []byte(`{"id":"p1"}`)}
	assert.Equal(t, completed, rawRecord(t, e.ep.Client, e.table, key))
}
