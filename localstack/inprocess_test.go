package localstack

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInProcessClientsReachTheEmulatorWithoutTheHTTPClient(t *testing.T) {
	next := &countingClient{}
	e := embedded(t, func(o *Options) {
		o.InProcess = true
		o.HTTPClient = next
	})
	ctx := context.Background()
	table := TableName("inproc")
	_, err := e.Client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            &table,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	require.NoError(t, err)
	item := map[string]types.AttributeValue{
		"pk":   &types.AttributeValueMemberS{Value: "a"},
		"body": &types.AttributeValueMemberS{Value: strings.Repeat("x", 10_000)},
	}
	_, err = e.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: item})
	require.NoError(t, err)

	// A failed condition arrives as the SDK's typed error, with the item
	// ALL_OLD asked for: status, headers and body all made it through.
	_, err = e.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &table, Item: item,
		ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	require.ErrorAs(t, err, &ccf)
	assert.Equal(t, item, ccf.Item)
	assert.Equal(t, int64(0), next.sent.Load(), "no request went through HTTPClient")

	// The same emulator is served on URL for clients of their own.
	socket := e.NewClient(func(o *dynamodb.Options) { o.HTTPClient = &http.Client{} })
	got, err := socket.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: map[string]types.AttributeValue{"pk": item["pk"]}})
	require.NoError(t, err)
	assert.Equal(t, item, got.Item)
}

func TestInProcessCallWhoseContextHasEndedIsNotServed(t *testing.T) {
	served := 0
	c := handlerClient{h: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ })}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://in-process/", nil)
	require.NoError(t, err)
	_, err = c.Do(req)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, served)
}

func TestInProcessHandlerPanicIsAnErrorOfTheCall(t *testing.T) {
	c := handlerClient{h: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })}
	req, err := http.NewRequest(http.MethodPost, "http://in-process/", strings.NewReader("{}"))
	require.NoError(t, err)
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.PutItem")
	resp, err := c.Do(req)
	assert.Nil(t, resp)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "DynamoDB_20120810.PutItem")
	assert.Contains(t, err.Error(), "boom")
}

func TestInProcessResponseHasTheHeadersSetBeforeTheStatus(t *testing.T) {
	c := handlerClient{h: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Before", "1")
		w.WriteHeader(http.StatusTeapot)
		w.Header().Set("X-After", "1") // too late, as on a real connection
		_, _ = w.Write([]byte("short and stout"))
	})}
	req, err := http.NewRequest(http.MethodGet, "http://in-process/", nil)
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusTeapot, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("X-Before"))
	assert.Empty(t, resp.Header.Get("X-After"))
	assert.Equal(t, int64(len("short and stout")), resp.ContentLength)
}
