package localstack

import (
	"context"

	"github.com/aws/smithy-go/middleware"
)

// oneAtATime makes the clients of one endpoint send one request at a time:
// an attempt waits until the attempt before it has its response (or has
// failed), or until its own context is done. It is SDK middleware, so a
// client keeps it whatever HTTP client it is given (tests that inject
// faults replace the HTTP client), and the SDK's retry delays are spent
// outside it.
//
// It is used for loopback external endpoints, the local DynamoDB
// implementations, which do not all isolate concurrent requests. moto
// 5.2.1 runs requests on threads without a lock: a TransactWriteItems
// snapshots each table it writes, one after the other, and when it is
// cancelled restores the snapshots, erasing writes that other requests
// made in between (a key record falls back to in progress while the
// payment committed with it stays); and a snapshot taken while another
// request changes the table fails with HTTP 500. DynamoDB serialises the
// requests on an item, and so does the embedded emulator; one request at
// a time is one of the orders DynamoDB could have chosen, so code that is
// correct on DynamoDB stays correct.
type oneAtATime struct {
	turn chan struct{} // holds a token while an attempt is out
}

func newOneAtATime() *oneAtATime { return &oneAtATime{turn: make(chan struct{}, 1)} }

// install adds the middleware to a client's stack (an aws.Config
// APIOptions entry).
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
