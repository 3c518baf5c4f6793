package regionsim_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A TTL delete replicates like any write and, being later, wins over a
// newer version written in another region that had not reached the
// deleting replica yet: the newer version disappears everywhere.
func TestReplicatedTTLDeleteWinsOverANewerWriteNotYetSeen(t *testing.T) {
	f := newFixture(t, 2*time.Second, false)
	ctx := context.Background()
	put := func(region, v string, exp time.Time) {
		_, err := f.client(region).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"id": &types.AttributeValueMemberS{Value: "a"}, "v": &types.AttributeValueMemberS{Value: v},
			"exp": &types.AttributeValueMemberN{Value: strconv.FormatInt(exp.Unix(), 10)},
		}})
		require.NoError(t, err)
	}
	put("us-east-1", "old", f.clock.Now().Add(5*time.Second))
	f.advance(10 * time.Second) // replicated everywhere, and expired
	put("us-east-1", "new", f.clock.Now().Add(time.Hour))

	f.clock.Advance(time.Second) // within the lag: eu-west-1 still holds "old"
	n, err := f.cluster.ExpireTTL(ctx, "eu-west-1", table, "exp")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	n, err = f.cluster.ExpireTTL(ctx, "us-east-1", table, "exp")
	require.NoError(t, err)
	assert.Zero(t, n, "the home's own copy is not expired")

	f.advance(5 * time.Second)
	for _, r := range f.cluster.Names() {
		assert.Empty(t, f.value(r, "a"), "the replicated TTL delete erased the newer write in %s", r)
	}
}
