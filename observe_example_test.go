package idemkey_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
)

// An Observer sees one Event per request: here a function that prints
// each outcome, with how many calls the Guard made to its store.
func ExampleObserverFunc() {
	ctx := context.Background()
	client, keys, _, cleanup := exampleTables(ctx)
	defer cleanup()

	print := idemkey.ObserverFunc(func(_ context.Context, e idemkey.Event) {
		fmt.Printf("%s via %s: %d store calls, status %d\n", e.Outcome, e.FrontDoor, e.StoreCalls, e.Status)
	})
	guard := idemkey.New(dynamostore.New(client, keys), func(o *idemkey.Options) {
		o.Observer = print
		o.FrontDoor = "queue"
	})
	fp := sha256.Sum256([]byte(`{"order":"o-1"}`))
	req := idemkey.Request{Scope: "warehouse-7", Key: "o-1", Method: "SHIP", Path: "/orders", Fingerprint: fp[:]}
	ship := func(context.Context) (idemkey.Response, error) { return idemkey.Response{Status: 200}, nil }
	for range 2 {
		if _, err := guard.Do(ctx, req, ship); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// executed-stored via queue: 2 store calls, status 200
	// replay via queue: 1 store calls, status 200
}
