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

// Table operations on real DynamoDB take seconds (creation) and are
// refused while the table is CREATING or UPDATING; emulators answer at
// once. The waits start small so that emulators cost no delay, and end
// long enough for DynamoDB.
const (
	// TableWaitMinDelay is the first delay between two DescribeTable
	// calls of a wait, and the first delay before a DeleteTable is retried.
	TableWaitMinDelay = 20 * time.Millisecond
	// TableWaitMaxDelay caps the delay between two attempts.
	TableWaitMaxDelay = 2 * time.Second
	// TableWaitTimeout bounds a wait for ACTIVE, and the retries of a
	// DeleteTable, for one table.
	TableWaitTimeout = 3 * time.Minute
)

// CreateTable creates an on-demand table with the single String partition
// key hashKey (the shape of the tests' effect tables), waits until it is
// ACTIVE (see WaitActive) and registers its deletion with DeleteOnCleanup,
// so that external endpoints keep no test tables. It fails the test on
// error; a table that was created is deleted even then.
//
// name must be unique to the test (localstack.TableName makes such names):
// when the SDK sent the request more than once (it retries a response it
// lost or could not verify, and moto sometimes sends a response whose
// checksum does not match) and a later attempt finds the table existing
// (ResourceInUseException), an earlier attempt created it, and that is
// success. A table that exists before the first attempt fails the test.
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

// attemptCounter counts the attempts the SDK makes of the calls it is
// installed on (its retries included).
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

// WaitActive waits until DescribeTable reports the table ACTIVE, with the
// SDK's TableExists waiter: its first DescribeTable is sent at once, so an
// endpoint that creates tables synchronously (the emulators) costs one
// call and no delay. Later attempts back off from TableWaitMinDelay to
// TableWaitMaxDelay, for TableWaitTimeout at most. It fails the test when
// the table does not become ACTIVE.
func WaitActive(t testing.TB, c TableClient, name string) {
	t.Helper()
	w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = TableWaitMinDelay, TableWaitMaxDelay
	})
	if err := w.Wait(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(name)}, TableWaitTimeout); err != nil {
		t.Fatalf("waiting for table %s to be ACTIVE: %v", name, err)
	}
}

// DeleteOnCleanup deletes the table when the test ends, with DeleteTable.
// A table that does not exist (already deleted, or never created) is not
// an error. DynamoDB refuses to delete a table that is being created or
// updated (ResourceInUseException) and limits concurrent table operations
// (LimitExceededException): both are retried with backoff, from
// TableWaitMinDelay to TableWaitMaxDelay, for TableWaitTimeout at most.
//
// A table that could not be deleted fails the test (t.Errorf), naming the
// table and the last error: on real DynamoDB a leaked table is billed and
// stays until someone deletes it, and a passing test's log is not read.
func DeleteOnCleanup(t testing.TB, c TableClient, name string) {
	t.Cleanup(func() {
		if err := DeleteTable(context.Background(), c, name); err != nil {
			t.Errorf("ddbtest: table %s was NOT deleted and must be deleted by hand: %v", name, err)
		}
	})
}

// DeleteTable deletes the table as DeleteOnCleanup does and returns the
// error that stopped it: nil once DynamoDB accepted the deletion or the
// table does not exist.
func DeleteTable(ctx context.Context, c TableClient, name string) error {
	ctx, cancel := context.WithTimeout(ctx, TableWaitTimeout)
	defer cancel()
	delay := TableWaitMinDelay
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
			return fmt.Errorf("%w (gave up after %v: %w)", err, TableWaitTimeout, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, TableWaitMaxDelay)
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
