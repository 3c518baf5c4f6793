package localstack

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

func clientFor(url string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(url),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
}

// createTable creates a table keyed by the string attribute "pk" and, when
// sortKey is not empty, the string sort key sortKey. It fails the test on
// error, so it must be called from the test's goroutine.
func createTable(t *testing.T, c *dynamodb.Client, name, sortKey string) {
	t.Helper()
	if err := tryCreateTable(c, name, sortKey); err != nil {
		t.Fatalf("CreateTable(%s): %v", name, err)
	}
}

// tryCreateTable is createTable returning the error.
func tryCreateTable(c *dynamodb.Client, name, sortKey string) error {
	in := &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	}
	if sortKey != "" {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(sortKey), AttributeType: types.ScalarAttributeTypeS})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(sortKey), KeyType: types.KeyTypeRange})
	}
	_, err := c.CreateTable(context.Background(), in)
	return err
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func putItem(t *testing.T, c *dynamodb.Client, table string, item map[string]types.AttributeValue) {
	t.Helper()
	if _, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatalf("PutItem: %v", err)
	}
}

func testingEnv(k string) string { return os.Getenv(k) }

// conditionItem returns the Item of the ConditionalCheckFailedException err,
// failing the test when err is not one.
func conditionItem(t *testing.T, err error) map[string]types.AttributeValue {
	t.Helper()
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("err = %v, want ConditionalCheckFailedException", err)
	}
	return ccf.Item
}

// cancellationReasons returns the reasons of the TransactionCanceledException
// err, failing the test when err is not one.
func cancellationReasons(t *testing.T, err error) []types.CancellationReason {
	t.Helper()
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		t.Fatalf("err = %v, want TransactionCanceledException", err)
	}
	return tce.CancellationReasons
}

// transact runs TransactWriteItems with the given token (none when empty;
// the SDK then generates one).
func transact(c *dynamodb.Client, token string, items ...types.TransactWriteItem) error {
	in := &dynamodb.TransactWriteItemsInput{TransactItems: items}
	if token != "" {
		in.ClientRequestToken = aws.String(token)
	}
	_, err := c.TransactWriteItems(context.Background(), in)
	return err
}

// getNumber returns the number attribute attr of the item with key pk, or ""
// when there is no such item or attribute.
func getNumber(t *testing.T, c *dynamodb.Client, table, pk, attr string) string {
	t.Helper()
	out, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": s(pk)}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Errorf("GetItem: %v", err)
		return ""
	}
	if v, ok := out.Item[attr].(*types.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}

// embedded starts the embedded emulator (whatever EndpointEnv says) for the
// test and returns it.
func embedded(t *testing.T, optFns ...func(*Options)) *Endpoint {
	t.Helper()
	return ForTest(t, append([]func(*Options){func(o *Options) { o.Embedded = true }}, optFns...)...)
}

// rawCall posts body as the DynamoDB operation op to url, bypassing the SDK
// (and its client-side validation), and returns the status and decoded body.
func rawCall(t *testing.T, url, op, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s: decoding response body: %v", op, err)
	}
	return resp.StatusCode, out
}

// apiErrorCode returns the error code of err, or "" when err is not an API error.
func apiErrorCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

func asError[T error](err error, target *T) bool { return errors.As(err, target) }
