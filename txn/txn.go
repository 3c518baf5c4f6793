package txn

import (
	"context"
	"errors"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey/internal/txnctx"
)

// MaxActions is DynamoDB's limit on the actions of one TransactWriteItems
// call. The key record takes one, so a Tx holds at most MaxActions-1.
const MaxActions = 100

// Tx is a set of staged writes. It is safe for concurrent use. The zero
// value is an empty Tx ready to use.
type Tx struct {
	mu    sync.Mutex
	items []types.TransactWriteItem
}

// New returns an empty Tx.
func New() *Tx { return new(Tx) }

// Put stages a PutItem. Its ConditionExpression, if any, is checked at commit.
func (t *Tx) Put(p types.Put) { t.Add(types.TransactWriteItem{Put: &p}) }

// Update stages an UpdateItem.
func (t *Tx) Update(u types.Update) { t.Add(types.TransactWriteItem{Update: &u}) }

// Delete stages a DeleteItem.
func (t *Tx) Delete(d types.Delete) { t.Add(types.TransactWriteItem{Delete: &d}) }

// ConditionCheck stages a condition on an item that the transaction does not
// write: the commit fails unless it holds.
func (t *Tx) ConditionCheck(c types.ConditionCheck) {
	t.Add(types.TransactWriteItem{ConditionCheck: &c})
}

// Add stages one action as is. Staging on a nil Tx panics with a
// message that names the missing middleware: a nil Tx is what
// FromContext returns for a context that no idemkey front door made, and
// a write staged there would never be committed.
func (t *Tx) Add(item types.TransactWriteItem) {
	if t == nil {
		panic(errNoTx)
	}
	t.mu.Lock()
	t.items = append(t.items, item)
	t.mu.Unlock()
}

// Len returns the number of staged actions. A nil Tx has none.
func (t *Tx) Len() int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.items)
}

// Items returns a copy of the staged actions in staging order. A nil Tx has
// none.
func (t *Tx) Items() []types.TransactWriteItem {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]types.TransactWriteItem(nil), t.items...)
}

// Reset discards every staged action. On a nil Tx it does nothing.
func (t *Tx) Reset() {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.items = nil
	t.mu.Unlock()
}

// errNoTx is the panic value of a write staged on a nil Tx.
var errNoTx = errors.New("txn: write staged on a nil *txn.Tx: the context carries no Tx, " +
	"so the request did not pass through idemkey's middleware (handler.New, a lambda adapter or " +
	"the grpc interceptor); wrap the route with it, or check FromContext's ok before staging")

// FromContext returns the Tx that an idemkey front door put in ctx, and
// true. For a context no front door made (a route without the
// middleware) it returns nil and false; staging on that nil Tx panics
// with a message saying that the middleware is missing, rather than
// dropping the write.
func FromContext(ctx context.Context) (*Tx, bool) {
	t, ok := txnctx.Value(ctx).(*Tx)
	return t, ok && t != nil
}
