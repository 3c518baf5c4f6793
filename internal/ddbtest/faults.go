package ddbtest

import (
	"context"
	"errors"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ErrInjected is the error a Faulty client returns for an injected fault.
var ErrInjected = errors.New("ddbtest: injected fault")

// Fault says what happens to one call.
type Fault int

const (
	Pass       Fault = iota // the call goes through
	FailBefore              // ErrInjected, unsent: a timeout before DynamoDB saw it
	FailAfter               // sent and applied, then ErrInjected: the ambiguous outcome
	Repeat                  // sent twice, the second result reported: an SDK retry after a lost answer
	Conflict                // unsent, cancelled with TransactionConflict on the last action
)

// Faulty wraps a real client and applies a plan of faults per operation.
type Faulty struct {
	*dynamodb.Client
	mu   sync.Mutex
	plan map[string][]Fault
	seen map[string]int
}

// NewFaulty wraps client.
func NewFaulty(client *dynamodb.Client) *Faulty {
	return &Faulty{Client: client, plan: map[string][]Fault{}, seen: map[string]int{}}
}

// Plan sets the faults of the next calls of op, in order; calls beyond the
// plan pass.
func (f *Faulty) Plan(op string, faults ...Fault) {
	f.mu.Lock()
	f.plan[op] = append([]Fault(nil), faults...)
	f.seen[op] = 0
	f.mu.Unlock()
}

func (f *Faulty) next(op string) Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := f.seen[op]
	f.seen[op]++
	if i < len(f.plan[op]) {
		return f.plan[op][i]
	}
	return Pass
}

func do[I, O any](f *Faulty, ctx context.Context, op string, in I, call func(context.Context, I, ...func(*dynamodb.Options)) (O, error), optFns []func(*dynamodb.Options)) (O, error) {
	var zero O
	switch f.next(op) {
	case FailBefore:
		return zero, ErrInjected
	case FailAfter:
		if _, err := call(ctx, in, optFns...); err != nil {
			return zero, err
		}
		return zero, ErrInjected
	case Repeat:
		_, _ = call(ctx, in, optFns...)
	case Conflict:
		n := 1
		if t, ok := any(in).(*dynamodb.TransactWriteItemsInput); ok {
			n = len(t.TransactItems)
		}
		reasons := make([]types.CancellationReason, n)
		for i := range reasons {
			reasons[i].Code = aws.String("None")
		}
		reasons[n-1].Code = aws.String("TransactionConflict")
		return zero, &types.TransactionCanceledException{Message: aws.String("Transaction cancelled (injected)"), CancellationReasons: reasons}
	}
	return call(ctx, in, optFns...)
}

// PutItem applies the plan of "PutItem".
func (f *Faulty) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return do(f, ctx, "PutItem", in, f.Client.PutItem, o)
}

// GetItem applies the plan of "GetItem".
func (f *Faulty) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return do(f, ctx, "GetItem", in, f.Client.GetItem, o)
}

// DeleteItem applies the plan of "DeleteItem".
func (f *Faulty) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return do(f, ctx, "DeleteItem", in, f.Client.DeleteItem, o)
}

// TransactWriteItems applies the plan of "TransactWriteItems".
func (f *Faulty) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return do(f, ctx, "TransactWriteItems", in, f.Client.TransactWriteItems, o)
}
