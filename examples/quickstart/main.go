// Command quickstart is idemkey in one file: a POST /payments whose
// retries are answered from DynamoDB instead of executing again. It is the
// README's "Use it" example, whole; copy newService into a service.
//
//	go run ./examples/quickstart          # serve on 127.0.0.1:8080 and print a curl command to try
//	go run ./examples/quickstart -demo    # send a request twice, then another with its key; print the three answers, exit
//
// DynamoDB is the endpoint in AWS_ENDPOINT_URL_DYNAMODB when it is set,
// otherwise an embedded in-memory emulator (package localstack): nothing to
// install, and nothing kept after the process exits. In a service the
// client comes from the AWS configuration instead:
//
//	cfg, err := config.LoadDefaultConfig(ctx) // region, credentials, AWS_ENDPOINT_URL_DYNAMODB
//	client := dynamodb.NewFromConfig(cfg)
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/problem"
	"github.com/idemkey/idemkey/txn"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	demo := fs.Bool("demo", false, "send one request twice, then another with the same key, print the three answers and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ep, err := localstack.Start(ctx) // AWS_ENDPOINT_URL_DYNAMODB, else the embedded emulator
	if err != nil {
		return err
	}
	defer ep.Close()
	svc, err := newService(ctx, ep.Client)
	if err != nil {
		return err
	}
	if *demo {
		return selfDemo(stdout, svc)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "quickstart listening on http://%s; try this twice, then change the amount:\n", ln.Addr())
	fmt.Fprintf(stdout, "  curl -si %s/payments -H 'Authorization: Bearer token-of-acme' -H 'Idempotency-Key: order-1' -H 'Content-Type: application/json' -d '{\"amount\":1250}'\n", ln.Addr())
	srv := &http.Server{Handler: svc, ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(ln)
}

// newService creates the tables if missing and returns the HTTP API.
func newService(ctx context.Context, client *dynamodb.Client) (http.Handler, error) {
	if err := createTables(ctx, client); err != nil {
		return nil, err
	}
	idem := handler.New(dynamostore.New(client, "idemkey-keys"), func(o *handler.Options) {
		// The scope is who is calling, as authentication established it.
		o.Scope = func(r *http.Request) (string, error) { return tenantOf(r.Context()) }
	})
	mux := http.NewServeMux()
	mux.Handle("POST /payments", idem(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p struct {
			ID     string `json:"id"`
			Amount int64  `json:"amount"`
		}
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil || p.Amount <= 0 {
			problem.Write(w, problem.Details{Type: "https://example.com/problems/invalid-payment",
				Title: "Invalid payment", Status: http.StatusBadRequest, Detail: `send {"amount": <positive cents>}`})
			return
		}
		p.ID = "pay_" + rand.Text()
		// Stage the effect: it commits in one transaction with the key record.
		tx, _ := txn.FromContext(r.Context())
		tx.Put(types.Put{TableName: aws.String("payments"), Item: map[string]types.AttributeValue{
			"id":     &types.AttributeValueMemberS{Value: p.ID},
			"amount": &types.AttributeValueMemberN{Value: fmt.Sprint(p.Amount)},
		}, ConditionExpression: aws.String("attribute_not_exists(id)")})
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", "/payments/"+p.ID)
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(p)
	})))
	return authenticate(mux), nil
}

// createTables creates the key table (with TTL) and the payments table,
// on-demand, if they do not exist, and waits until both are ready.
func createTables(ctx context.Context, client *dynamodb.Client) error {
	if err := dynamostore.EnsureTable(ctx, client, "idemkey-keys", 0); err != nil {
		return err
	}
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("payments"),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	})
	var exists *types.ResourceInUseException
	if err != nil && !errors.As(err, &exists) {
		return err
	}
	return dynamodb.NewTableExistsWaiter(client).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("payments")}, time.Minute)
}

type tenantKey struct{}

// tenantOf returns the tenant authenticate put in ctx.
func tenantOf(ctx context.Context) (string, error) {
	if tenant, ok := ctx.Value(tenantKey{}).(string); ok {
		return tenant, nil
	}
	return "", errors.New("not authenticated")
}

// authenticate stands in for real authentication (a verified JWT, an API
// key looked up in a table): it puts the tenant of a known bearer token in
// the request's context and answers 401 to anything else.
func authenticate(next http.Handler) http.Handler {
	tenants := map[string]string{"token-of-acme": "acme", "token-of-globex": "globex"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		tenant, ok := tenants[token]
		if !ok {
			problem.Write(w, problem.Details{Type: "https://example.com/problems/unauthorized",
				Title: "Unauthorized", Status: http.StatusUnauthorized, Detail: "send Authorization: Bearer token-of-acme"})
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tenantKey{}, tenant)))
	})
}

// selfDemo sends one payment twice with one key, then a different payment
// with the same key, and prints what came back.
func selfDemo(stdout io.Writer, svc http.Handler) error {
	srv := httptest.NewServer(svc)
	defer srv.Close()
	key := "demo-" + rand.Text() // a new operation at every run, even on a kept table
	for _, body := range []string{`{"amount":1250}`, `{"amount":1250}`, `{"amount":9999}`} {
		req, err := http.NewRequest("POST", srv.URL+"/payments", strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer token-of-acme")
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := srv.Client().Do(req)
		if err != nil {
			return err
		}
		answer, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "POST %s -> %s, Idempotent-Replayed: %q\n  %s\n", body, resp.Status,
			resp.Header.Get("Idempotent-Replayed"), strings.TrimSpace(string(answer)))
	}
	return nil
}
