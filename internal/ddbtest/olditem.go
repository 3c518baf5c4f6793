package ddbtest

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// WithoutOldItem makes a client see a DynamoDB implementation that ignores
// ReturnValuesOnConditionCheckFailure: it removes the Item from every
// ConditionalCheckFailedException and from every cancellation reason of a
// TransactionCanceledException the client receives, so that code under
// test takes its fallback (reading the item). Install it with
// endpoint.NewClient(ddbtest.WithoutOldItem).
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
