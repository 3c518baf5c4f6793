package idemkey_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log"
	"time"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
)

// With Options.WaitInFlight, a duplicate that arrives while the first
// copy still runs waits for it and gets its stored answer as a replay,
// instead of ErrInFlight. The first copy here takes 200 ms; the duplicate
// may wait up to 2 s.
func ExampleOptions_waitInFlight() {
	ctx := context.Background()
	client, keys, _, cleanup := exampleTables(ctx)
	defer cleanup()
	guard := idemkey.New(dynamostore.New(client, keys), func(o *idemkey.Options) {
		o.WaitInFlight = 2 * time.Second
	})

	sum := sha256.Sum256([]byte(`{"amount":1250}`))
	req := idemkey.Request{Scope: "tenant-1", Key: "charge-7", Method: "POST", Path: "/charges", Fingerprint: sum[:]}
	started, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		_, err := guard.Do(ctx, req, func(context.Context) (idemkey.Response, error) {
			close(started)
			time.Sleep(200 * time.Millisecond) // the charge
			return idemkey.Response{Status: 201, Body: []byte(`{"id":"ch_1"}`)}, nil
		})
		if err != nil {
			log.Fatal(err)
		}
	}()
	<-started
	res, err := guard.Do(ctx, req, func(context.Context) (idemkey.Response, error) {
		panic("a waiting duplicate never runs")
	})
	if err != nil {
		log.Fatal(err)
	}
	<-done
	fmt.Printf("%d %s replayed=%v\n", res.Response.Status, res.Response.Body, res.Replayed)
	// Output:
	// 201 {"id":"ch_1"} replayed=true
}
