package multiregion_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	idemlambda "github.com/idemkey/idemkey/lambda"
)

type charge struct {
	OrderID string `json:"order_id"`
	Amount  int    `json:"amount"`
}

type receipt struct {
	Execution int `json:"execution"`
}

// The Lambda wrapper for any event takes the router as it takes a
// single-table store: keys homed in every region execute once, replay,
// and refuse another input.
func TestLambdaWrapperOverHomeRouterServesKeysHomedInEveryRegion(t *testing.T) {
	w := newWorld(t, 0, false)
	router := w.router(homeMode)
	executions := 0
	fn := idemlambda.Idempotent(router, func(ctx context.Context, in charge) (receipt, error) {
		executions++
		return receipt{Execution: executions}, nil
	}, func(o *idemlambda.FuncOptions[charge]) {
		o.Name = "charge"
		o.Key = func(in charge) (string, error) { return in.OrderID, nil }
		o.Scope = func(context.Context, charge) (string, error) { return tenant, nil }
		o.Now = w.clock.Now
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The function's records are in its own scope, which homes its keys.
	scope := idemlambda.FunctionScope("charge", tenant)
	for i, region := range w.names {
		key := ""
		for n := 0; key == "" && n < 1000; n++ {
			if k := fmt.Sprintf("key-%d", n); router.Home(scope, k) == region {
				key = k
			}
		}
		require.NotEmpty(t, key, "no key homed in %s", region)
		first, err := fn(ctx, charge{OrderID: key, Amount: 100})
		require.NoError(t, err, region)
		assert.Equal(t, i+1, first.Execution, region)
		_, err = w.store(region).Get(ctx, scope, key)
		assert.NoError(t, err, "%s: the record is written in the key's home region", region)
		again, err := fn(ctx, charge{OrderID: key, Amount: 100})
		require.NoError(t, err, region)
		assert.Equal(t, first, again, "%s: replayed, not executed", region)
		_, err = fn(ctx, charge{OrderID: key, Amount: 999})
		assert.ErrorIs(t, err, idemkey.ErrMismatch, region)
	}
	assert.Equal(t, len(w.names), executions)
}
