package lambda_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	idemlambda "github.com/idemkey/idemkey/lambda"
)

// Lambda hands a returned error's message to the invoker. A Scope that
// fails says why to the operator (the log) and to Go callers (errors.Is),
// never in that message; nothing is claimed or run.
func TestScopeErrorMessageIsFixedAndTheCauseIsLogged(t *testing.T) {
	e := newEnv(t)
	o := newOrders(e)
	secret := errors.New("token signed by kid k-7f3 is not in the JWKS of https://auth.internal.example")
	var log bytes.Buffer
	fn := idemlambda.Idempotent(e.store, o.handle, byID(e), func(f *idemlambda.FuncOptions[order]) {
		f.SingleCaller = false
		f.Scope = func(context.Context, order) (string, error) { return "", secret }
		f.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	e.calls.Reset()

	_, err := fn(context.Background(), order{ID: "o-9", Amount: 1})
	var se *idemlambda.ScopeError
	require.ErrorAs(t, err, &se)
	assert.ErrorIs(t, err, secret, "Go callers still see the cause")
	assert.NotContains(t, err.Error(), "JWKS", "the invoker must not read how callers are identified")
	assert.NotContains(t, err.Error(), "k-7f3")
	assert.Contains(t, log.String(), "level=WARN")
	assert.Contains(t, log.String(), "JWKS", "the operator reads the cause in the log")
	assert.Contains(t, log.String(), "function="+ordersName)
	assert.Equal(t, 0, e.calls.Total(), "nothing is claimed")
	assert.Equal(t, int64(0), o.executed.Load())
}
