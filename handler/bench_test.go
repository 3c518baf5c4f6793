package handler_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/txn"
)

// answered is a DynamoDB client answered in process, for benchmarks only:
// it measures the library's own CPU with DynamoDB's time taken out. It
// keeps the last completed key record it was sent, and answers a claim with
// a condition failure carrying that record when replay is set, as DynamoDB
// does. Correctness is tested against the emulator, never against this.
type answered struct {
	mu     sync.Mutex
	replay bool
	last   map[string]types.AttributeValue
}

func (a *answered) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.replay && a.last != nil {
		return nil, &types.ConditionalCheckFailedException{Item: a.last}
	}
	if s, ok := in.Item["s"].(*types.AttributeValueMemberS); ok && s.Value == "c" { // a completed record
		a.last = in.Item
	}
	return &dynamodb.PutItemOutput{}, nil
}

func (a *answered) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.replay && a.last != nil {
		reasons := make([]types.CancellationReason, len(in.TransactItems))
		code, none := "ConditionalCheckFailed", "None"
		reasons[0] = types.CancellationReason{Code: &code, Item: a.last}
		for i := 1; i < len(reasons); i++ {
			reasons[i].Code = &none
		}
		return nil, &types.TransactionCanceledException{CancellationReasons: reasons}
	}
	a.last = in.TransactItems[0].Put.Item
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

func (a *answered) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{}, nil
}

func (a *answered) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return &dynamodb.DeleteItemOutput{}, nil
}

const benchBody = `{"amount":1250,"currency":"EUR","description":"monthly rent for the flat on the third floor","metadata":{"order":"A-1029","customer":"c_8842","tags":["rent","recurring"]}}`

// paymentHandler is the inner handler of the benchmarks: it decodes nothing,
// stages one effect and answers 201 with a small JSON body.
func paymentHandler(w http.ResponseWriter, r *http.Request) {
	if tx, ok := txn.FromContext(r.Context()); ok {
		tx.Put(types.Put{TableName: &benchTable, Item: map[string]types.AttributeValue{
			"id": &types.AttributeValueMemberS{Value: "pay_1"},
		}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", "/payments/pay_1")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte(`{"id":"pay_1","amount":1250,"currency":"EUR"}`))
}

var benchTable = "payments"

func serve(b *testing.B, h http.Handler, key string) {
	req := httptest.NewRequest(http.MethodPost, "/payments", strings.NewReader(benchBody))
	req.Header.Set(handler.HeaderName, key)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		b.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
}

// BenchmarkMiddleware measures the middleware's own work per request
// (parsing, fingerprint, capture, record encoding and decoding) beside the
// bare handler, with DynamoDB answered in process.
func BenchmarkMiddleware(b *testing.B) {
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			serve(b, http.HandlerFunc(paymentHandler), "k")
		}
	})
	modes := []struct {
		name   string
		mode   idemkey.Mode
		replay bool
		cache  bool
	}{
		{"first", idemkey.ClaimFirst, false, false},
		{"first_one_trip", idemkey.OneTrip, false, false},
		{"replay", idemkey.ClaimFirst, true, false},
		{"replay_cached", idemkey.ClaimFirst, true, true},
	}
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			client := &answered{}
			store := dynamostore.New(client, "keys")
			var cache *idemkey.Cache
			if m.cache {
				cache = idemkey.NewCache(1024, time.Hour)
			}
			h := handler.New(store, func(o *handler.Options) {
				o.SingleCaller = true // one benchmark client
				o.Guard.Mode = m.mode
				o.Guard.Cache = cache
			})(http.HandlerFunc(paymentHandler))
			if m.replay {
				serve(b, h, "k") // the first execution, to replay
				client.replay = true
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				key := "k"
				if !m.replay {
					i++
					key = fmt.Sprint("k", i)
				}
				serve(b, h, key)
			}
		})
	}
}
