package handler_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/txn"
)

// A POST handler guarded by idemkey: the order item it stages commits with
// the key record, and a retry with the same key gets the stored answer.
func Example() {
	ctx := context.Background()
	ep, err := localstack.Start(ctx) // AWS_ENDPOINT_URL_DYNAMODB, or the embedded emulator
	if err != nil {
		panic(err)
	}
	defer ep.Close()
	keys, orders := localstack.TableName("example-keys"), localstack.TableName("example-orders")
	if err := dynamostore.EnsureTable(ctx, ep.Client, keys, 0); err != nil {
		panic(err)
	}
	_, err = ep.Client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: &orders, BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		panic(err)
	}

	// The scope is who is calling, as the authentication established it:
	// here the tenant of a verified bearer token. Never take it from a
	// header the client chooses.
	idem := handler.New(dynamostore.New(ep.Client, keys), func(o *handler.Options) {
		o.Scope = func(r *http.Request) (string, error) {
			if tenant, ok := r.Context().Value(tenantKey{}).(string); ok {
				return tenant, nil
			}
			return "", errors.New("not authenticated")
		}
	})
	createOrder := func(w http.ResponseWriter, r *http.Request) {
		tx, _ := txn.FromContext(r.Context())
		tx.Put(types.Put{TableName: &orders, Item: map[string]types.AttributeValue{
			"id": &types.AttributeValueMemberS{Value: "order-1"},
		}, ConditionExpression: aws.String("attribute_not_exists(id)")})
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintln(w, `{"id":"order-1"}`)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /orders", idem(http.HandlerFunc(createOrder)))
	srv := httptest.NewServer(authenticate(mux))
	defer srv.Close()

	for range 2 {
		req, _ := http.NewRequest("POST", srv.URL+"/orders", strings.NewReader(`{"item":"book"}`))
		req.Header.Set("Authorization", "Bearer token-of-acme")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", `"order-attempt-1"`)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%d replayed=%q %s", resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), body)
	}
	// Output:
	// 201 replayed="" {"id":"order-1"}
	// 201 replayed="true" {"id":"order-1"}
}

type tenantKey struct{}

// authenticate stands in for real authentication (a verified JWT, an API
// key looked up in a table): it puts the tenant of a known bearer token in
// the request's context and answers 401 to anything else.
func authenticate(next http.Handler) http.Handler {
	tenants := map[string]string{"token-of-acme": "acme"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		tenant, ok := tenants[token]
		if !ok {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tenantKey{}, tenant)))
	})
}
