package ddbtest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// TableClient is what the table helpers call.
type TableClient interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	DeleteTable(ctx context.Context, in *dynamodb.DeleteTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

var _ TableClient = (*dynamodb.Client)(nil)

// Table waits and deletion retries back off within these bounds:
// emulators answer at once, DynamoDB takes seconds.
const (
	tableWaitMinDelay = 20 * time.Millisecond
	tableWaitMaxDelay = 2 * time.Second
	tableWaitTimeout  = 3 * time.Minute
)

// CreateTable creates an on-demand table with the String partition key
// hashKey, waits until it is ACTIVE and deletes it with DeleteOnCleanup,
// failing the test on error. name must be unique to the test
// (localstack.TableName): a ResourceInUseException after the SDK's retry
// (moto sometimes answers with a bad checksum) means the first attempt
// created it, and is success; a table that existed before fails the test.
func CreateTable(t testing.TB, c TableClient, name, hashKey string) {
	t.Helper()
	var attempts attemptCounter
	_, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(hashKey), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(hashKey), KeyType: types.KeyTypeHash}},
	}, attempts.install)
	var inUse *types.ResourceInUseException
	if err != nil && !(errors.As(err, &inUse) && attempts.n.Load() > 1) {
		t.Fatalf("creating table %s: %v", name, err)
	}
	DeleteOnCleanup(t, c, name)
	WaitActive(t, c, name)
}

// attemptCounter counts the SDK's attempts of a call, retries included.
type attemptCounter struct{ n atomic.Int64 }

func (a *attemptCounter) install(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("ddbtestAttemptCounter",
			func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
				a.n.Add(1)
				return next.HandleDeserialize(ctx, in)
			}), middleware.Before)
	})
}

// WaitActive waits until DescribeTable reports the table ACTIVE, failing
// the test when it does not become so; the first DescribeTable is sent at
// once, so an emulator costs one call and no delay.
func WaitActive(t testing.TB, c TableClient, name string) {
	t.Helper()
	w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = tableWaitMinDelay, tableWaitMaxDelay
	})
	if err := w.Wait(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(name)}, tableWaitTimeout); err != nil {
		t.Fatalf("waiting for table %s to be ACTIVE: %v", name, err)
	}
}

// DeleteOnCleanup deletes the table with DeleteTable when the test ends.
// A table it could not delete fails the test, named: on DynamoDB a leaked
// table is billed until someone deletes it.
func DeleteOnCleanup(t testing.TB, c TableClient, name string) {
	t.Cleanup(func() {
		if err := DeleteTable(context.Background(), c, name); err != nil {
			t.Errorf("ddbtest: table %s was NOT deleted and must be deleted by hand: %v", name, err)
		}
	})
}

// DeleteTable deletes the table, retrying a ResourceInUseException (a
// table being created or updated) and a LimitExceededException with
// backoff. It returns nil once the deletion is accepted or the table does
// not exist, else the error that stopped it.
func DeleteTable(ctx context.Context, c TableClient, name string) error {
	ctx, cancel := context.WithTimeout(ctx, tableWaitTimeout)
	defer cancel()
	delay := tableWaitMinDelay
	for {
		_, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		var notFound *types.ResourceNotFoundException
		if err == nil || errors.As(err, &notFound) {
			return nil
		}
		var inUse *types.ResourceInUseException
		var limited *types.LimitExceededException
		if !errors.As(err, &inUse) && !errors.As(err, &limited) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (gave up after %v: %w)", err, tableWaitTimeout, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, tableWaitMaxDelay)
	}
}

// CountItems counts the items of table whose String attribute attr equals
// value, with consistent reads over every page.
func CountItems(t testing.TB, c TableClient, table, attr, value string) int {
	t.Helper()
	n := 0
	in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)}
	for {
		out, err := c.Scan(context.Background(), in)
		if err != nil {
			t.Fatalf("scanning %s: %v", table, err)
		}
		for _, item := range out.Items {
			if s, ok := item[attr].(*types.AttributeValueMemberS); ok && s.Value == value {
				n++
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return n
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
