package idemkey_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/txn"
)

// A request without a key still commits its staged writes in one
// transaction, all or none; nothing remembers it, so a second call writes
// again.
func ExampleGuard_CommitUnkeyed() {
	ctx := context.Background()
	client, keys, shipments, cleanup := exampleTables(ctx)
	defer cleanup()
	guard := idemkey.New(dynamostore.New(client, keys))

	tx := txn.New()
	tx.Put(types.Put{TableName: &shipments, Item: map[string]types.AttributeValue{
		"id": &types.AttributeValueMemberS{Value: "order-9"},
	}})
	if err := guard.CommitUnkeyed(ctx, tx, idemkey.Response{Status: 200}); err != nil {
		log.Fatal(err)
	}
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &shipments, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "order-9"}}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("shipment written:", out.Item != nil)
	// Output:
	// shipment written: true
}

// OutcomeOf names what an error of Do means, for a log line or a metric,
// without a type switch over the error types.
func ExampleOutcomeOf() {
	for _, err := range []error{
		nil,
		idemkey.ErrMismatch,
		&idemkey.InFlightError{RetryAfter: 1},
		&idemkey.PermanentError{Class: dynamostore.ClassMissingTable, Err: errors.New("table not found")},
	} {
		outcome, class := idemkey.OutcomeOf(err)
		fmt.Printf("%q %q\n", outcome, class)
	}
	// Output:
	// "" ""
	// "mismatch" ""
	// "in-flight" ""
	// "permanent" "missing-table"
}

// A front door names itself in the request's context; the request's Event
// reports it.
func ExampleWithFrontDoor() {
	ctx := idemkey.WithFrontDoor(context.Background(), idemkey.FrontDoorGRPC)
	fmt.Println(idemkey.FrontDoorFrom(ctx))
	// Output:
	// grpc
}
