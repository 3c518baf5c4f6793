package ddbtest

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TableClient is what the table helpers call.
type TableClient interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DeleteTable(ctx context.Context, in *dynamodb.DeleteTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// CreateTable creates an on-demand table with the single String partition
// key hashKey (the shape of the tests' effect tables), and deletes it when
// the test ends, so that external endpoints keep no test tables. It fails
// the test on error.
func CreateTable(t testing.TB, c TableClient, name, hashKey string) {
	t.Helper()
	_, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(hashKey), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(hashKey), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		t.Fatalf("creating table %s: %v", name, err)
	}
	DeleteOnCleanup(t, c, name)
}

// DeleteOnCleanup deletes the table when the test ends.
func DeleteOnCleanup(t testing.TB, c TableClient, name string) {
	t.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
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
