package txnwrite

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/txn"
)

// scripted answers TransactWriteItems from a list of errors; it stands in
// for DynamoDB only to produce cancellation reasons no emulator produces
// on demand (conflicts, throttling, validation). Write's behaviour against
// a real endpoint is tested in package dynamostore.
type scripted struct {
	errs   []error
	tokens []string
}

func (s *scripted) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	s.tokens = append(s.tokens, aws.ToString(in.ClientRequestToken))
	if len(s.errs) == 0 {
		return &dynamodb.TransactWriteItemsOutput{}, nil
	}
	err := s.errs[0]
	s.errs = s.errs[1:]
	return nil, err
}

func canceled(codes ...string) error {
	reasons := make([]types.CancellationReason, len(codes))
	for i, c := range codes {
		reasons[i] = types.CancellationReason{Code: aws.String(c)}
	}
	return &types.TransactionCanceledException{CancellationReasons: reasons}
}

var fence = types.TransactWriteItem{Put: &types.Put{TableName: aws.String("keys")}}

func effects(n int) []types.TransactWriteItem {
	out := make([]types.TransactWriteItem, n)
	for i := range out {
		out[i] = types.TransactWriteItem{Put: &types.Put{TableName: aws.String("effects")}}
	}
	return out
}

func token(attempt int) string { return "tok-" + string(rune('0'+attempt)) }

var fast = txn.Options{BaseDelay: 1, MaxDelay: 1}

func TestWriteMapsCancellationReasons(t *testing.T) {
	cases := []struct {
		name  string
		err   error
		check func(t *testing.T, err error)
	}{
		{"fence", canceled("ConditionalCheckFailed", "None"), func(t *testing.T, err error) {
			var fe *FenceError
			assert.ErrorAs(t, err, &fe)
			assert.ErrorIs(t, err, ErrFenceFailed)
		}},
		{"staged condition", canceled("None", "None", "ConditionalCheckFailed"), func(t *testing.T, err error) {
			var cf *txn.ConditionFailedError
			require.ErrorAs(t, err, &cf)
			assert.Equal(t, 1, cf.Index, "index among the staged actions")
			assert.Equal(t, "effects", aws.ToString(cf.Action.Put.TableName))
			assert.Contains(t, err.Error(), "staged action 1 (Put effects)")
		}},
		{"validation reason", canceled("None", "ValidationError", "None"), func(t *testing.T, err error) {
			var ve *txn.ValidationError
			require.ErrorAs(t, err, &ve)
			assert.Equal(t, 0, ve.Index)
		}},
		{"size limit", canceled("None", "ItemCollectionSizeLimitExceeded", "None"), func(t *testing.T, err error) {
			var ce *txn.CanceledError
			assert.ErrorAs(t, err, &ce)
			assert.ErrorIs(t, err, txn.ErrCanceled)
		}},
		{"plain failure", errors.New("connection reset"), func(t *testing.T, err error) {
			assert.NotErrorIs(t, err, txn.ErrCanceled)
			assert.Contains(t, err.Error(), "connection reset")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &scripted{errs: []error{c.err}}
			err := Write(context.Background(), s, fence, effects(2), token, fast)
			c.check(t, err)
			assert.Len(t, s.tokens, 1, "not retried")
		})
	}
}

func TestWriteRetriesConflictsAndThrottlingWithNewTokens(t *testing.T) {
	s := &scripted{errs: []error{canceled("None", "TransactionConflict"), canceled("ThrottlingError", "None")}}
	require.NoError(t, Write(context.Background(), s, fence, effects(1), token, fast))
	assert.Equal(t, []string{"tok-0", "tok-1", "tok-2"}, s.tokens)
}

func TestWriteGivesUpAfterMaxAttempts(t *testing.T) {
	s := &scripted{errs: []error{canceled("TransactionConflict"), canceled("TransactionConflict"), canceled("TransactionConflict")}}
	err := Write(context.Background(), s, fence, nil, token, txn.Options{BaseDelay: 1, MaxDelay: 1, MaxAttempts: 3})
	var ce *txn.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 3, ce.Attempts)
	assert.Len(t, s.tokens, 3)
}

func TestWriteStopsRetryingWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := &scripted{errs: []error{canceled("TransactionConflict")}}
	err := Write(ctx, s, fence, nil, token, txn.Options{BaseDelay: 1 << 40, MaxDelay: 1 << 40})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestWriteRejectsMoreThanMaxActionsWithoutCalling(t *testing.T) {
	s := &scripted{}
	assert.NoError(t, Write(context.Background(), s, fence, effects(txn.MaxActions-1), token, txn.Options{}))
	err := Write(context.Background(), s, fence, effects(txn.MaxActions), token, txn.Options{})
	assert.ErrorIs(t, err, txn.ErrTooManyActions)
	assert.Len(t, s.tokens, 1)
}

func TestWriteStagedCountsItsActionsFromTheFirstEffect(t *testing.T) {
	s := &scripted{errs: []error{canceled("None", "ConditionalCheckFailed")}}
	err := WriteStaged(context.Background(), s, effects(2), fast)
	var cf *txn.ConditionFailedError
	require.ErrorAs(t, err, &cf, "without a fence, no reason is the fence's")
	assert.Equal(t, 1, cf.Index)
	assert.Equal(t, []string{""}, s.tokens, "the SDK picks the token")

	s = &scripted{errs: []error{canceled("ConditionalCheckFailed", "None")}}
	err = WriteStaged(context.Background(), s, effects(2), fast)
	require.ErrorAs(t, err, &cf)
	assert.Equal(t, 0, cf.Index)
	assert.NotErrorIs(t, err, ErrFenceFailed)
}

func TestWriteStagedTakesUpToMaxActionsEffects(t *testing.T) {
	s := &scripted{}
	assert.NoError(t, WriteStaged(context.Background(), s, effects(txn.MaxActions), txn.Options{}))
	err := WriteStaged(context.Background(), s, effects(txn.MaxActions+1), txn.Options{})
	assert.ErrorIs(t, err, txn.ErrTooManyActions)
	assert.Len(t, s.tokens, 1, "the refused call was not made")
}
