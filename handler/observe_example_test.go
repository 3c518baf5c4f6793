package handler_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/localstack"
)

// An Observer of its own replaces the default logging; idemkey.Observers
// keeps both: here a counter beside LogObserver, which logs the replay at
// Info because a Logger is given.
func ExampleLogObserver() {
	ctx := context.Background()
	ep, err := localstack.Start(ctx)
	if err != nil {
		panic(err)
	}
	defer ep.Close()
	keys := localstack.TableName("example-keys")
	if err := dynamostore.EnsureTable(ctx, ep.Client, keys, 0); err != nil {
		panic(err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // a fixed output for the example
			}
			return a
		},
	}))
	outcomes := map[idemkey.Outcome]int{}
	count := idemkey.ObserverFunc(func(_ context.Context, e idemkey.Event) { outcomes[e.Outcome]++ })

	idem := handler.New(dynamostore.New(ep.Client, keys), func(o *handler.Options) {
		o.SingleCaller = true
		o.Guard.Observer = idemkey.Observers(handler.LogObserver(logger), count)
		// One secret for every process of the service, so that their
		// key_hash values agree (default: a random secret per Guard).
		o.Guard.KeyHashSecret = []byte("example fleet secret: keep me out of the code")
	})
	h := idem(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	for range 2 {
		req := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"sku":"a"}`))
		req.Header.Set(handler.HeaderName, "order-1")
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	fmt.Println(outcomes)
	// Output:
	// level=INFO msg=idemkey method=POST path=/orders key_hash=4b8b159d22186319 outcome=replay status=201
	// map[executed-stored:1 replay:1]
}
