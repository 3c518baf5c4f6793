// Package ddbtest holds test instruments for code that calls DynamoDB: call
// counters and recorders installed as SDK middleware, and fault injectors
// around a real client or its HTTP client. None replaces DynamoDB; each
// observes or disturbs calls to a real endpoint.
package ddbtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// Counter counts DynamoDB operations by name, once per call whatever the
// SDK's retries.
type Counter struct {
	mu     sync.Mutex
	counts map[string]int
}

// NewCounter returns an empty Counter.
func NewCounter() *Counter { return &Counter{counts: map[string]int{}} }

// Install adds the counter to a client's middleware, e.g.
// endpoint.NewClient(counter.Install).
func (c *Counter) Install(o *dynamodb.Options) {
	initialize(o, "idemkeyCallCounter", func(ctx context.Context, _ any) {
		c.mu.Lock()
		c.counts[awsmiddleware.GetOperationName(ctx)]++
		c.mu.Unlock()
	})
}

// initialize adds to o's stack a step that calls seen with every call's
// input before the call.
func initialize(o *dynamodb.Options, id string, seen func(context.Context, any)) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc(id,
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				seen(ctx, in.Parameters)
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	})
}

// Count returns the calls of operation op (e.g. "PutItem").
func (c *Counter) Count(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[op]
}

// Total returns all calls counted.
func (c *Counter) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.counts {
		n += v
	}
	return n
}

// Reset forgets every count.
func (c *Counter) Reset() {
	c.mu.Lock()
	clear(c.counts)
	c.mu.Unlock()
}

// String lists the counts as "GetItem=1 PutItem=2", sorted.
func (c *Counter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	parts := []string{}
	for _, op := range slices.Sorted(maps.Keys(c.counts)) {
		parts = append(parts, fmt.Sprintf("%s=%d", op, c.counts[op]))
	}
	return strings.Join(parts, " ")
}

// WithoutOldItem, a client option, removes the Item of every
// ConditionalCheckFailedException and cancellation reason the client
// receives, as an implementation ignoring ReturnValuesOnConditionCheckFailure
// answers, so that code under test takes its fallback.
func WithoutOldItem(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("idemkeyWithoutOldItem",
			func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleDeserialize(ctx, in)
				var failed *types.ConditionalCheckFailedException
				if errors.As(err, &failed) {
					failed.Item = nil
				}
				var cancelled *types.TransactionCanceledException
				if errors.As(err, &cancelled) {
					for i := range cancelled.CancellationReasons {
						cancelled.CancellationReasons[i].Item = nil
					}
				}
				return out, md, err
			}), middleware.Before)
	})
}
