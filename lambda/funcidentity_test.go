package lambda_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	idemlambda "github.com/idemkey/idemkey/lambda"
)

// shop is the scope of the tests of this file: one caller, named, so
// that only the functions' names tell their keys apart.
func shop(context.Context, order) (string, error) { return "shop", nil }

// Two functions share a table, a scope and a key (the order id): a
// "charge" and a "refund" of order o-9. Each runs once and replays its
// own output; neither answers with the other's.
func TestIdempotentFunctionsSharingATableEachRunAndReplayTheirOwnOutput(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	runs := map[string]int{}
	named := func(name string, sign int) func(context.Context, order) (receipt, error) {
		fn := func(ctx context.Context, in order) (receipt, error) {
			runs[name]++
			if err := e.stage(ctx, name+"/"+in.ID, in.ID); err != nil {
				return receipt{}, err
			}
			return receipt{OrderID: in.ID, Amount: sign * in.Amount, Execution: int64(runs[name])}, nil
		}
		return idemlambda.Idempotent(e.store, fn, func(o *idemlambda.FuncOptions[order]) {
			o.Name = name
			o.Scope = shop
			o.Key = func(in order) (string, error) { return in.ID, nil }
			o.Now = e.clock.Now
		})
	}
	charge, refund := named("charge", 1), named("refund", -1)
	in := order{ID: "o-9", Amount: 700}

	charged, err := charge(ctx, in)
	require.NoError(t, err)
	assert.Equal(t, receipt{OrderID: "o-9", Amount: 700, Execution: 1}, charged)
	refunded, err := refund(ctx, in)
	require.NoError(t, err)
	assert.Equal(t, receipt{OrderID: "o-9", Amount: -700, Execution: 1}, refunded, "the refund runs: the charge's record is not its own")
	assert.Equal(t, map[string]int{"charge": 1, "refund": 1}, runs)
	assert.Equal(t, 2, e.effectsFor("o-9"), "one effect per function")

	again, err := charge(ctx, in)
	require.NoError(t, err)
	assert.Equal(t, charged, again, "the charge replays its own output")
	again, err = refund(ctx, in)
	require.NoError(t, err)
	assert.Equal(t, refunded, again, "the refund replays its own output")
	assert.Equal(t, map[string]int{"charge": 1, "refund": 1}, runs, "replays run nothing")
	assert.Equal(t, 2, e.effectsFor("o-9"))
}

// The function's identity is an explicit name: none is derived from Go
// names, which change with refactorings and would silently forget the
// stored keys.
func TestIdempotentWithoutANameIsRefusedAtConstruction(t *testing.T) {
	e := newEnv(t)
	o := newOrders(e)
	key := func(f *idemlambda.FuncOptions[order]) {
		f.Key = func(in order) (string, error) { return in.ID, nil }
		f.Scope = shop
	}
	assert.PanicsWithValue(t, "lambda: Idempotent needs FuncOptions.Name, the function's identity", func() {
		idemlambda.Idempotent(e.store, o.handle, key)
	})
	assert.Panics(t, func() {
		idemlambda.Idempotent(e.store, o.handle, key, func(f *idemlambda.FuncOptions[order]) {
			f.Name = strings.Repeat("n", idemlambda.MaxNameBytes+1)
		})
	}, "a name longer than MaxNameBytes")
	assert.NotPanics(t, func() {
		idemlambda.Idempotent(e.store, o.handle, key, func(f *idemlambda.FuncOptions[order]) {
			f.Name = strings.Repeat("n", idemlambda.MaxNameBytes)
		})
	})
}

// Without a scope, every caller's keys would meet in one scope: a
// function must name its callers' scope or state that it has one caller.
func TestIdempotentWithoutAScopeIsRefusedAtConstruction(t *testing.T) {
	e := newEnv(t)
	o := newOrders(e)
	assert.PanicsWithValue(t, "lambda: Idempotent needs FuncOptions.Scope, or FuncOptions.SingleCaller for a function with one caller", func() {
		idemlambda.Idempotent(e.store, o.handle, func(f *idemlambda.FuncOptions[order]) {
			f.Name = "orders"
			f.Key = func(in order) (string, error) { return in.ID, nil }
		})
	})
}

func TestSQSBatchWithoutANameOrAScopeIsRefusedAtConstruction(t *testing.T) {
	e := newEnv(t)
	c := newConsumer(e)
	assert.Panics(t, func() { idemlambda.SQSBatch(e.store, c.handle) }, "neither a name nor a scope")
	assert.Panics(t, func() {
		idemlambda.SQSBatch(e.store, c.handle, func(o *idemlambda.FuncOptions[events.SQSMessage]) { o.Name = "orders-queue" })
	}, "no scope")
	assert.Panics(t, func() {
		idemlambda.SQSBatch(e.store, c.handle, func(o *idemlambda.FuncOptions[events.SQSMessage]) {
			o.Scope = func(context.Context, events.SQSMessage) (string, error) { return "shop", nil }
		})
	}, "no name")
}
