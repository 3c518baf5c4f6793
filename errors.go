package idemkey

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/txn"
)

var (
	// ErrInFlight: another request holds the key. Retry after a delay.
	ErrInFlight = errors.New("idemkey: request with this key is in flight")
	// ErrMismatch: the key was already used for a different request.
	ErrMismatch = errors.New("idemkey: key reused with a different request")
	// ErrUnavailable: the key store could not be reached or answered with
	// a transient failure (throttling, a server error, a transaction that
	// kept conflicting). Nothing was executed; or the execution's commit
	// failed and was undone; or it could not be confirmed: a retry is
	// replayed if the commit landed, and executed, once the key's lease
	// ends, if it did not. Retrying later with
	// the same key is safe. From CommitUnkeyed, which has no key: DynamoDB
	// answered that nothing was written.
	ErrUnavailable = errors.New("idemkey: key store unavailable")
	// ErrPermanent: DynamoDB answered with a fault that retrying the same
	// request meets again (a missing table, refused credentials, a staged
	// write it rejects, too many staged writes). Nothing was committed.
	// Match *PermanentError for its class.
	ErrPermanent = errors.New("idemkey: permanent store fault")
	// ErrLockLost: the key's lease ran out while the function ran and
	// another request reclaimed it; this execution's response and effects
	// were not committed.
	ErrLockLost = dynamostore.ErrLockLost
	// ErrOutcomeUnknown: writes committed without a key (CommitUnkeyed)
	// may or may not have been applied: the call failed without
	// DynamoDB's answer (a timeout, a 5xx, a transaction still in
	// progress). Nothing remembers the request, so a retry would execute
	// it again, a second time if the first landed: it is not retryable.
	// Match *OutcomeUnknownError for the store's error.
	ErrOutcomeUnknown = errors.New("idemkey: the outcome of writes without an idempotency key is unknown")
)

// InFlightError is the error for a key held by another request.
type InFlightError struct{ RetryAfter time.Duration }

func (e *InFlightError) Error() string   { return ErrInFlight.Error() }
func (e *InFlightError) Is(t error) bool { return t == ErrInFlight }

// UnavailableError is the error for a key store that could not be reached
// or answered with a transient failure. It matches ErrUnavailable.
type UnavailableError struct {
	RetryAfter time.Duration
	Err        error
}

func (e *UnavailableError) Error() string   { return fmt.Sprintf("%v: %v", ErrUnavailable, e.Err) }
func (e *UnavailableError) Is(t error) bool { return t == ErrUnavailable }
func (e *UnavailableError) Unwrap() error   { return e.Err }

// Temporary reports true: a retry with the same key may succeed.
func (e *UnavailableError) Temporary() bool { return true }

// OutcomeUnknownError is the error of CommitUnkeyed when the commit of
// its writes failed without DynamoDB's answer: they may have been
// applied. It matches ErrOutcomeUnknown, not ErrUnavailable: a retry of a
// request without a key is a new execution, so the front doors answer it
// as not retryable (HTTP 500 "outcome-unknown" without Retry-After, gRPC
// Internal with the ErrorInfo reason OUTCOME_UNKNOWN and no RetryInfo).
// The caller learns the outcome by reading the state the writes change;
// a key on the request makes its retries safe.
type OutcomeUnknownError struct {
	// Err is the store's error, a *dynamostore.StoreError.
	Err error
}

func (e *OutcomeUnknownError) Error() string   { return fmt.Sprintf("%v: %v", ErrOutcomeUnknown, e.Err) }
func (e *OutcomeUnknownError) Is(t error) bool { return t == ErrOutcomeUnknown }
func (e *OutcomeUnknownError) Unwrap() error   { return e.Err }

// Temporary reports false: retrying could apply the writes twice.
func (e *OutcomeUnknownError) Temporary() bool { return false }

// PermanentError is the error for a DynamoDB answer that retrying the same
// request does not change: only a fix of the service (its tables, its
// permissions, the writes its function stages) does. It matches
// ErrPermanent. Nothing was committed; a key that was claimed was
// released, unless that release failed too, in which case the key stays
// locked until its lease ends.
type PermanentError struct {
	// Class is the kind of fault, one of the dynamostore Class values.
	Class dynamostore.Class
	// Tables are the tables the failed call addressed, without
	// repetitions: the key table first when it is known, then the tables
	// of the staged writes of a commit in the order they were staged.
	Tables []string
	// Err is the store's error: a *dynamostore.StoreError or an error of
	// package txn.
	Err error
}

func (e *PermanentError) Error() string {
	return fmt.Sprintf("%v (%s): %v", ErrPermanent, e.Class, e.Err)
}
func (e *PermanentError) Is(t error) bool { return t == ErrPermanent }
func (e *PermanentError) Unwrap() error   { return e.Err }

// Temporary reports false: a retry with the same key fails the same way.
func (e *PermanentError) Temporary() bool { return false }

// storeErr turns an error of the store into the Guard's: a
// *PermanentError for a fault a retry meets again, an *UnavailableError for
// a transient failure, and err itself otherwise. tx holds the staged
// writes of a failed commit (nil for a claim).
func (g *Guard) storeErr(err error, tx *txn.Tx) error {
	if class := dynamostore.ClassOf(err); class != "" {
		return &PermanentError{Class: class, Tables: tablesOf(err, tx), Err: err}
	}
	var se *dynamostore.StoreError
	var canceled *txn.CanceledError
	if errors.As(err, &se) || errors.As(err, &canceled) ||
		errors.Is(err, dynamostore.ErrClaimContention) || errors.Is(err, txn.ErrConflict) {
		return &UnavailableError{RetryAfter: g.opts.RetryAfter, Err: err}
	}
	return err
}

// tablesOf returns the key table named by err (when it names one) and the
// tables of tx's staged writes, each once.
func tablesOf(err error, tx *txn.Tx) []string {
	var tables []string
	add := func(name string) {
		if name != "" && !slices.Contains(tables, name) {
			tables = append(tables, name)
		}
	}
	var se *dynamostore.StoreError
	if errors.As(err, &se) {
		add(se.Table)
	}
	for _, item := range tx.Items() {
		add(actionTable(item))
	}
	return tables
}

func actionTable(a types.TransactWriteItem) string {
	switch {
	case a.Put != nil:
		return aws.ToString(a.Put.TableName)
	case a.Update != nil:
		return aws.ToString(a.Update.TableName)
	case a.Delete != nil:
		return aws.ToString(a.Delete.TableName)
	case a.ConditionCheck != nil:
		return aws.ToString(a.ConditionCheck.TableName)
	}
	return ""
}
