package lambda_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
	idemlambda "github.com/idemkey/idemkey/lambda"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/txn"
)

type stagedIn struct {
	ID string `json:"id"`
}

// stagedTables creates a key table and an effects table (partition key
// "id") on the embedded emulator.
func stagedTables(t *testing.T) (*localstack.Endpoint, string, string) {
	t.Helper()
	ep := localstack.ForTest(t, func(o *localstack.Options) { o.Embedded = true })
	keys, effects := localstack.TableName("staged-keys"), localstack.TableName("staged-effects")
	require.NoError(t, dynamostore.EnsureTable(context.Background(), ep.Client, keys, 0))
	ddbtest.DeleteOnCleanup(t, ep.Client, keys)
	ddbtest.CreateTable(t, ep.Client, effects, "id")
	return ep, keys, effects
}

// stagingFunc is an Idempotent function over store that stages what stage
// stages.
func stagingFunc(store idemkey.Store, stage func(*txn.Tx)) func(context.Context, stagedIn) (string, error) {
	return idemlambda.Idempotent(store, func(ctx context.Context, in stagedIn) (string, error) {
		tx, _ := txn.FromContext(ctx)
		stage(tx)
		return "ok", nil
	}, func(o *idemlambda.FuncOptions[stagedIn]) {
		o.Name = "staged"
		o.SingleCaller = true
		o.Key = func(in stagedIn) (string, error) { return in.ID, nil }
	})
}

// wantType asserts that err is of exactly one of this package's store and
// staged-write error types, want's.
func wantType(t *testing.T, err error, want string) {
	t.Helper()
	require.Error(t, err)
	var staged *idemlambda.StagedWriteError
	var misconfigured *idemlambda.StoreMisconfiguredError
	var unavailable *idemlambda.StoreUnavailableError
	got := map[string]bool{
		"StagedWriteError":        errors.As(err, &staged),
		"StoreMisconfiguredError": errors.As(err, &misconfigured),
		"StoreUnavailableError":   errors.As(err, &unavailable),
	}
	for name, is := range got {
		assert.Equal(t, name == want, is, "%T (%v) as *%s", err, err, name)
	}
}

func assertClass(t *testing.T, err error, class dynamostore.Class) {
	t.Helper()
	var permanent *idemkey.PermanentError
	if assert.ErrorAs(t, err, &permanent) {
		assert.Equal(t, class, permanent.Class)
	}
}

// The documented mapping of refused staged writes, as DynamoDB (the
// emulator) answers them: a failed condition is a *StagedWriteError; a
// write DynamoDB rejects as invalid and too many actions are a
// *StoreMisconfiguredError, whose errorType is the one a retry meets again.
func TestRefusedStagedWritesHaveTheTypeOfTheirFault(t *testing.T) {
	ep, keys, effects := stagedTables(t)
	store := dynamostore.New(ep.Client, keys)
	ctx := context.Background()

	t.Run("condition failed", func(t *testing.T) {
		_, err := stagingFunc(store, func(tx *txn.Tx) {
			tx.ConditionCheck(types.ConditionCheck{
				TableName:           aws.String(effects),
				Key:                 map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "no such item"}},
				ConditionExpression: aws.String("attribute_exists(id)"),
			})
		})(ctx, stagedIn{ID: "cond-1"})
		wantType(t, err, "StagedWriteError")
		var cond *txn.ConditionFailedError
		assert.ErrorAs(t, err, &cond)
		assert.ErrorIs(t, err, txn.ErrConditionFailed)
	})
	t.Run("invalid write", func(t *testing.T) {
		// No "id": DynamoDB rejects the item (ValidationException).
		_, err := stagingFunc(store, func(tx *txn.Tx) {
			tx.Put(types.Put{TableName: aws.String(effects), Item: map[string]types.AttributeValue{
				"other": &types.AttributeValueMemberS{Value: "x"},
			}})
		})(ctx, stagedIn{ID: "invalid-1"})
		wantType(t, err, "StoreMisconfiguredError")
		assert.ErrorIs(t, err, idemkey.ErrPermanent)
		assert.ErrorIs(t, err, txn.ErrValidation)
		assertClass(t, err, dynamostore.ClassInvalidWrite)
	})
	t.Run("too many actions", func(t *testing.T) {
		_, err := stagingFunc(store, func(tx *txn.Tx) {
			for i := range txn.MaxActions {
				tx.Put(types.Put{TableName: aws.String(effects), Item: map[string]types.AttributeValue{
					"id": &types.AttributeValueMemberS{Value: fmt.Sprint("many-", i)},
				}})
			}
		})(ctx, stagedIn{ID: "many-1"})
		wantType(t, err, "StoreMisconfiguredError")
		assert.ErrorIs(t, err, txn.ErrTooManyActions)
		assertClass(t, err, dynamostore.ClassTooManyActions)
	})
	for _, id := range []string{"cond-1", "invalid-1", "many-1"} {
		_, err := stagingFunc(store, func(*txn.Tx) {})(ctx, stagedIn{ID: id})
		assert.NoError(t, err, "the key %s was released", id)
	}
}

// refusingCommit is a key store whose commits fail with err.
type refusingCommit struct {
	*dynamostore.Store
	err error
}

func (s refusingCommit) Commit(context.Context, *dynamostore.Claim, idemkey.Response, *txn.Tx) (*dynamostore.Record, error) {
	return nil, s.err
}

// The refusals of a commit the emulator does not produce on demand, as
// package txn reports them: each is of the type documented for it.
func TestRefusedCommitsHaveTheTypeOfTheirFault(t *testing.T) {
	ep, keys, _ := stagedTables(t)
	reason := func(code string) types.CancellationReason { return types.CancellationReason{Code: aws.String(code)} }
	for _, c := range []struct {
		name     string
		err      error
		sentinel error
		want     string
	}{
		{"condition failed", &txn.ConditionFailedError{Index: 0}, txn.ErrConditionFailed, "StagedWriteError"},
		{"token reused", fmt.Errorf("%w: IdempotentParameterMismatchException", txn.ErrTokenMismatch), txn.ErrTokenMismatch, "StagedWriteError"},
		{"invalid write", &txn.ValidationError{Index: 0, Message: "invalid"}, txn.ErrValidation, "StoreMisconfiguredError"},
		{"too many actions", fmt.Errorf("%w: 101 actions", txn.ErrTooManyActions), txn.ErrTooManyActions, "StoreMisconfiguredError"},
		{"cancelled for a size limit", &txn.CanceledError{Reasons: []types.CancellationReason{reason("None"), reason("ItemCollectionSizeLimitExceeded")}}, txn.ErrCanceled, "StoreMisconfiguredError"},
		{"conflict persisted", &txn.ConflictError{Attempts: 3}, txn.ErrConflict, "StoreUnavailableError"},
		{"cancelled for throttling", &txn.CanceledError{Reasons: []types.CancellationReason{reason("None"), reason("ThrottlingError")}}, txn.ErrCanceled, "StoreUnavailableError"},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := refusingCommit{dynamostore.New(ep.Client, keys), c.err}
			_, err := stagingFunc(store, func(*txn.Tx) {})(context.Background(), stagedIn{ID: "refused-" + c.name})
			wantType(t, err, c.want)
			assert.ErrorIs(t, err, c.sentinel)
		})
	}
}
