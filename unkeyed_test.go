package idemkey_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/multiregion"
	"github.com/idemkey/idemkey/txn"
)

func TestCommitUnkeyedOnAStoreWithoutUnkeyedWritesSaysSoWithoutACall(t *testing.T) {
	client := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://192.0.2.1:1")}) // never contacted
	store, err := multiregion.New([]multiregion.Region{multiregion.NewRegion("us-east-1", client, "keys")})
	require.NoError(t, err)
	guard := idemkey.New(store)
	tx := txn.New()
	tx.Put(types.Put{TableName: aws.String("effects"), Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "1"}}})
	err = guard.CommitUnkeyed(context.Background(), tx, idemkey.Response{Status: 200})
	assert.ErrorIs(t, err, idemkey.ErrUnkeyedUnsupported)
	assert.NoError(t, guard.CommitUnkeyed(context.Background(), txn.New(), idemkey.Response{Status: 200}), "nothing staged: nothing to refuse")
	assert.NoError(t, guard.CommitUnkeyed(context.Background(), tx, idemkey.Response{Status: 503}), "a 5xx discards the writes")
}
