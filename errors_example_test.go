package idemkey_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/localstack"
)

// A caller of Guard.Do tells a fault that a retry may overcome (an
// *UnavailableError: wait RetryAfter and retry with the same key) from one
// that it meets again (a *PermanentError: fix the service; its Class says
// what to fix). Here the key table was never created.
func ExamplePermanentError() {
	ctx := context.Background()
	ep, err := localstack.Start(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer ep.Close()
	guard := idemkey.New(dynamostore.New(ep.Client, "no-such-table"))

	sum := sha256.Sum256([]byte(`{"order":42}`))
	req := idemkey.Request{Scope: "tenant-a", Key: "order-42", Method: "POST", Path: "/ship", Fingerprint: sum[:]}
	_, err = guard.Do(ctx, req, func(ctx context.Context) (idemkey.Response, error) {
		return idemkey.Response{Status: 200}, nil
	})

	var unavailable *idemkey.UnavailableError
	var permanent *idemkey.PermanentError
	switch {
	case errors.As(err, &unavailable):
		fmt.Println("retry after", unavailable.RetryAfter)
	case errors.As(err, &permanent):
		fmt.Println(permanent.Class, permanent.Tables, permanent.Temporary())
	}
	// Output: missing-table [no-such-table] false
}
