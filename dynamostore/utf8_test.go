package dynamostore_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/keyschema"
	"github.com/idemkey/idemkey/txn"
)

// DynamoDB strings are UTF-8, and the SDK replaces invalid bytes on the
// wire: a schema whose sort key value or attribute names are not UTF-8
// would write records that no read finds as written (every retry a
// corrupt record), so Validate, and with it New, refuses it; so do New
// and NewSweeper a Region that is not.
func TestSchemaAndRegionThatAreNotUTF8AreRefused(t *testing.T) {
	for _, schema := range []dynamostore.KeySchema{
		{PartitionKey: "PK", SortKey: "SK", SortKeyValue: "IDEM\xffKEY", Prefix: "idemkey", TTLAttribute: "ttl"},
		{PartitionKey: "P\xffK", Prefix: "idemkey", TTLAttribute: "ttl"},
		{PartitionKey: "PK", SortKey: "S\xffK", SortKeyValue: "idemkey", Prefix: "idemkey"},
		{TTLAttribute: "t\xfftl"},
	} {
		assert.ErrorContains(t, schema.Validate(), "UTF-8", "%+v", schema)
	}
	e := newEnv(t)
	assert.PanicsWithValue(t, `dynamostore: New: Region "eu-\xff" is not valid UTF-8: DynamoDB would store another string, which no Sweeper of that region matches`,
		func() { e.store(nil, func(o *dynamostore.Options) { o.Region = "eu-\xff" }) })
	assert.Panics(t, func() {
		dynamostore.NewSweeper(e.client, e.table, func(o *dynamostore.SweepOptions) { o.Region = "eu-\xff" })
	})
}

// A Method or Path that is not UTF-8 is stored as DynamoDB stores it, and
// the claim's Record says so: what an operator reads back is what the
// claim reported.
func TestPathThatIsNotUTF8IsRecordedAsStored(t *testing.T) {
	e := newEnv(t)
	st := e.store(nil)
	ctx := context.Background()
	req := request("k1", "a")
	req.Method, req.Path = "P\xfeST", "/p\xff"
	c, err := st.Claim(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, "P\uFFFDST", c.Record.Method)
	assert.Equal(t, "/p\uFFFD", c.Record.Path)
	got, err := st.Get(ctx, "tenant-a", "k1")
	require.NoError(t, err)
	assert.Equal(t, c.Record.Method, got.Method)
	assert.Equal(t, c.Record.Path, got.Path)
}

// A response header whose name is not UTF-8 (no header net/http sends) is
// not stored, and Commit's record says so: two such names no longer merge
// into one stored under U+FFFD.
func TestHeaderNameThatIsNotUTF8IsNotStored(t *testing.T) {
	e := newEnv(t)
	st := e.store(nil)
	ctx := context.Background()
	c, err := st.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	resp := dynamostore.Response{Status: 201, Header: http.Header{"X-A\xff": {"one"}, "X-A\xfe": {"two"}, "X-B": {"b"}}, Body: []byte("ok")}
	done, err := st.Commit(ctx, c, resp, nil)
	require.NoError(t, err)
	got, err := st.Get(ctx, "tenant-a", "k1")
	require.NoError(t, err)
	assert.Equal(t, http.Header{"X-B": {"b"}}, got.Response.Header)
	assert.Equal(t, got.Response.Header, done.Response.Header)
}

// failingDelete fails every DeleteItem without sending it.
type failingDelete struct{ *dynamodb.Client }

func (f failingDelete) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return nil, errors.New("connection reset")
}

// StoreError.Table names the key table of a failed ReleaseKey, as of
// every call the Store makes.
func TestReleaseKeyStoreErrorNamesTheTable(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, err := e.store(nil).Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	_, err = e.store(failingDelete{e.ep.Client}).ReleaseKey(ctx, "tenant-a", "k1", func(o *dynamostore.ReleaseKeyOptions) { o.InProgress = true })
	var se *dynamostore.StoreError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, e.table, se.Table)
}

// A staged write of another key's record (a delete that would let that
// key execute again, a put that would forge its answer) is refused as an
// invalid write, before any call, by Commit, CommitFirst and
// CommitStaged; the table named by its ARN too. A ConditionCheck, which
// writes nothing, is DynamoDB's to judge.
func TestStagedWritesOfKeyRecordsAreRefused(t *testing.T) {
	e := newEnv(t)
	st := e.store(nil)
	ctx := context.Background()
	c1, err := st.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	_, err = st.Commit(ctx, c1, created, nil)
	require.NoError(t, err)
	k1 := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: keyschema.PartitionKey("tenant-a", "k1")}}
	arn := "arn:aws:dynamodb:us-east-1:123456789012:table/" + e.table

	for name, stage := range map[string]func(*txn.Tx){
		"delete": func(tx *txn.Tx) { tx.Delete(types.Delete{TableName: aws.String(e.table), Key: k1}) },
		"put": func(tx *txn.Tx) {
			tx.Put(types.Put{TableName: aws.String(arn), Item: map[string]types.AttributeValue{"pk": k1["pk"], "state": &types.AttributeValueMemberS{Value: "completed"}}})
		},
		"update": func(tx *txn.Tx) {
			tx.Update(types.Update{TableName: aws.String(e.table), Key: k1, UpdateExpression: aws.String("SET #s = :s"),
				ExpressionAttributeNames: map[string]string{"#s": "status"}, ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberN{Value: "500"}}})
		},
	} {
		before := e.calls.Total()
		tx := txn.New()
		tx.Put(e.effectPut("e-" + name))
		stage(tx)
		c2, err := st.Claim(ctx, request("k2-"+name, "b"))
		require.NoError(t, err)
		_, err = st.Commit(ctx, c2, created, tx)
		assert.ErrorIs(t, err, txn.ErrValidation, name)
		_, err = st.CommitFirst(ctx, request("k3-"+name, "c"), created, tx)
		assert.ErrorIs(t, err, txn.ErrValidation, name)
		assert.ErrorIs(t, st.CommitStaged(ctx, tx), txn.ErrValidation, name)
		assert.Equal(t, before+1, e.calls.Total(), "%s: only the claim was sent", name)
		assert.False(t, e.effectExists(t, "e-"+name), name)
	}
	again, err := st.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Replay, again.Result, "k1's record is intact")
}
