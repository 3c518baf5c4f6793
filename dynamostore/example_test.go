package dynamostore_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/localstack"
)

// EnsureTable creates the key table (on-demand, TTL on "exp") when it is
// missing; New returns the store the front doors and the Guard use. Here
// the store is driven by hand: a claim, its completion, and a second
// claim that finds the stored response.
func ExampleNew() {
	ctx := context.Background()
	ep, err := localstack.Start(ctx) // AWS_ENDPOINT_URL_DYNAMODB, or the embedded emulator
	if err != nil {
		log.Fatal(err)
	}
	defer ep.Close()
	table := localstack.TableName("keys")
	if err := dynamostore.EnsureTable(ctx, ep.Client, table, time.Minute); err != nil {
		log.Fatal(err)
	}
	defer func() {
		if _, err := ep.Client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &table}); err != nil {
			log.Print(err)
		}
	}()
	store := dynamostore.New(ep.Client, table, func(o *dynamostore.Options) {
		o.Retention = 24 * time.Hour // how long a completed key answers retries
		o.Lease = 5 * time.Minute    // how long a dead claim blocks its key
	})

	sum := sha256.Sum256([]byte(`{"amount":1250}`))
	req := dynamostore.Request{Scope: "tenant-a", Key: "order-42", Method: "POST", Path: "/payments", Fingerprint: sum[:]}
	first, err := store.Claim(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("first claim:", first.Result == dynamostore.Acquired)
	if _, err := store.Commit(ctx, first, dynamostore.Response{Status: 201, Body: []byte(`{"id":"pay_1"}`)}, nil); err != nil {
		log.Fatal(err)
	}
	again, err := store.Claim(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("retry: replay=%v status=%d body=%s\n", again.Result == dynamostore.Replay, again.Record.Response.Status, again.Record.Response.Body)
	_, err = store.Get(ctx, "tenant-b", "order-42")
	fmt.Println("another tenant's key:", errors.Is(err, dynamostore.ErrNotFound))
	// Output:
	// first claim: true
	// retry: replay=true status=201 body={"id":"pay_1"}
	// another tenant's key: true
}

// Resume is the sweep a scheduled job runs: each run continues the pass
// the previous one left unfinished, with the cursor kept in the key table
// itself, so the job needs no state of its own.
func ExampleSweeper_Resume() {
	ctx := context.Background()
	ep, err := localstack.Start(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer ep.Close()
	table := localstack.TableName("keys")
	if err := dynamostore.EnsureTable(ctx, ep.Client, table, 0); err != nil {
		log.Fatal(err)
	}
	defer func() {
		if _, err := ep.Client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &table}); err != nil {
			log.Print(err)
		}
	}()
	now := time.Date(2027, 1, 15, 8, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	store := dynamostore.New(ep.Client, table, func(o *dynamostore.Options) { o.Now, o.Retention = clock, time.Hour })
	for _, key := range []string{"a", "b", "c"} {
		sum := sha256.Sum256([]byte(key))
		c, err := store.Claim(ctx, dynamostore.Request{Scope: "s", Key: key, Method: "POST", Path: "/p", Fingerprint: sum[:]})
		if err != nil {
			log.Fatal(err)
		}
		if _, err := store.Commit(ctx, c, dynamostore.Response{Status: 200}, nil); err != nil {
			log.Fatal(err)
		}
	}
	now = now.Add(2 * time.Hour)

	// Each scheduled run calls Resume; a run stopped by its Budget or its
	// context's deadline leaves its cursor for the next.
	sweeper := dynamostore.NewSweeper(ep.Client, table, func(o *dynamostore.SweepOptions) {
		o.Now, o.Budget = clock, time.Minute
	})
	for run := 1; run <= 2; run++ {
		r, err := sweeper.Resume(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("run %d: scanned %d, evicted %d, finished %v\n", run, r.Scanned, r.Evicted, r.Finished)
	}
	// Output:
	// run 1: scanned 3, evicted 3, finished true
	// run 2: scanned 0, evicted 0, finished true
}
