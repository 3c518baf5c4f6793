package dynamostore

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// countAttempts counts in *n the attempts the SDK makes of one call.
func countAttempts(n *int) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			// The end of the finalize step runs inside the retry loop.
			return s.Finalize.Add(middleware.FinalizeMiddlewareFunc("idemkey.CountAttempts",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					*n++
					return next.HandleFinalize(ctx, in)
				}), middleware.After)
		})
	}
}

type itemGetter interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// deletedByEarlierAttempt reports whether a delete whose condition failed
// had deleted its item on an earlier attempt: sent more than once, and a
// consistent read finds the item gone. It returns the read's capacity.
func deletedByEarlierAttempt(ctx context.Context, client itemGetter, in *dynamodb.DeleteItemInput, attempts int) (bool, *types.ConsumedCapacity) {
	if attempts < 2 {
		return false, nil
	}
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: in.TableName, Key: in.Key, ConsistentRead: aws.Bool(true),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return false, nil
	}
	return out.Item == nil, out.ConsumedCapacity
}
