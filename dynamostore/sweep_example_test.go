package dynamostore_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/localstack"
)

// A sweep evicts the records whose retention has passed and reports how
// far behind eviction was. The example runs against whatever
// AWS_ENDPOINT_URL_DYNAMODB names, or the embedded emulator when it is
// unset.
func ExampleSweeper() {
	ctx := context.Background()
	ep, err := localstack.Start(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer ep.Close()
	table := localstack.TableName("sweep-example")
	if err := dynamostore.EnsureTable(ctx, ep.Client, table, 0); err != nil {
		log.Fatal(err)
	}
	defer ep.Client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &table})

	now := time.Date(2027, 1, 15, 8, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	store := dynamostore.New(ep.Client, table, func(o *dynamostore.Options) { o.Now, o.Retention = clock, time.Hour })
	claim := func(key string) *dynamostore.Claim {
		sum := sha256.Sum256([]byte(key))
		c, err := store.Claim(ctx, dynamostore.Request{Scope: "tenant-a", Key: key, Method: "POST", Path: "/payments", Fingerprint: sum[:]})
		if err != nil {
			log.Fatal(err)
		}
		return c
	}
	done := claim("order-1")
	if _, err := store.Commit(ctx, done, dynamostore.Response{Status: 201}, nil); err != nil {
		log.Fatal(err)
	}
	claim("order-2")                           // its process died: in progress forever
	now = now.Add(2*time.Hour + 5*time.Minute) // both are now an hour past their exp: lock (5 min) + retention
	claim("order-3")

	// Four segments (the default), read in parallel.
	sweeper := dynamostore.NewSweeper(ep.Client, table, func(o *dynamostore.SweepOptions) { o.Now, o.Segments = clock, 4 })
	r, err := sweeper.Sweep(ctx, "")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("scanned:", r.Scanned, "evicted:", r.Evicted, "live:", r.LiveKeys)
	fmt.Println("eviction lag:", r.EvictionLag, "finished:", r.Finished)
	// Output:
	// scanned: 3 evicted: 2 live: 1
	// eviction lag: 1h0m0s finished: true
}

// In SweepIndex mode a sweep reads the expiry index instead of the table:
// the in-progress records, the completed ones whose retention passed, and
// per shard the completed record that expires next, so that its cost
// follows what expired, not the size of the table. EnsureExpiryIndex
// adds the index to an existing key table once; every Store over the
// table sets Options.ExpiryIndex, so that its records carry the attribute
// the index is keyed on.
func ExampleEnsureExpiryIndex() {
	ctx := context.Background()
	ep, err := localstack.Start(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer ep.Close()
	table := localstack.TableName("sweep-index-example")
	if err := dynamostore.EnsureTable(ctx, ep.Client, table, 0); err != nil {
		log.Fatal(err)
	}
	defer ep.Client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &table})
	if err := dynamostore.EnsureExpiryIndex(ctx, ep.Client, table, dynamostore.KeySchema{}, 0); err != nil {
		log.Fatal(err)
	}

	now := time.Date(2027, 1, 15, 8, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	store := dynamostore.New(ep.Client, table, func(o *dynamostore.Options) {
		o.Now, o.Retention, o.ExpiryIndex = clock, time.Hour, true
	})
	claim := func(key string) *dynamostore.Claim {
		sum := sha256.Sum256([]byte(key))
		c, err := store.Claim(ctx, dynamostore.Request{Scope: "tenant-a", Key: key, Method: "POST", Path: "/payments", Fingerprint: sum[:]})
		if err != nil {
			log.Fatal(err)
		}
		return c
	}
	complete := func(c *dynamostore.Claim) {
		if _, err := store.Commit(ctx, c, dynamostore.Response{Status: 201}, nil); err != nil {
			log.Fatal(err)
		}
	}
	complete(claim("order-1"))
	claim("order-2")                           // its process died: in progress forever
	now = now.Add(2*time.Hour + 5*time.Minute) // both are now an hour past their exp: lock (5 min) + retention
	claim("order-3")                           // in flight
	complete(claim("order-4"))                 // live: read only as its shard's next record to expire

	sweeper := dynamostore.NewSweeper(ep.Client, table, func(o *dynamostore.SweepOptions) {
		o.Now, o.Mode = clock, dynamostore.SweepIndex
	})
	r, err := sweeper.Sweep(ctx, "")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("mode:", r.Mode, "entries read:", r.Scanned, "evicted:", r.Evicted, "live:", r.LiveKeys)
	fmt.Println("eviction lag:", r.EvictionLag, "finished:", r.Finished)
	// Output:
	// mode: index entries read: 4 evicted: 2 live: 2
	// eviction lag: 1h0m0s finished: true
}
