package localstack_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey/localstack"
)

// A conditional put that finds the key taken reports the stored item, on
// the embedded emulator as on DynamoDB. The example runs against whatever
// AWS_ENDPOINT_URL_DYNAMODB names, or the embedded emulator when it is unset.
func Example() {
	ctx := context.Background()
	ep, err := localstack.Start(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer ep.Close()
	db := ep.Client

	table := localstack.TableName("example")
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("key"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("key"), KeyType: types.KeyTypeHash}},
	}); err != nil {
		log.Fatal(err)
	}
	defer db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	if err := dynamodb.NewTableExistsWaiter(db).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 5*time.Minute); err != nil {
		log.Fatal(err)
	}

	claim := func(owner string) error {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                           aws.String(table),
			Item:                                map[string]types.AttributeValue{"key": &types.AttributeValueMemberS{Value: "order-42"}, "owner": &types.AttributeValueMemberS{Value: owner}},
			ConditionExpression:                 aws.String("attribute_not_exists(#k)"),
			ExpressionAttributeNames:            map[string]string{"#k": "key"},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		return err
	}
	fmt.Println("first claim:", claim("alice"))
	var taken *types.ConditionalCheckFailedException
	if err := claim("bob"); errors.As(err, &taken) {
		fmt.Println("second claim: taken by", taken.Item["owner"].(*types.AttributeValueMemberS).Value)
	}
	// Output:
	// first claim: <nil>
	// second claim: taken by alice
}

// NewHandler serves the embedded emulator from any HTTP server.
func ExampleNewHandler() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: localstack.NewHandler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	db := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://" + ln.Addr().String()),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
	out, err := db.ListTables(context.Background(), &dynamodb.ListTablesInput{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("tables:", len(out.TableNames))
	// Output:
	// tables: 0
}
