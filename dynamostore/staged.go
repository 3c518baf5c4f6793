package dynamostore

import (
	"context"
	"errors"

	"github.com/idemkey/idemkey/internal/txnwrite"
	"github.com/idemkey/idemkey/txn"
)

// CommitStaged writes the actions staged on tx in one TransactWriteItems
// without a key record: all of them or none. It is the commit of a request
// that carries no key; nothing records the request, so a repeat of it
// executes again. It makes no call when tx holds no actions.
//
// Errors: those of Commit's transaction (*txn.ConditionFailedError, whose
// Index counts from the first staged action, *txn.ConflictError,
// *txn.ValidationError, *txn.CanceledError, txn.ErrTooManyActions above
// MaxActions actions, without a call), or a *StoreError when the call
// failed; after a timeout or a 5xx the outcome is unknown.
func (s *Store) CommitStaged(ctx context.Context, tx *txn.Tx) error {
	effects := tx.Items()
	if len(effects) == 0 {
		return nil
	}
	err := txnwrite.WriteStaged(ctx, s.client, effects, s.opts.Txn)
	if err == nil {
		return nil
	}
	if isTxnAnswer(err) {
		return err
	}
	return &StoreError{Op: "TransactWriteItems", Err: err}
}

// isTxnAnswer reports whether err is DynamoDB's definite answer to a
// transaction (a cancellation, a refusal), mapped by package txn, rather
// than a failed call.
func isTxnAnswer(err error) bool {
	var canceled *txn.CanceledError
	return errors.As(err, &canceled) || errors.Is(err, txn.ErrConditionFailed) || errors.Is(err, txn.ErrConflict) ||
		errors.Is(err, txn.ErrValidation) || errors.Is(err, txn.ErrTooManyActions) || errors.Is(err, txn.ErrTokenMismatch)
}
