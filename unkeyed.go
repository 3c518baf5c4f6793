package idemkey

import (
	"context"
	"errors"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/txn"
)

// ErrUnkeyedUnsupported reports writes staged by a request without a key
// on a store that commits staged writes only with a key record. Nothing
// was written.
var ErrUnkeyedUnsupported = errors.New("idemkey: this store commits staged writes only with an idempotency key")

// unkeyedStore is what CommitUnkeyed needs of a store.
type unkeyedStore interface {
	CommitStaged(ctx context.Context, tx *txn.Tx) error
}

// CommitUnkeyed commits the writes staged on tx by a request that carries
// no key (a method the front door does not guard, or an optional key left
// out), so that a handler's code never depends on whether its request
// carried one. They are written in one TransactWriteItems without a key
// record: all or none, but nothing remembers the request, so a retry
// executes again. Nothing is written, and there is no call, when tx holds
// no writes or when ShouldStore rejects resp (a 5xx answer by default:
// as for a keyed request, its staged writes are discarded).
//
// The write runs detached from ctx, bounded by WriteTimeout. Its errors:
// a *txn.ConditionFailedError when a staged condition failed; an
// *UnavailableError (ErrUnavailable) when DynamoDB answered that nothing
// was written (a transaction cancelled for throttling, or that kept
// conflicting), so that a retry is one execution; an
// *OutcomeUnknownError (ErrOutcomeUnknown, not retryable) when the call
// failed without that answer (a timeout, a 5xx, a transaction still in
// progress, throttling beyond the SDK's retries): the writes may have
// landed, and a retry would apply them again; a *PermanentError for a
// fault a retry meets again; and ErrUnkeyedUnsupported, without any call,
// when the store cannot commit writes without a key (a
// multiregion.Store).
//
// With an Observer, a call that has writes to commit reports one Event
// (Mode Unkeyed): OutcomeUnkeyedCommitted, or the outcome of its
// error (OutcomeError for ErrUnkeyedUnsupported and ErrOutcomeUnknown).
func (g *Guard) CommitUnkeyed(ctx context.Context, tx *txn.Tx, resp Response) error {
	if tx.Len() == 0 || !g.opts.ShouldStore(resp) {
		return nil
	}
	var pr probe
	ctx, p := g.begin(ctx, Unkeyed, nil, &pr)
	p.staged(tx)
	s, ok := g.store.(unkeyedStore)
	if !ok {
		p.finish(ctx, "", nil, ErrUnkeyedUnsupported)
		return ErrUnkeyedUnsupported
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.opts.WriteTimeout)
	defer cancel()
	p.call()
	err := s.CommitStaged(wctx, tx)
	p.done(PhaseCommit)
	if err != nil {
		err = g.unkeyedErr(err, tx)
		p.finish(ctx, "", nil, err)
		return err
	}
	p.finish(ctx, OutcomeUnkeyedCommitted, &Result{Response: resp, Stored: true}, nil)
	return nil
}

// unkeyedErr is storeErr for the commit of writes without a key: a
// transient failure of the call itself (no definite answer from DynamoDB)
// is an *OutcomeUnknownError, since no key record tells a retry that the
// writes landed.
func (g *Guard) unkeyedErr(err error, tx *txn.Tx) error {
	var se *dynamostore.StoreError
	if errors.As(err, &se) && dynamostore.ClassOf(err) == "" {
		return &OutcomeUnknownError{Err: err}
	}
	return g.storeErr(err, tx)
}
