package dynamostore

import (
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"

	"github.com/idemkey/idemkey/txn"
)

var (
	// ErrNotFound reports that no live record exists for a key: it was never
	// claimed, it was released, or it expired.
	ErrNotFound = errors.New("dynamostore: record not found")

	// ErrLockLost reports that a fenced write (Complete, Commit, Release) found
	// the record no longer owned by the claim: its lease ran out and another
	// request reclaimed the key, or it was released or evicted. Nothing was
	// written.
	ErrLockLost = errors.New("dynamostore: lock lost")

	// ErrCorruptRecord reports an item that is not a well-formed key record
	// of this package (a foreign item, or one edited by hand). It is never
	// replayed.
	ErrCorruptRecord = errors.New("dynamostore: corrupt record")

	// ErrInvalidRequest reports a claim whose request cannot be stored
	// (empty key; key, scope, method or path longer than MaxKeyBytes,
	// MaxScopeBytes, MaxMethodBytes or MaxPathBytes; wrong fingerprint
	// length; a scope or key that is not valid UTF-8), or a commit whose
	// response a record could not be read back with (a status outside 100
	// to 999; a BodyOmitted below zero or above 1 TiB). DynamoDB is not
	// called.
	ErrInvalidRequest = errors.New("dynamostore: invalid request")

	// ErrClaimContention reports that a claim lost its condition and then
	// found no live record, several times in a row: the key is being
	// claimed, released or evicted under it. Retrying later is safe.
	ErrClaimContention = errors.New("dynamostore: claim contention")
)

// StoreError reports a DynamoDB call that failed for a reason other than a
// condition: the service was unreachable, throttled beyond the SDK's
// retries, or rejected the request. Err is the SDK's error; Class tells a
// failure a retry may overcome from one it meets again. A failed write may
// have been applied (a timeout can follow it); the fences make every write
// safe to repeat.
//
// LockToken is set on the failure of a write of a key record (a claim, a
// commit, CommitFirst): a record read back with this token was written by
// this call.
type StoreError struct {
	Op        string // the DynamoDB operation, e.g. "PutItem"
	Err       error
	LockToken string
	// Table is the key table the call addressed, when the Store made it;
	// a commit's staged writes may address other tables too.
	Table string
}

func (e *StoreError) Error() string { return "dynamostore: " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the SDK's error.
func (e *StoreError) Unwrap() error { return e.Err }

// Class returns the kind of the failure: empty when a retry may succeed,
// otherwise the Class of a fault that a retry meets again.
func (e *StoreError) Class() Class { return classify(e.Err) }

// Temporary reports whether a retry of the call may succeed: its Class is
// empty.
func (e *StoreError) Temporary() bool { return e.Class() == "" }

// Class names a kind of DynamoDB failure that retrying the same request
// does not fix: only a change to the service, its tables or its
// permissions does. The empty Class stands for a transient failure: a
// throttling answer (ThrottlingException,
// ProvisionedThroughputExceededException, RequestLimitExceeded), a server
// error (InternalServerError, any 5xx), a timeout or network error with no
// answer, a transaction that kept conflicting
// (TransactionConflictException) or is still in progress
// (TransactionInProgressException). Its values are stable and are the
// names of the problem types idemkey's HTTP front doors answer with.
type Class string

const (
	// ClassMissingTable: DynamoDB answered ResourceNotFoundException. The
	// key table, or a table that a staged write names, does not exist (or
	// is not ACTIVE) in the client's account and region.
	ClassMissingTable Class = "missing-table"
	// ClassAccessDenied: DynamoDB (or S3, for a BodyStore) refused the
	// caller's credentials or permissions (AccessDeniedException, AccessDenied, UnrecognizedClientException, an
	// invalid signature, an expired security token, a missing one).
	ClassAccessDenied Class = "access-denied"
	// ClassInvalidWrite: DynamoDB rejected a write as invalid
	// (ValidationException: a staged item without its key attributes, two
	// actions on one item, an item over 400 KB, a malformed expression), or
	// cancelled a transaction for a reason other than a condition, a
	// conflict or throttling (an item collection over its size limit).
	ClassInvalidWrite Class = "invalid-write"
	// ClassTooManyActions: the key record and the staged writes are more
	// than txn.MaxActions actions. DynamoDB was not called.
	ClassTooManyActions Class = "too-many-actions"
	// ClassMissingBucket: the BodyStore's bucket does not exist (S3's
	// NoSuchBucket).
	ClassMissingBucket Class = "missing-bucket"
	// ClassRejected: DynamoDB refused the call with another client error
	// (HTTP 4xx) that the SDK does not retry.
	ClassRejected Class = "store-rejected"
)

// ClassOf returns the Class of the permanent store failure in err's chain:
// a *StoreError's Class, ClassTooManyActions for txn.ErrTooManyActions,
// ClassInvalidWrite for a *txn.ValidationError or a *txn.CanceledError
// whose reasons are not all throttling or conflicts. It returns the empty
// Class for a transient failure and for an error that is not the failure
// of a DynamoDB call (ErrLockLost, a staged condition, a function's own
// error).
func ClassOf(err error) Class {
	var validation *txn.ValidationError
	var canceled *txn.CanceledError
	var se *StoreError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, txn.ErrTooManyActions):
		return ClassTooManyActions
	case errors.As(err, &validation):
		return ClassInvalidWrite
	case errors.As(err, &canceled):
		for _, r := range canceled.Reasons {
			switch aws.ToString(r.Code) {
			case "", "None", "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
			default:
				return ClassInvalidWrite
			}
		}
		return ""
	case errors.As(err, &se):
		return se.Class()
	}
	return ""
}

// retryables are the SDK's own rules for what its retryer retries.
var retryables = retry.IsErrorRetryables(retry.DefaultRetryables)

// classify returns the Class of an error of the SDK: the error code of
// DynamoDB's answer first, then the SDK's retry rules, then the HTTP
// status. An error without an answer (a timeout, a refused connection, a
// cancelled context) is transient.
func classify(err error) Class {
	var invalid smithy.InvalidParamsError
	if errors.As(err, &invalid) {
		return ClassInvalidWrite // the SDK refused the input; nothing was sent
	}
	var api smithy.APIError
	if !errors.As(err, &api) {
		return ""
	}
	switch api.ErrorCode() {
	case "ResourceNotFoundException", "TableNotFoundException":
		return ClassMissingTable
	case "NoSuchBucket":
		return ClassMissingBucket
	case "AccessDenied", "AccessDeniedException", "UnrecognizedClientException", "InvalidSignatureException",
		"IncompleteSignature", "IncompleteSignatureException", "MissingAuthenticationToken",
		"MissingAuthenticationTokenException", "InvalidClientTokenId", "ExpiredToken",
		"ExpiredTokenException", "SignatureDoesNotMatch", "NotAuthorized", "UnauthorizedOperation":
		return ClassAccessDenied
	case "ValidationException", "SerializationException", "ItemCollectionSizeLimitExceededException":
		return ClassInvalidWrite
	case "TransactionConflictException", "ReplicatedWriteConflictException":
		return ""
	}
	if retryables.IsErrorRetryable(err) == aws.TrueTernary || api.ErrorFault() == smithy.FaultServer {
		return ""
	}
	var resp interface{ HTTPStatusCode() int }
	if errors.As(err, &resp) {
		switch status := resp.HTTPStatusCode(); {
		case status == 408 || status == 429:
		case status >= 400 && status < 500:
			return ClassRejected
		}
	}
	return ""
}

// RecordError describes why an item is not a well-formed key record.
// It matches ErrCorruptRecord with errors.Is.
type RecordError struct {
	Attr   string // the attribute at fault
	Reason string
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("dynamostore: corrupt record: attribute %q: %s", e.Attr, e.Reason)
}

// Is reports whether target is ErrCorruptRecord.
func (e *RecordError) Is(target error) bool { return target == ErrCorruptRecord }
