package txn_test

import (
	"context"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"

	"github.com/idemkey/idemkey/internal/txnctx"
	"github.com/idemkey/idemkey/txn"
)

func TestTxKeepsStagingOrderAndIsSafeForConcurrentUse(t *testing.T) {
	tx := txn.New()
	tx.Put(types.Put{TableName: aws.String("a")})
	tx.Update(types.Update{TableName: aws.String("b")})
	tx.Delete(types.Delete{TableName: aws.String("c")})
	tx.ConditionCheck(types.ConditionCheck{TableName: aws.String("d")})
	items := tx.Items()
	assert.Len(t, items, 4)
	assert.Equal(t, "a", aws.ToString(items[0].Put.TableName))
	assert.Equal(t, "b", aws.ToString(items[1].Update.TableName))
	assert.Equal(t, "c", aws.ToString(items[2].Delete.TableName))
	assert.Equal(t, "d", aws.ToString(items[3].ConditionCheck.TableName))

	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() { defer wg.Done(); tx.Put(types.Put{TableName: aws.String("x")}) }()
	}
	wg.Wait()
	assert.Equal(t, 54, tx.Len())
	tx.Reset()
	assert.Zero(t, tx.Len())
}

func TestNilTxHasNoItems(t *testing.T) {
	var tx *txn.Tx
	assert.Zero(t, tx.Len())
	assert.Nil(t, tx.Items())
}

func TestContextCarriesTheTx(t *testing.T) {
	_, ok := txn.FromContext(context.Background())
	assert.False(t, ok)
	tx := txn.New()
	got, ok := txn.FromContext(txnctx.With(context.Background(), tx))
	assert.True(t, ok)
	assert.Same(t, tx, got)
	_, ok = txn.FromContext(txnctx.With(context.Background(), (*txn.Tx)(nil)))
	assert.False(t, ok, "a nil Tx is no Tx")
}

// A route without the middleware gets no Tx: staging on what FromContext
// returns must say so, not fail with a bare nil dereference (or drop the
// write).
func TestStagingWithoutTheMiddlewareSaysTheMiddlewareIsMissing(t *testing.T) {
	tx, ok := txn.FromContext(context.Background())
	assert.False(t, ok)
	assert.Nil(t, tx)
	assert.Zero(t, tx.Len())
	tx.Reset() // nothing staged, nothing to discard
	for name, stage := range map[string]func(){
		"Put":            func() { tx.Put(types.Put{TableName: aws.String("payments")}) },
		"Update":         func() { tx.Update(types.Update{TableName: aws.String("payments")}) },
		"Delete":         func() { tx.Delete(types.Delete{TableName: aws.String("payments")}) },
		"ConditionCheck": func() { tx.ConditionCheck(types.ConditionCheck{TableName: aws.String("payments")}) },
		"Add":            func() { tx.Add(types.TransactWriteItem{}) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				err, isErr := r.(error)
				if !assert.True(t, isErr, "panic value %v is not an error", r) {
					return
				}
				assert.Contains(t, err.Error(), "middleware")
				assert.Contains(t, err.Error(), "handler.New")
			}()
			stage()
			t.Fatal("staging on a nil Tx returned")
		})
	}
}
