package dynamostore_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
)

// rawRecord reads the item at key as DynamoDB stores it, with the random
// lock token (8 bytes) replaced by "LOCK".
func rawRecord(t *testing.T, client *dynamodb.Client, table string, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	t.Helper()
	out, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: &table, Key: key, ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.NotNil(t, out.Item)
	lock, ok := out.Item["l"].(*types.AttributeValueMemberB)
	require.True(t, ok, "the lock token is a Binary")
	require.Len(t, lock.Value, 8)
	out.Item["l"] = s("LOCK")
	return out.Item
}

// The record format on the default schema, pinned attribute by attribute
// in both states, on a table swept by scan (the default) and on one swept
// by the expiry index: short names, the method left out when POST, the
// first 16 bytes of the fingerprint, the completion time in milliseconds
// after the claim, one header block (the common Content-Type line in one
// byte), and neither the lock expiry once completed nor the expiry bucket
// unless the table has the expiry index.
func TestDefaultSchemaRecordFormat(t *testing.T) {
	for _, indexed := range []bool{false, true} {
		e := newEnv(t)
		ctx := context.Background()
		st := e.store(nil, func(o *dynamostore.Options) { o.ExpiryIndex = indexed })
		c, err := st.Claim(ctx, request("k1", "a"))
		require.NoError(t, err)
		key := map[string]types.AttributeValue{"pk": s("8:tenant-ak1")}
		now := e.clock.Now()
		inProgress := map[string]types.AttributeValue{
			"pk": s("8:tenant-ak1"), "v": n(2), "p": s("/payments"),
			"f": &types.AttributeValueMemberB{Value: fp("a")[:16]}, "s": s("p"), "l": s("LOCK"),
			"e": n(now.Add(dynamostore.DefaultLease).UnixMilli()), "c": n(now.UnixMilli()),
			// exp: the end of the lock plus the retention, rounded up to
			// the second; the commit keeps it.
			"exp": n((now.Add(dynamostore.DefaultLease+dynamostore.DefaultRetention).UnixMilli() + 999) / 1000),
		}
		if indexed {
			// The expiry bucket: shard 7 (a hash of the partition key
			// value, modulo 32), whatever the state.
			inProgress["exp_bucket"] = s("07")
		}
		assert.Equal(t, inProgress, rawRecord(t, e.ep.Client, e.table, key), "indexed=%v", indexed)

		e.clock.Advance(1500 * time.Millisecond)
		_, err = st.Commit(ctx, c, dynamostore.Response{Status: 201, Header: http.Header{
			"Content-Type": {"application/json"}, "Location": {"/p/1"}}, Body: []byte(`{"id":"p1"}`)}, nil)
		require.NoError(t, err)
		completed := map[string]types.AttributeValue{}
		for k, v := range inProgress {
			completed[k] = v
		}
		if !indexed {
			delete(completed, "e")
		}
		completed["s"] = s("c")
		completed["d"] = n(1500)
		completed["r"] = n(201)
		completed["h"] = &types.AttributeValueMemberB{Value: append([]byte{1, 0, 8}, "Location\x04/p/1"...)}
		completed["b"] = &types.AttributeValueMemberB{Value: []byte(`{"id":"p1"}`)}
		assert.Equal(t, completed, rawRecord(t, e.ep.Client, e.table, key), "indexed=%v", indexed)
	}
}

// A record leaves out the method only when it is POST: any other method,
// the empty one included, is stored and read back as it was.
func TestRecordKeepsEveryMethodAndOmitsOnlyPOST(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	st := e.store(nil)
	for key, method := range map[string]string{"m-post": "POST", "m-put": "PUT", "m-empty": "", "m-invoke": "INVOKE"} {
		req := request(key, "a")
		req.Method = method
		c, err := st.Claim(ctx, req)
		require.NoError(t, err)
		_, err = st.Commit(ctx, c, created, nil)
		require.NoError(t, err)
		rec, err := st.Get(ctx, req.Scope, key)
		require.NoError(t, err)
		assert.Equal(t, method, rec.Method, key)
		raw := rawRecord(t, e.ep.Client, e.table, map[string]types.AttributeValue{"pk": s("8:tenant-a" + key)})
		if method == "POST" {
			assert.NotContains(t, raw, "m", key)
		} else {
			assert.Equal(t, s(method), raw["m"], key)
		}
	}
}
