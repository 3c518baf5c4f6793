package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/localstack"
)

// The scope examples/payments gives the caller that sends
// "Authorization: Bearer alice", to pass to inspect, list and release.
func Example_scope() {
	run(context.Background(), []string{"scope", "-bearer", "alice"}, os.Stdout, io.Discard)
	// Output: 2bd806c97f0e00af1a1fc3328fa763a9
}

// Listing the live keys of one scope: the table is created, two keys are
// claimed in the scope and one in another, and list prints the scope's.
func Example_list() {
	ctx := context.Background()
	ep, err := localstack.Start(ctx) // AWS_ENDPOINT_URL_DYNAMODB, else the embedded emulator
	if err != nil {
		log.Fatal(err)
	}
	defer ep.Close()
	table := localstack.TableName("idemctl-example")
	idemctl := func(args ...string) []byte {
		var stdout, stderr bytes.Buffer
		if code := run(ctx, append(args, "-table", table, "-endpoint", ep.URL), &stdout, &stderr); code != exitOK {
			log.Fatalf("idemctl %s: exit %d: %s", args[0], code, stderr.String())
		}
		return stdout.Bytes()
	}
	idemctl("create-table")
	defer func() {
		if err := ddbtest.DeleteTable(ctx, ep.Client, table); err != nil {
			log.Fatalf("table %s was not deleted: %v", table, err)
		}
	}()

	store := dynamostore.New(ep.Client, table)
	for _, k := range []struct{ scope, key string }{{"tenant-a", "order-1"}, {"tenant-a", "order-2"}, {"tenant-b", "order-1"}} {
		fp := sha256.Sum256([]byte(k.key))
		if _, err := store.Claim(ctx, dynamostore.Request{Scope: k.scope, Key: k.key, Method: "POST", Path: "/payments", Fingerprint: fp[:]}); err != nil {
			log.Fatal(err)
		}
	}

	var out listJSON
	if err := json.Unmarshal(idemctl("list", "-scope", "tenant-a"), &out); err != nil {
		log.Fatal(err)
	}
	keys := map[string]string{}
	for _, k := range out.Keys {
		keys[k.Key] = k.State
	}
	fmt.Println(keys, "truncated:", out.Truncated)
	// Output: map[order-1:in_progress order-2:in_progress] truncated: false
}
