package idemkey_test

import (
	"context"
	"crypto/sha256"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/txn"
)

func shipRequest(key string) idemkey.Request {
	sum := sha256.Sum256([]byte(`{}`))
	return idemkey.Request{Scope: "tenant-a", Key: key, Method: "POST", Path: "/ship", Fingerprint: sum[:]}
}

// guardWithTables returns a Guard over a new key table, and a new effect table
// (partition key "id"), both deleted when the test ends.
func guardWithTables(t *testing.T) (guard *idemkey.Guard, keys, effects string) {
	t.Helper()
	ep := localstack.ForTest(t)
	keys, effects = localstack.TableName("keys"), localstack.TableName("effects")
	require.NoError(t, dynamostore.EnsureTable(context.Background(), ep.Client, keys, 0))
	ddbtest.DeleteOnCleanup(t, ep.Client, keys)
	ddbtest.CreateTable(t, ep.Client, effects, "id")
	return idemkey.New(dynamostore.New(ep.Client, keys)), keys, effects
}

// A staged write to a table that does not exist is a permanent fault of
// the commit: Do reports it as a *PermanentError naming the key table and
// the staged table, not as ErrUnavailable, and releases the key.
func TestCommitToAMissingStagedTableIsPermanent(t *testing.T) {
	guard, keys, _ := guardWithTables(t)
	typo := localstack.TableName("shipmnets")

	runs := 0
	ship := func(ctx context.Context) (idemkey.Response, error) {
		runs++
		tx, _ := txn.FromContext(ctx)
		tx.Put(types.Put{TableName: &typo, Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "s1"}}})
		return idemkey.Response{Status: 201}, nil
	}
	for range 2 {
		_, err := guard.Do(context.Background(), shipRequest("order-1"), ship)
		var pe *idemkey.PermanentError
		require.ErrorAs(t, err, &pe)
		assert.ErrorIs(t, err, idemkey.ErrPermanent)
		assert.NotErrorIs(t, err, idemkey.ErrUnavailable)
		assert.Equal(t, dynamostore.ClassMissingTable, pe.Class)
		assert.Equal(t, []string{keys, typo}, pe.Tables)
		assert.False(t, pe.Temporary())
	}
	assert.Equal(t, 2, runs, "the key was released after each attempt")
}

// Too many staged writes and a staged write DynamoDB rejects are
// permanent too; each keeps its txn error in the chain.
func TestRejectedStagedWritesArePermanent(t *testing.T) {
	guard, _, effects := guardWithTables(t)
	item := func(id string) types.Put {
		return types.Put{TableName: &effects, Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}}}
	}
	cases := []struct {
		key   string
		stage func(tx *txn.Tx)
		class dynamostore.Class
	}{
		{"many", func(tx *txn.Tx) {
			for range txn.MaxActions {
				tx.Put(item("same-or-not"))
			}
		}, dynamostore.ClassTooManyActions},
		{"twice", func(tx *txn.Tx) { tx.Put(item("d")); tx.Put(item("d")) }, dynamostore.ClassInvalidWrite},
	}
	for _, tc := range cases {
		_, err := guard.Do(context.Background(), shipRequest(tc.key), func(ctx context.Context) (idemkey.Response, error) {
			tx, _ := txn.FromContext(ctx)
			tc.stage(tx)
			return idemkey.Response{Status: 201}, nil
		})
		var pe *idemkey.PermanentError
		require.ErrorAs(t, err, &pe, tc.key)
		assert.Equal(t, tc.class, pe.Class, tc.key)
		assert.Equal(t, tc.class, dynamostore.ClassOf(err), tc.key)
	}
}
