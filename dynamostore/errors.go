package dynamostore

import (
	"errors"
	"fmt"
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
	// length). DynamoDB is not called.
	ErrInvalidRequest = errors.New("dynamostore: invalid request")

	// ErrClaimContention reports that a claim lost its condition and then
	// found no live record, several times in a row: the key is being
	// claimed, released or evicted under it. Retrying later is safe.
	ErrClaimContention = errors.New("dynamostore: claim contention")
)

// StoreError reports a DynamoDB call that failed for a reason other than a
// condition: the service was unreachable, throttled beyond the SDK's
// retries, or rejected the request. Err is the SDK's error.
//
// A StoreError on a write does not say whether the write was applied: a
// timeout can arrive after DynamoDB applied it. The fences of this package
// make every write safe to repeat.
//
// LockToken is set on the failure of a write of a key record (a claim, a
// commit, CommitFirst): the lock token of the record it tried to write. A
// record read back with this token was written by this call, whoever else
// holds the same key and fingerprint.
type StoreError struct {
	Op        string // the DynamoDB operation, e.g. "PutItem"
	Err       error
	LockToken string
}

func (e *StoreError) Error() string { return "dynamostore: " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the SDK's error.
func (e *StoreError) Unwrap() error { return e.Err }

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
