package dynamostore_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/txn"
)

// A KeySchema keeps the key records in the service's own table, next to
// its items: here a table with keys PK and SK and TTL on "ttl". The order
// and its key record commit in one transaction on that table, and the
// sweeper deletes expired key records only, never an order, even one
// whose "ttl" is long past.
func ExampleKeySchema() {
	ctx := context.Background()
	ep, err := localstack.Start(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer ep.Close()
	table := localstack.TableName("app")
	schema := dynamostore.KeySchema{PartitionKey: "PK", SortKey: "SK", SortKeyValue: "IDEMKEY", Prefix: "idemkey", TTLAttribute: "ttl"}
	if err := dynamostore.EnsureSchemaTable(ctx, ep.Client, table, schema, time.Minute); err != nil {
		log.Fatal(err)
	}
	defer func() {
		if _, err := ep.Client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &table}); err != nil {
			log.Print(err)
		}
	}()
	store := dynamostore.New(ep.Client, table, func(o *dynamostore.Options) { o.Schema = schema })

	sum := sha256.Sum256([]byte(`{"sku":"tea"}`))
	c, err := store.Claim(ctx, dynamostore.Request{Scope: "shop-1", Key: "order-7", Method: "POST", Path: "/orders", Fingerprint: sum[:]})
	if err != nil {
		log.Fatal(err)
	}
	tx := txn.New()
	tx.Put(types.Put{TableName: &table, Item: map[string]types.AttributeValue{
		"PK":  &types.AttributeValueMemberS{Value: "ORDER#7"},
		"SK":  &types.AttributeValueMemberS{Value: "ORDER"},
		"ttl": &types.AttributeValueMemberN{Value: "1"}, // expired-looking, and yet the application's
	}})
	if _, err := store.Commit(ctx, c, dynamostore.Response{Status: 201}, tx); err != nil {
		log.Fatal(err)
	}
	out, err := ep.Client.Scan(ctx, &dynamodb.ScanInput{TableName: &table, ConsistentRead: aws.Bool(true)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("items in the table:", len(out.Items))

	later := func() time.Time { return time.Now().Add(48 * time.Hour) }
	sweeper := dynamostore.NewSweeper(ep.Client, table, func(o *dynamostore.SweepOptions) { o.Schema, o.Now = schema, later })
	r, err := sweeper.Sweep(ctx, "")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("two days later: evicted=%d foreign=%d\n", r.Evicted, r.Foreign)
	// Output:
	// items in the table: 2
	// two days later: evicted=1 foreign=1
}
