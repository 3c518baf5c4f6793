package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
)

// sharedFlags is the key schema of a single table, as flags.
var sharedFlags = []string{"-pk-attr", "PK", "-sk-attr", "SK", "-sk-value", "IDEMKEY", "-prefix", "idemkey", "-ttl-attr", "ttl"}

var sharedSchema = dynamostore.KeySchema{PartitionKey: "PK", SortKey: "SK", SortKeyValue: "IDEMKEY", Prefix: "idemkey", TTLAttribute: "ttl"}

func withSchema(args ...string) []string { return append(args, sharedFlags...) }

func TestIdemctlWorksOnASingleTableWithItsSchemaFlags(t *testing.T) {
	ep, table := endpoint(t)
	ctx := context.Background()
	r := idemctl(withSchema("create-table", "-table", table)...)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, `partition key "PK" (String), sort key "SK" (String), TTL on "ttl", key records under "idemkey#"`)

	// The application's items: a payment, and one with an expired ttl.
	past := strconv.FormatInt(time.Now().Add(-72*time.Hour).Unix(), 10)
	for _, item := range []map[string]types.AttributeValue{
		{"PK": &types.AttributeValueMemberS{Value: "CUSTOMER#1"}, "SK": &types.AttributeValueMemberS{Value: "PAYMENT#1"}},
		{"PK": &types.AttributeValueMemberS{Value: "CUSTOMER#1"}, "SK": &types.AttributeValueMemberS{Value: "PAYMENT#2"},
			"ttl": &types.AttributeValueMemberN{Value: past}, "state": &types.AttributeValueMemberS{Value: "completed"}},
	} {
		_, err := ep.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: item})
		require.NoError(t, err)
	}
	st := dynamostore.New(ep.Client, table, func(o *dynamostore.Options) { o.Schema = sharedSchema })
	sum := sha256.Sum256([]byte("a"))
	for _, key := range []string{"k1", "k2"} {
		c, err := st.Claim(ctx, dynamostore.Request{Scope: "tenant", Key: key, Method: "POST", Path: "/p", Fingerprint: sum[:]})
		require.NoError(t, err)
		if key == "k1" {
			_, err = st.Commit(ctx, c, dynamostore.Response{Status: 201}, nil)
			require.NoError(t, err)
		}
	}

	r = idemctl(withSchema("inspect", "-table", table, "-scope", "tenant", "-key", "k1")...)
	require.Equal(t, exitOK, r.code, r.stderr)
	var rec recordJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rec))
	assert.Equal(t, "idemkey#6:tenantk1", rec.PartitionKey)
	assert.Equal(t, "completed", rec.State)

	r = idemctl("inspect", "-table", table, "-scope", "tenant", "-key", "k1")
	assert.Equal(t, exitFail, r.code, "without the schema flags the record is not found: %s", r.stdout)

	r = idemctl(withSchema("list", "-table", table, "-scope", "tenant")...)
	require.Equal(t, exitOK, r.code, r.stderr)
	var listed listJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &listed))
	require.Len(t, listed.Keys, 2)
	assert.Equal(t, []string{"k1", "k2"}, []string{listed.Keys[0].Key, listed.Keys[1].Key})

	r = idemctl(withSchema("release", "-table", table, "-scope", "tenant", "-key", "k2", "-force")...)
	require.Equal(t, exitOK, r.code, r.stderr)
	_, err := st.Get(ctx, "tenant", "k2")
	assert.ErrorIs(t, err, dynamostore.ErrNotFound)

	r = idemctl(withSchema("sweep", "-table", table, "-rate", "0")...)
	require.Equal(t, exitOK, r.code, r.stderr)
	var rep dynamostore.SweepReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	assert.Zero(t, rep.Evicted+rep.Reclaimed, "nothing expired among the key records")
	assert.Equal(t, int64(1), rep.LiveKeys)
	assert.Equal(t, int64(2), rep.Foreign, "the two payments")
	for _, sk := range []string{"PAYMENT#1", "PAYMENT#2"} {
		out, err := ep.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, ConsistentRead: aws.Bool(true), Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: "CUSTOMER#1"}, "SK": &types.AttributeValueMemberS{Value: sk}}})
		require.NoError(t, err)
		assert.NotNil(t, out.Item, "payment %s kept", sk)
	}
}

func TestIdemctlRefusesAnInvalidSchemaBeforeCallingDynamoDB(t *testing.T) {
	hermetic(t)
	r := idemctl("inspect", "-table", "t", "-key", "k", "-pk-attr", "PK")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "needs a Prefix")
	assert.NotContains(t, r.stderr, "DynamoDB at")

	r = idemctl(withSchema("create-table", "-table", "t", "-no-ttl")...)
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "-no-ttl takes the default key schema only")
}
