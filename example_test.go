package idemkey_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/txn"
)

// exampleTables starts the embedded emulator (or uses the endpoint
// AWS_ENDPOINT_URL_DYNAMODB names) and creates a key table and an effect
// table; cleanup deletes both.
func exampleTables(ctx context.Context) (client *dynamodb.Client, keys, effects string, cleanup func()) {
	ep, err := localstack.Start(ctx)
	if err != nil {
		log.Fatal(err)
	}
	keys, effects = localstack.TableName("keys"), localstack.TableName("shipments")
	if err := dynamostore.EnsureTable(ctx, ep.Client, keys, 0); err != nil {
		log.Fatal(err)
	}
	_, err = ep.Client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            &effects,
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		log.Fatal(err)
	}
	return ep.Client, keys, effects, func() {
		for _, table := range []string{keys, effects} {
			if _, err := ep.Client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &table}); err != nil {
				log.Print(err)
			}
		}
		ep.Close()
	}
}

// Guard.Do runs the protocol for any function, without HTTP: here a queue
// consumer that ships an order once, however often the message arrives.
// The function stages its write on the Tx in its context; the write and
// the key record commit together.
func ExampleGuard_Do() {
	ctx := context.Background()
	client, keys, shipments, cleanup := exampleTables(ctx)
	defer cleanup()
	guard := idemkey.New(dynamostore.New(client, keys))

	ship := func(orderID string) {
		msg := []byte(`{"order":"` + orderID + `"}`)
		sum := sha256.Sum256(msg)
		req := idemkey.Request{Scope: "warehouse-7", Key: orderID, Method: "SHIP", Path: "/orders", Fingerprint: sum[:]}
		res, err := guard.Do(ctx, req, func(ctx context.Context) (idemkey.Response, error) {
			tx, _ := txn.FromContext(ctx)
			tx.Put(types.Put{TableName: &shipments, Item: map[string]types.AttributeValue{
				"id": &types.AttributeValueMemberS{Value: orderID},
			}})
			return idemkey.Response{Status: 200, Body: []byte("shipped " + orderID)}, nil
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s replayed=%v\n", res.Response.Body, res.Replayed)
	}
	ship("order-1")
	ship("order-1") // redelivered: answered from the record, nothing ships
	// Output:
	// shipped order-1 replayed=false
	// shipped order-1 replayed=true
}

// In OneTrip mode the function runs first and one conditional write claims
// and commits at once: one DynamoDB call per first execution. It suits
// functions whose only effects are writes staged on the Tx: concurrent
// duplicates may both run, and only one commit wins.
func ExampleOptions_oneTrip() {
	ctx := context.Background()
	client, keys, _, cleanup := exampleTables(ctx)
	defer cleanup()
	guard := idemkey.New(dynamostore.New(client, keys), func(o *idemkey.Options) { o.Mode = idemkey.OneTrip })

	runs := 0
	sum := sha256.Sum256([]byte(`{"counter":"a"}`))
	req := idemkey.Request{Scope: "tenant-a", Key: "k-1", Method: "POST", Path: "/counters", Fingerprint: sum[:]}
	for range 2 {
		res, err := guard.Do(ctx, req, func(ctx context.Context) (idemkey.Response, error) {
			runs++
			return idemkey.Response{Status: 201}, nil
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("status", res.Response.Status, "replayed", res.Replayed)
	}
	fmt.Println("runs", runs) // the replay ran the function too, and its result was dropped
	// Output:
	// status 201 replayed false
	// status 201 replayed true
	// runs 2
}

// A Cache answers replays from memory, without a DynamoDB call: it holds
// completed records only, checks the fingerprint on every hit, and never
// keeps a record past its expiry.
func ExampleNewCache() {
	ctx := context.Background()
	client, keys, _, cleanup := exampleTables(ctx)
	defer cleanup()
	guard := idemkey.New(dynamostore.New(client, keys), func(o *idemkey.Options) {
		o.Cache = idemkey.NewCache(10_000, time.Minute)
	})
	sum := sha256.Sum256([]byte(`{"amount":5}`))
	req := idemkey.Request{Scope: "tenant-a", Key: "k-1", Method: "POST", Path: "/p", Fingerprint: sum[:]}
	fn := func(ctx context.Context) (idemkey.Response, error) { return idemkey.Response{Status: 201}, nil }
	for range 2 {
		res, err := guard.Do(ctx, req, fn)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("replayed", res.Replayed)
	}
	other := req
	otherSum := sha256.Sum256([]byte(`{"amount":9}`))
	other.Fingerprint = otherSum[:]
	_, err := guard.Do(ctx, other, fn)
	fmt.Println(err)
	// Output:
	// replayed false
	// replayed true
	// idemkey: key reused with a different request
}
