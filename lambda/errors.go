package lambda

import (
	"errors"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/txn"
)

// cause is what every error type of this package holds: the error it
// names.
type cause struct{ err error }

func (c *cause) Error() string { return c.err.Error() }
func (c *cause) Unwrap() error { return c.err }

// KeyError: the input has no usable idempotency key. FuncOptions.Key
// failed or returned an empty key (ErrNoKey), or the store refused the
// key or scope (longer than the store allows: dynamostore.ErrInvalidRequest).
// Nothing was claimed or run; retrying the same input fails the same way.
type KeyError struct{ cause }

// ScopeError: FuncOptions.Scope failed for the input. It wraps that
// error (errors.Is and errors.As see it), but its message is fixed and
// does not include it: Lambda returns an error's message to the invoker,
// and how the function identifies callers is not the invoker's to read.
// FuncOptions.Logger receives the error. Nothing was claimed or run.
type ScopeError struct{ cause }

// scopeErrorMessage is the message of every *ScopeError.
const scopeErrorMessage = "lambda: the input's caller could not be identified, so its idempotency key cannot be scoped; nothing ran (the cause is in the function's log)"

func (e *ScopeError) Error() string { return scopeErrorMessage }

// FingerprintError: FuncOptions.Fingerprint failed for the input, which
// wraps its error. Nothing was claimed or run.
type FingerprintError struct{ cause }

// InFlightError: another invocation holds the key (idemkey.ErrInFlight;
// errors.As finds the *idemkey.InFlightError with its RetryAfter). The
// function did not run; retry after a delay.
type InFlightError struct{ cause }

// KeyReusedError: the key was used before with another input
// (idemkey.ErrMismatch). The function did not run; retrying the same input
// fails the same way.
type KeyReusedError struct{ cause }

// StoreUnavailableError: DynamoDB could not be reached, did not confirm
// the commit, or answered with a transient failure, among them a commit
// whose staged writes kept conflicting with concurrent writes
// (txn.ErrConflict) or were cancelled only for throttling or conflicts
// (txn.ErrCanceled) (idemkey.ErrUnavailable; errors.As finds the
// *idemkey.UnavailableError). Nothing was committed; a retry is safe.
type StoreUnavailableError struct{ cause }

// StoreMisconfiguredError: DynamoDB answered with a fault a retry meets
// again (idemkey.ErrPermanent; errors.As finds the *idemkey.PermanentError,
// whose Class names the fault): a missing table, denied access, a staged
// write it rejects as invalid (txn.ErrValidation, or txn.ErrCanceled for a
// cancellation with another reason than throttling or a conflict, such as
// an item collection over its size limit: Class
// dynamostore.ClassInvalidWrite), or a key record and staged writes of
// more than txn.MaxActions actions (txn.ErrTooManyActions, without a call:
// Class dynamostore.ClassTooManyActions). Nothing was committed; the
// function's configuration, tables, permissions or staged writes need a
// change.
type StoreMisconfiguredError struct{ cause }

// LockLostError: the key's lock lease ran out while the function ran and
// another invocation reclaimed it (idemkey.ErrLockLost). The function's
// output and staged writes were not committed.
type LockLostError struct{ cause }

// StagedWriteError: the commit of the writes the function staged on its
// *txn.Tx was refused because a staged action failed its condition
// (txn.ErrConditionFailed; errors.As finds the *txn.ConditionFailedError),
// or because DynamoDB refused the commit's ClientRequestToken, used
// before with other parameters (txn.ErrTokenMismatch). Nothing was written
// and the key was released. The other refusals of staged writes have the
// type of their fault: a *StoreMisconfiguredError for a write DynamoDB
// rejects as invalid or for too many actions, a *StoreUnavailableError for
// writes that kept conflicting or were cancelled only for throttling.
type StagedWriteError struct{ cause }

// StoredOutputError: the key's first execution completed, but its stored
// output cannot be returned: it was too large to keep (ErrOutputOmitted),
// it does not decode into the output type (ErrOutputUndecodable), or the
// key record is corrupt (dynamostore.ErrCorruptRecord). The function is
// not run again for the key.
type StoredOutputError struct{ cause }

// OutputEncodingError: the function's output has no JSON encoding, so it
// cannot be stored. Nothing was committed and the key was released.
type OutputEncodingError struct{ cause }

// IdempotencyError: any other failure of the idempotency protocol, one the
// types above do not name. It wraps the protocol's error.
type IdempotencyError struct{ cause }

// errorClasses maps the protocol's errors to this package's types, first
// match first. A new class of error is one line here and one type above.
// The errors of package txn that the Guard wraps in an
// *idemkey.PermanentError (txn.ErrValidation, txn.ErrTooManyActions, some
// txn.ErrCanceled) or an *idemkey.UnavailableError (txn.ErrConflict, the
// other txn.ErrCanceled) match those rows, before any row of package txn.
var errorClasses = []struct {
	target error
	wrap   func(cause) error
}{
	{idemkey.ErrInFlight, func(c cause) error { return &InFlightError{c} }},
	{idemkey.ErrMismatch, func(c cause) error { return &KeyReusedError{c} }},
	{idemkey.ErrUnavailable, func(c cause) error { return &StoreUnavailableError{c} }},
	{idemkey.ErrPermanent, func(c cause) error { return &StoreMisconfiguredError{c} }},
	{idemkey.ErrLockLost, func(c cause) error { return &LockLostError{c} }},
	{dynamostore.ErrInvalidRequest, func(c cause) error { return &KeyError{c} }},
	{dynamostore.ErrCorruptRecord, func(c cause) error { return &StoredOutputError{c} }},
	{ErrOutputOmitted, func(c cause) error { return &StoredOutputError{c} }},
	{ErrOutputUndecodable, func(c cause) error { return &StoredOutputError{c} }},
	{txn.ErrConditionFailed, func(c cause) error { return &StagedWriteError{c} }},
	{txn.ErrTokenMismatch, func(c cause) error { return &StagedWriteError{c} }},
}

// classify returns err, an error of the protocol (never the function's
// own), as the type of its class.
func classify(err error) error {
	for _, c := range errorClasses {
		if errors.Is(err, c.target) {
			return c.wrap(cause{err})
		}
	}
	return &IdempotencyError{cause{err}}
}

// functionError carries an error of the function through idemkey.Guard.Do,
// so that it is told apart from the protocol's errors and returned as it
// is.
type functionError struct{ err error }

func (e *functionError) Error() string { return e.err.Error() }
func (e *functionError) Unwrap() error { return e.err }
