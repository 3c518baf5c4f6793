package idemkey_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/txn"
)

// effectPut is a Put of the effect item id.
func (e *guardEnv) effectPut(id string) types.Put {
	return types.Put{TableName: &e.effects, Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}}}
}

// A staged write the SDK refuses before sending it (a required field left
// out) fails the same way on every retry: a PermanentError of class
// invalid-write, never a retryable UnavailableError.
func TestStagedWriteTheSDKRefusesIsPermanent(t *testing.T) {
	e := newGuardEnv(t)
	ctx := context.Background()
	noExpression := func(ctx context.Context) (idemkey.Response, error) {
		tx, _ := txn.FromContext(ctx)
		tx.Update(types.Update{TableName: &e.effects, Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "x"}}})
		return idemkey.Response{Status: 201}, nil
	}
	for _, mode := range []idemkey.Mode{idemkey.ClaimFirst, idemkey.OneTrip} {
		t.Run(mode.String(), func(t *testing.T) {
			g := e.guard(e.store(nil), func(o *idemkey.Options) { o.Mode = mode })
			for attempt := range 2 {
				_, err := g.Do(ctx, req("sdk-refused-"+mode.String()), noExpression)
				var pe *idemkey.PermanentError
				require.ErrorAs(t, err, &pe, "attempt %d", attempt)
				assert.Equal(t, dynamostore.ClassInvalidWrite, pe.Class)
				assert.False(t, errors.Is(err, idemkey.ErrUnavailable), "not retryable")
			}
		})
	}
	t.Run("unkeyed", func(t *testing.T) {
		tx := txn.New()
		tx.Put(types.Put{TableName: &e.effects}) // no Item
		err := e.guard(e.store(nil)).CommitUnkeyed(ctx, tx, idemkey.Response{Status: 200})
		var pe *idemkey.PermanentError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, dynamostore.ClassInvalidWrite, pe.Class)
	})
}

// A function that panics has run: its Event says so, with what it staged.
func TestEventOfAPanickingFunctionReportsItsRun(t *testing.T) {
	e := newGuardEnv(t)
	for _, mode := range []idemkey.Mode{idemkey.ClaimFirst, idemkey.OneTrip} {
		t.Run(mode.String(), func(t *testing.T) {
			var got idemkey.Event
			g := e.guard(e.store(nil), func(o *idemkey.Options) {
				o.Mode = mode
				o.Observer = idemkey.ObserverFunc(func(_ context.Context, ev idemkey.Event) { got = ev })
			})
			assert.PanicsWithValue(t, "bug", func() {
				_, _ = g.Do(context.Background(), req("panics-"+mode.String()), func(ctx context.Context) (idemkey.Response, error) {
					tx, _ := txn.FromContext(ctx)
					tx.Put(e.effectPut("p-" + mode.String()))
					time.Sleep(2 * time.Millisecond)
					panic("bug")
				})
			})
			assert.Equal(t, idemkey.OutcomeExecutedReleased, got.Outcome)
			assert.NotZero(t, got.Phases&idemkey.PhaseRun, "the function ran")
			assert.GreaterOrEqual(t, got.Run, 2*time.Millisecond)
			assert.Equal(t, 1, got.StagedActions)
		})
	}
}

// The key record and 99 staged writes commit; 100 staged writes are
// refused before any call, as permanent, and the key is released.
func TestAHundredStagedWritesAreRefusedAndTheKeyReleased(t *testing.T) {
	e := newGuardEnv(t)
	ctx := context.Background()
	g := e.guard(e.store(nil))
	stage := func(n int) idemkey.Func {
		return func(ctx context.Context) (idemkey.Response, error) {
			tx, _ := txn.FromContext(ctx)
			for i := range n {
				tx.Put(e.effectPut(fmt.Sprint("w-", n, "-", i)))
			}
			return idemkey.Response{Status: 201}, nil
		}
	}
	sum := sha256.Sum256([]byte("body"))
	r := idemkey.Request{Scope: "s", Key: "hundred", Method: "POST", Path: "/p", Fingerprint: sum[:]}
	_, err := g.Do(ctx, r, stage(100))
	var pe *idemkey.PermanentError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, dynamostore.ClassTooManyActions, pe.Class)
	res, err := g.Do(ctx, r, stage(99))
	require.NoError(t, err, "the key was released")
	assert.True(t, res.Stored)
}
