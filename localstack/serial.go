package localstack

import (
	"context"

	"github.com/aws/smithy-go/middleware"
)

// oneAtATime makes the clients of one endpoint send one attempt at a time,
// as SDK middleware, so that it stays whatever HTTP client a test injects
// and retry delays are spent outside it. moto runs requests unlocked: a
// cancelled TransactWriteItems restores snapshots of its tables, erasing
// other requests' writes. One request at a time is one of the orders
// DynamoDB could choose, so code correct on DynamoDB stays correct.
type oneAtATime struct {
	turn chan struct{} // holds a token while an attempt is out
}

func newOneAtATime() *oneAtATime { return &oneAtATime{turn: make(chan struct{}, 1)} }

func (s *oneAtATime) install(stack *middleware.Stack) error {
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("localstackOneRequestAtATime",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			select {
			case s.turn <- struct{}{}:
			case <-ctx.Done():
				return middleware.DeserializeOutput{}, middleware.Metadata{}, ctx.Err()
			}
			defer func() { <-s.turn }()
			return next.HandleDeserialize(ctx, in)
		}), middleware.Before)
}
