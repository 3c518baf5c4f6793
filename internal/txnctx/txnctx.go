// Package txnctx carries a staged transaction in a context, for the
// protocol that creates it and package txn that hands it to a handler.
// The value is untyped so that this package imports neither.
package txnctx

import "context"

type key struct{}

// With returns a copy of ctx that carries tx.
func With(ctx context.Context, tx any) context.Context {
	return context.WithValue(ctx, key{}, tx)
}

// Value returns what With stored in ctx, or nil.
func Value(ctx context.Context) any { return ctx.Value(key{}) }
