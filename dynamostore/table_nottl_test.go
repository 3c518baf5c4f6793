package dynamostore_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/localstack"
)

func TestEnsureTableWithoutTTLCreatesTheTableWithoutTTLAndRefusesTTL(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	table := localstack.TableName("nottl")
	ddbtest.DeleteOnCleanup(t, e.ep.Client, table)

	require.NoError(t, dynamostore.EnsureTableWithoutTTL(ctx, e.ep.Client, table, 0))
	require.NoError(t, dynamostore.EnsureTableWithoutTTL(ctx, e.ep.Client, table, 0), "idempotent")
	out, err := e.ep.Client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &table})
	require.NoError(t, err)
	if d := out.TimeToLiveDescription; d != nil {
		assert.Contains(t, []types.TimeToLiveStatus{"", types.TimeToLiveStatusDisabled}, d.TimeToLiveStatus, "never enabled")
	}

	_, err = e.ep.Client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: &table,
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(dynamostore.TTLAttribute), Enabled: aws.Bool(true)}})
	require.NoError(t, err)
	err = dynamostore.EnsureTableWithoutTTL(ctx, e.ep.Client, table, 0)
	assert.ErrorIs(t, err, dynamostore.ErrTTLEnabled, "a table with TTL on is refused, not changed")
	assert.ErrorIs(t, err, dynamostore.ErrTableSchema)
	out, err = e.ep.Client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &table})
	require.NoError(t, err)
	assert.Equal(t, types.TimeToLiveStatusEnabled, out.TimeToLiveDescription.TimeToLiveStatus)

	err = dynamostore.EnsureTableWithoutTTL(ctx, e.ep.Client, e.effects, 0)
	assert.ErrorIs(t, err, dynamostore.ErrTableSchema, "a table keyed otherwise is refused")
	assert.NotErrorIs(t, err, dynamostore.ErrTTLEnabled)
}
