// Package txnwrite executes the commit transaction: the key record (the
// fence) and the staged writes of a txn.Tx in one TransactWriteItems, with
// bounded retries of conflicts and DynamoDB's cancellation reasons mapped
// to package txn's typed errors.
package txnwrite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idemkey/idemkey/internal/backoff"
	"github.com/idemkey/idemkey/txn"
)

// Client is the DynamoDB call Write makes.
type Client interface {
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

var _ Client = (*dynamodb.Client)(nil)

// ErrFenceFailed is matched by *FenceError.
var ErrFenceFailed = errors.New("txn: fence condition failed")

// FenceError reports that the fence failed its condition. Item is the
// fence item as DynamoDB returned it (ReturnValuesOnConditionCheckFailure),
// nil when it was absent or not returned.
type FenceError struct {
	Item map[string]types.AttributeValue
}

func (e *FenceError) Error() string   { return ErrFenceFailed.Error() }
func (e *FenceError) Is(t error) bool { return t == ErrFenceFailed }

func defaults(o *txn.Options) {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 4
	}
	if o.BaseDelay <= 0 {
		o.BaseDelay = 20 * time.Millisecond
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = 400 * time.Millisecond
	}
}

// Write commits fence and effects in one TransactWriteItems, fence first.
//
// token returns the ClientRequestToken of each attempt (0, 1, ...): the SDK
// repeats an attempt after an ambiguous failure with the same token, so
// DynamoDB applies it at most once within its 10-minute idempotency window.
// A new attempt is only made after a definite cancellation (conflict or
// throttling), when nothing was applied.
//
// Errors: *FenceError when the fence's condition failed,
// *txn.ConditionFailedError for a staged action's, *txn.ConflictError after
// MaxAttempts conflicts, *txn.ValidationError, *txn.CanceledError, an error
// matching txn.ErrTokenMismatch when DynamoDB refused a reused token, an error
// matching txn.ErrTooManyActions without calling DynamoDB, or the SDK's error
// (wrapped) when the call itself failed or DynamoDB answered
// TransactionInProgressException (the attempt is still being applied); in
// that last case the outcome is unknown and the caller must find out from
// the fence item.
func Write(ctx context.Context, client Client, fence types.TransactWriteItem, effects []types.TransactWriteItem, token func(attempt int) string, o txn.Options) error {
	if n := 1 + len(effects); n > txn.MaxActions {
		return fmt.Errorf("%w: %d actions (the key record and %d staged), DynamoDB allows %d", txn.ErrTooManyActions, n, len(effects), txn.MaxActions)
	}
	items := make([]types.TransactWriteItem, 0, 1+len(effects))
	items = append(items, fence)
	items = append(items, effects...)
	return write(ctx, client, items, 1, token, o)
}

// WriteStaged commits effects alone, without a fence, in one
// TransactWriteItems: the writes of a request that carries no key. The
// SDK gives the call a ClientRequestToken of its own, repeated on its
// retries. Errors are Write's, without *FenceError; a
// *txn.ConditionFailedError's Index counts from the first effect.
func WriteStaged(ctx context.Context, client Client, effects []types.TransactWriteItem, o txn.Options) error {
	if n := len(effects); n > txn.MaxActions {
		return fmt.Errorf("%w: %d staged actions, DynamoDB allows %d", txn.ErrTooManyActions, n, txn.MaxActions)
	}
	return write(ctx, client, effects, 0, nil, o)
}

// write runs the attempts of one transaction of items, whose first fenced
// (0 or 1) items are the fence.
func write(ctx context.Context, client Client, items []types.TransactWriteItem, fenced int, token func(attempt int) string, o txn.Options) error {
	defaults(&o)
	for attempt := 0; ; attempt++ {
		in := &dynamodb.TransactWriteItemsInput{TransactItems: items}
		if token != nil {
			in.ClientRequestToken = aws.String(token(attempt))
		}
		_, err := client.TransactWriteItems(ctx, in)
		if err == nil {
			return nil
		}
		mapped, retry := classify(err, items, fenced)
		if !retry {
			return mapped
		}
		if attempt+1 >= o.MaxAttempts {
			var conflict *txn.ConflictError
			if errors.As(mapped, &conflict) {
				conflict.Attempts = attempt + 1
			}
			return mapped
		}
		if err := backoff.Sleep(ctx, backoff.Jittered(o.BaseDelay, o.MaxDelay, attempt)); err != nil {
			return fmt.Errorf("txn: TransactWriteItems: %w (after %v)", err, mapped)
		}
	}
}

// classify maps a TransactWriteItems error and says whether a new attempt
// may succeed.
func classify(err error, items []types.TransactWriteItem, fenced int) (mapped error, retry bool) {
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		return classifyReasons(tce.CancellationReasons, items, fenced)
	}
	var mismatch *types.IdempotentParameterMismatchException
	if errors.As(err, &mismatch) {
		return fmt.Errorf("%w: %w", txn.ErrTokenMismatch, err), false
	}
	// TransactionInProgressException (a transaction with this token is
	// still being applied) falls through: its outcome is unknown, like a
	// timeout's, and a new attempt under a new token could not tell.
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "ValidationException" {
		return &txn.ValidationError{Index: -1, Message: api.ErrorMessage(), Err: err}, false
	}
	// The SDK's own check of the input (a required field missing): nothing
	// was sent, and the same writes fail the same way.
	var invalid smithy.InvalidParamsError
	if errors.As(err, &invalid) {
		return &txn.ValidationError{Index: -1, Message: invalid.Error(), Err: err}, false
	}
	return fmt.Errorf("txn: TransactWriteItems: %w", err), false
}

func classifyReasons(reasons []types.CancellationReason, items []types.TransactWriteItem, fenced int) (error, bool) {
	var retryable error
	var other bool
	for i, r := range reasons {
		switch aws.ToString(r.Code) {
		case "", "None":
		case "ConditionalCheckFailed":
			if i < fenced {
				return &FenceError{Item: r.Item}, false
			}
			cf := &txn.ConditionFailedError{Index: i - fenced, Item: r.Item, Message: aws.ToString(r.Message)}
			if i < len(items) {
				cf.Action = items[i]
			}
			return cf, false
		case "ValidationError":
			return &txn.ValidationError{Index: i - fenced, Message: aws.ToString(r.Message)}, false
		case "TransactionConflict":
			retryable = &txn.ConflictError{}
		case "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
			if retryable == nil {
				retryable = &txn.CanceledError{Reasons: reasons}
			}
		default:
			other = true
		}
	}
	if other || retryable == nil {
		return &txn.CanceledError{Reasons: reasons}, false
	}
	return retryable, true
}
