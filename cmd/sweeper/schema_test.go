package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/localstack"
)

// TestFunctionSweepsTheKeyRecordsOfASharedTableAndNoOtherItem runs the
// function with the key schema of a table that also holds the service's
// own items, one of them with an expired-looking TTL attribute.
func TestFunctionSweepsTheKeyRecordsOfASharedTableAndNoOtherItem(t *testing.T) {
	ctx := context.Background()
	ep := localstack.ForTest(t)
	table := localstack.TableName("shared")
	env := map[string]string{"KEY_TABLE": table, "KEY_PARTITION_KEY": "PK", "KEY_SORT_KEY": "SK",
		"KEY_SORT_KEY_VALUE": "idem", "KEY_PREFIX": "idem", "KEY_TTL_ATTRIBUTE": "expires_at"}
	cfg, err := configFromEnv(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.NoError(t, dynamostore.EnsureSchemaTable(ctx, ep.Client, table, cfg.Schema, 0))
	ddbtest.DeleteOnCleanup(t, ep.Client, table)

	clock := ddbtest.NewClock(time.Unix(1_800_000_000, 0))
	store := dynamostore.New(ep.Client, table, func(o *dynamostore.Options) {
		o.Schema, o.Now, o.Retention = cfg.Schema, clock.Now, time.Hour
	})
	sum := sha256.Sum256([]byte("body"))
	c, err := store.Claim(ctx, dynamostore.Request{Scope: "t", Key: "k", Method: "POST", Path: "/p", Fingerprint: sum[:]})
	require.NoError(t, err)
	_, err = store.Commit(ctx, c, dynamostore.Response{Status: 201}, nil)
	require.NoError(t, err)
	past := strconv.FormatInt(clock.Now().Add(-time.Hour).Unix(), 10)
	_, err = ep.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: "ORDER#1"}, "SK": &types.AttributeValueMemberS{Value: "idem"},
		"expires_at": &types.AttributeValueMemberN{Value: past},
	}})
	require.NoError(t, err)
	clock.Advance(2 * time.Hour)

	var stdout bytes.Buffer
	f := &function{client: ep.Client, cfg: cfg, stdout: &stdout, logger: slog.New(slog.NewTextHandler(io.Discard, nil)), now: clock.Now}
	r, err := f.handle(ctx, event(t))
	require.NoError(t, err)
	assert.Equal(t, int64(1), r.Evicted, "the key record")
	out, err := ep.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "ORDER#1"}, "SK": &types.AttributeValueMemberS{Value: "idem"}}})
	require.NoError(t, err)
	assert.NotEmpty(t, out.Item, "the service's own item, expired-looking, is left alone")
}
