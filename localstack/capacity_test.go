package localstack_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/localstack"
)

func TestFrontReportsConsumedCapacityWhenAsked(t *testing.T) {
	for name, disabled := range map[string]bool{"estimated": false, "switched off": true} {
		t.Run(name, func(t *testing.T) {
			ep := localstack.ForTest(t, func(o *localstack.Options) { o.Embedded = true; o.DisableConsumedCapacity = disabled })
			c := ep.Client
			ctx := context.Background()
			table := localstack.TableName("capacity")
			_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
				TableName: &table, BillingMode: types.BillingModePayPerRequest,
				AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
				KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
			})
			require.NoError(t, err)
			big := strings.Repeat("x", 3000) // a 3 KB item: three write units
			put, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
				Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "a"}, "v": &types.AttributeValueMemberS{Value: big}}})
			require.NoError(t, err)
			scan, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: &table, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
			require.NoError(t, err)
			del, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &table, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
				Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "a"}}})
			require.NoError(t, err)
			plain, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table,
				Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "a"}}})
			require.NoError(t, err)
			assert.Nil(t, plain.ConsumedCapacity, "not asked, not reported")
			if disabled {
				assert.Nil(t, put.ConsumedCapacity)
				assert.Nil(t, scan.ConsumedCapacity)
				return
			}
			require.NotNil(t, put.ConsumedCapacity)
			assert.Equal(t, table, aws.ToString(put.ConsumedCapacity.TableName))
			assert.Equal(t, 3.0, aws.ToFloat64(put.ConsumedCapacity.CapacityUnits))
			require.NotNil(t, scan.ConsumedCapacity)
			assert.Equal(t, 0.5, aws.ToFloat64(scan.ConsumedCapacity.CapacityUnits), "3 KB read eventually consistently")
			require.NotNil(t, del.ConsumedCapacity)
			assert.Equal(t, 3.0, aws.ToFloat64(del.ConsumedCapacity.CapacityUnits), "a delete is charged the size of the item it deletes")
		})
	}
}
