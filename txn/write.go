package txn

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
)

// Client is the DynamoDB call Write makes.
type Client interface {
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

var _ Client = (*dynamodb.Client)(nil)

// Options tune Write's retries of transaction conflicts and throttling
// cancellations. The zero value of each field selects its default.
type Options struct {
	// MaxAttempts bounds the attempts of one Write (default 4).
	MaxAttempts int
	// BaseDelay is the backoff before the second attempt (default 20ms); it
	// doubles per attempt up to MaxDelay (default 400ms), with full jitter.
	BaseDelay, MaxDelay time.Duration
}

func (o *Options) defaults() {
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
// *ConditionFailedError for a staged action's, *ConflictError after
// MaxAttempts conflicts, *ValidationError, *CanceledError, an error
// matching ErrTokenMismatch when DynamoDB refused a reused token, an error
// matching ErrTooManyActions without calling DynamoDB, or the SDK's error
// (wrapped) when the call itself failed or DynamoDB answered
// TransactionInProgressException (the attempt is still being applied); in
// that last case the outcome is unknown and the caller must find out from
// the fence item.
func Write(ctx context.Context, client Client, fence types.TransactWriteItem, effects []types.TransactWriteItem, token func(attempt int) string, optFns ...func(*Options)) error {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	o.defaults()
	if n := 1 + len(effects); n > MaxActions {
		return fmt.Errorf("%w: %d actions (the key record and %d staged), DynamoDB allows %d", ErrTooManyActions, n, len(effects), MaxActions)
	}
	items := make([]types.TransactWriteItem, 0, 1+len(effects))
	items = append(items, fence)
	items = append(items, effects...)

	for attempt := 0; ; attempt++ {
		in := &dynamodb.TransactWriteItemsInput{TransactItems: items}
		if token != nil {
			in.ClientRequestToken = aws.String(token(attempt))
		}
		_, err := client.TransactWriteItems(ctx, in)
		if err == nil {
			return nil
		}
		mapped, retry := classify(err, items)
		if !retry {
			return mapped
		}
		if attempt+1 >= o.MaxAttempts {
			var conflict *ConflictError
			if errors.As(mapped, &conflict) {
				conflict.Attempts = attempt + 1
			}
			return mapped
		}
		if err := backoff.Sleep(ctx, delay(o, attempt)); err != nil {
			return fmt.Errorf("txn: TransactWriteItems: %w (after %v)", err, mapped)
		}
	}
}

func delay(o Options, attempt int) time.Duration {
	return backoff.Jittered(o.BaseDelay, o.MaxDelay, attempt)
}

// classify maps a TransactWriteItems error and says whether a new attempt
// may succeed.
func classify(err error, items []types.TransactWriteItem) (mapped error, retry bool) {
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		return classifyReasons(tce.CancellationReasons, items)
	}
	var mismatch *types.IdempotentParameterMismatchException
	if errors.As(err, &mismatch) {
		return fmt.Errorf("%w: %w", ErrTokenMismatch, err), false
	}
	// TransactionInProgressException (a transaction with this token is
	// still being applied) falls through: its outcome is unknown, like a
	// timeout's, and a new attempt under a new token could not tell.
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "ValidationException" {
		return &ValidationError{Index: -1, Message: api.ErrorMessage(), Err: err}, false
	}
	return fmt.Errorf("txn: TransactWriteItems: %w", err), false
}

func classifyReasons(reasons []types.CancellationReason, items []types.TransactWriteItem) (error, bool) {
	var retryable error
	var other bool
	for i, r := range reasons {
		switch aws.ToString(r.Code) {
		case "", "None":
		case "ConditionalCheckFailed":
			if i == 0 {
				return &FenceError{Item: r.Item}, false
			}
			cf := &ConditionFailedError{Index: i - 1, Item: r.Item, Message: aws.ToString(r.Message)}
			if i < len(items) {
				cf.Action = items[i]
			}
			return cf, false
		case "ValidationError":
			return &ValidationError{Index: i - 1, Message: aws.ToString(r.Message)}, false
		case "TransactionConflict":
			retryable = &ConflictError{}
		case "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
			if retryable == nil {
				retryable = &CanceledError{Reasons: reasons}
			}
		default:
			other = true
		}
	}
	if other || retryable == nil {
		return &CanceledError{Reasons: reasons}, false
	}
	return retryable, true
}
