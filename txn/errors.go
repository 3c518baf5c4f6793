package txn

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

var (
	// ErrConditionFailed: a staged action failed its condition. Nothing was
	// written. Match *ConditionFailedError for which one.
	ErrConditionFailed = errors.New("txn: staged condition failed")

	// ErrConflict: the transaction kept conflicting with concurrent writes to
	// the same items after every retry. Nothing was written.
	ErrConflict = errors.New("txn: transaction conflict")

	// ErrTooManyActions: the fence and the staged actions exceed
	// MaxActions. DynamoDB was not called.
	ErrTooManyActions = errors.New("txn: too many actions")

	// ErrValidation: DynamoDB rejected the transaction as invalid (two
	// actions on one item, an item over 400 KB, a malformed expression).
	// Nothing was written.
	ErrValidation = errors.New("txn: validation failed")

	// ErrCanceled: DynamoDB cancelled the transaction for another reason
	// (throttling after retries, a size limit). Nothing was written.
	ErrCanceled = errors.New("txn: transaction cancelled")
	// ErrTokenMismatch: DynamoDB refused the transaction
	// (IdempotentParameterMismatchException) because its
	// ClientRequestToken was used within the last 10 minutes by a request
	// with other parameters. This call wrote nothing; the earlier request
	// may have been applied.
	ErrTokenMismatch = errors.New("txn: ClientRequestToken reused with other parameters")
)

// ConditionFailedError reports which staged action failed its condition.
type ConditionFailedError struct {
	// Index is the action's position among the staged actions (0 is the
	// first one staged; the fence is not counted).
	Index int
	// Action is the staged action.
	Action types.TransactWriteItem
	// Item is the item's state before the transaction, when the action
	// asked for it with ReturnValuesOnConditionCheckFailure=ALL_OLD and
	// DynamoDB returned it; nil otherwise.
	Item map[string]types.AttributeValue
	// Message is DynamoDB's description.
	Message string
}

func (e *ConditionFailedError) Error() string {
	return "txn: staged action " + strconv.Itoa(e.Index) + " (" + actionTable(e.Action) + "): condition failed"
}
func (e *ConditionFailedError) Is(t error) bool { return t == ErrConditionFailed }

// ValidationError reports a transaction DynamoDB rejected as invalid.
// Index is the staged action at fault when DynamoDB named one, else -1.
type ValidationError struct {
	Index   int
	Message string
	Err     error // the SDK's error, when the whole call was rejected
}

func (e *ValidationError) Error() string {
	s := "txn: validation failed"
	if e.Index >= 0 {
		s += " on staged action " + strconv.Itoa(e.Index)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}
func (e *ValidationError) Is(t error) bool { return t == ErrValidation }
func (e *ValidationError) Unwrap() error   { return e.Err }

// ConflictError reports a transaction that still conflicted after Attempts
// attempts.
type ConflictError struct{ Attempts int }

func (e *ConflictError) Error() string {
	return fmt.Sprintf("txn: transaction conflict after %d attempts", e.Attempts)
}
func (e *ConflictError) Is(t error) bool { return t == ErrConflict }

// CanceledError is any other cancellation; Reasons are DynamoDB's, one per
// action, the fence first.
type CanceledError struct {
	Reasons []types.CancellationReason
}

func (e *CanceledError) Error() string {
	for i, r := range e.Reasons {
		if code := aws.ToString(r.Code); code != "" && code != "None" {
			return fmt.Sprintf("txn: transaction cancelled: action %d: %s", i, code)
		}
	}
	return "txn: transaction cancelled"
}
func (e *CanceledError) Is(t error) bool { return t == ErrCanceled }

func actionTable(a types.TransactWriteItem) string {
	switch {
	case a.Put != nil:
		return "Put " + aws.ToString(a.Put.TableName)
	case a.Update != nil:
		return "Update " + aws.ToString(a.Update.TableName)
	case a.Delete != nil:
		return "Delete " + aws.ToString(a.Delete.TableName)
	case a.ConditionCheck != nil:
		return "ConditionCheck " + aws.ToString(a.ConditionCheck.TableName)
	}
	return "empty action"
}
