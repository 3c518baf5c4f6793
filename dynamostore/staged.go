package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey/internal/txnwrite"
	"github.com/idemkey/idemkey/txn"
)

// CommitStaged writes the actions staged on tx in one TransactWriteItems
// without a key record, all or none: the commit of a request that carries
// no key (a repeat of it executes again). It makes no call when tx holds
// no actions.
//
// Errors: those of Commit's transaction (a *txn.ConditionFailedError's
// Index counts from the first staged action; txn.ErrTooManyActions above
// txn.MaxActions and a *txn.ValidationError for a staged write of the
// Store's key records come without a call), or a *StoreError when the
// call failed: after a timeout or a 5xx the outcome is unknown.
func (s *Store) CommitStaged(ctx context.Context, tx *txn.Tx) error {
	effects := tx.Items()
	if len(effects) == 0 {
		return nil
	}
	if err := s.refuseKeyRecordWrites(effects); err != nil {
		return err
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
// transaction, mapped by package txn, rather than a failed call.
func isTxnAnswer(err error) bool {
	var canceled *txn.CanceledError
	return errors.As(err, &canceled) || errors.Is(err, txn.ErrConditionFailed) || errors.Is(err, txn.ErrConflict) ||
		errors.Is(err, txn.ErrValidation) || errors.Is(err, txn.ErrTooManyActions) || errors.Is(err, txn.ErrTokenMismatch)
}

// refuseKeyRecordWrites refuses (a *txn.ValidationError) a staged Put,
// Update or Delete in the Store's table and namespace: a staged delete of
// another key's record would let it execute again, a put forge its answer.
func (s *Store) refuseKeyRecordWrites(effects []types.TransactWriteItem) error {
	for i, e := range effects {
		var table *string
		var item map[string]types.AttributeValue
		switch {
		case e.Put != nil:
			table, item = e.Put.TableName, e.Put.Item
		case e.Update != nil:
			table, item = e.Update.TableName, e.Update.Key
		case e.Delete != nil:
			table, item = e.Delete.TableName, e.Delete.Key
		default:
			continue
		}
		if !sameTable(aws.ToString(table), s.table) {
			continue
		}
		if _, ok := s.layout.InNamespace(item); ok {
			where := "every item of a dedicated key table"
			if marked(s.layout.Schema) {
				where = fmt.Sprintf("the partition key values beginning with %q", s.layout.Namespaced(""))
			}
			return &txn.ValidationError{Index: i, Message: fmt.Sprintf(
				"the staged action writes an item of table %q's key records (%s); only the idempotency store writes those", s.table, where)}
		}
	}
	return nil
}

// sameTable reports whether two TableName values (names or ARNs) match.
func sameTable(a, b string) bool {
	name := func(s string) string {
		if _, after, ok := strings.Cut(s, ":table/"); ok && strings.HasPrefix(s, "arn:") {
			return after
		}
		return s
	}
	return a == b || name(a) == name(b)
}
