package lambda_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkey/idemkey/dynamostore"
	idemlambda "github.com/idemkey/idemkey/lambda"
	"github.com/idemkey/idemkey/localstack"
)

// keyTable starts a DynamoDB endpoint (the embedded emulator unless
// AWS_ENDPOINT_URL_DYNAMODB is set) with a key table, for the examples.
func keyTable(ctx context.Context) (*dynamostore.Store, func()) {
	ep, err := localstack.Start(ctx)
	if err != nil {
		panic(err)
	}
	table := localstack.TableName("example-keys")
	if err := dynamostore.EnsureTable(ctx, ep.Client, table, 0); err != nil {
		panic(err)
	}
	return dynamostore.New(ep.Client, table), func() {
		_, _ = ep.Client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
		_ = ep.Close()
	}
}

func ExampleNewAPIGatewayV2() {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /greetings/{name}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"hello":%q}`, r.PathValue("name"))
	})
	handle := idemlambda.NewAPIGatewayV2(mux) // in main: lambda.Start(handle)

	resp, err := handle(context.Background(), events.APIGatewayV2HTTPRequest{
		RawPath:        "/greetings/ada",
		RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.StatusCode, resp.Headers["Content-Type"], resp.Body)
	// Output: 201 application/json {"hello":"ada"}
}

func ExampleMiddleware() {
	ctx := context.Background()
	store, done := keyTable(ctx)
	defer done()

	executions := 0
	create := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		executions++ // stage DynamoDB writes on txn.FromContext(r.Context()) here
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "payment %d", executions)
	})
	idem := idemlambda.Middleware(store) // scope from the event, lease from the deadline
	mux := http.NewServeMux()
	mux.Handle("POST /payments", idem(create))
	handle := idemlambda.NewAPIGatewayV2(mux)

	event := events.APIGatewayV2HTTPRequest{
		RawPath: "/payments",
		Headers: map[string]string{"idempotency-key": "order-42"},
		Body:    `{"amount":1250}`,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
				JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "alice"}},
			},
		},
	}
	for range 2 {
		resp, err := handle(ctx, event)
		if err != nil {
			panic(err)
		}
		fmt.Println(resp.StatusCode, resp.Body, "replayed:", resp.Headers["Idempotent-Replayed"] == "true")
	}
	fmt.Println("executions:", executions)
	// Output:
	// 201 payment 1 replayed: false
	// 201 payment 1 replayed: true
	// executions: 1
}

// A route without authorization identifies no caller, so EventScope
// answers 401. A service that truly has one caller (here, an internal job
// calling through an HTTP API route without authorizer) states it in code;
// every request then shares one scope.
func ExampleMiddleware_singleCaller() {
	ctx := context.Background()
	store, done := keyTable(ctx)
	defer done()

	create := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, "created")
	})
	event := events.APIGatewayV2HTTPRequest{
		RawPath: "/jobs",
		Headers: map[string]string{"idempotency-key": "nightly-2024-06-01"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"},
		},
	}
	for _, singleCaller := range []bool{false, true} {
		idem := idemlambda.Middleware(store, func(o *idemlambda.MiddlewareOptions) {
			o.Handler.SingleCaller = singleCaller // only where no other caller can exist
		})
		resp, err := idemlambda.NewAPIGatewayV2(idem(create))(ctx, event)
		if err != nil {
			panic(err)
		}
		fmt.Println("single caller:", singleCaller, resp.StatusCode)
	}
	// Output:
	// single caller: false 401
	// single caller: true 201
}

func ExampleIdempotent() {
	ctx := context.Background()
	store, done := keyTable(ctx)
	defer done()

	type Order struct {
		ID     string `json:"id"`
		Amount int    `json:"amount"`
	}
	type Receipt struct {
		Charged int `json:"charged"`
		Run     int `json:"run"`
	}
	runs := 0
	charge := func(ctx context.Context, o Order) (Receipt, error) {
		runs++ // stage DynamoDB writes on txn.FromContext(ctx) here
		return Receipt{Charged: o.Amount, Run: runs}, nil
	}
	handle := idemlambda.Idempotent(store, charge, func(o *idemlambda.FuncOptions[Order]) {
		o.Name = "charge" // the function's identity: a "refund" keyed by the same order id is another key
		o.Key = func(in Order) (string, error) { return in.ID, nil }
		// The caller, as Lambda authenticated it: the Cognito identity of
		// a direct invoke from a mobile or web client.
		o.Scope = func(ctx context.Context, _ Order) (string, error) {
			lc, ok := lambdacontext.FromContext(ctx)
			if !ok || lc.Identity.CognitoIdentityID == "" {
				return "", errors.New("unauthenticated invoke")
			}
			return lc.Identity.CognitoIdentityID, nil
		}
	}) // in main: lambda.Start(handle)

	// What aws-lambda-go puts in the context of alice's invocations.
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{
		Identity: lambdacontext.CognitoIdentity{CognitoIdentityID: "us-east-1:alice"},
	})
	for range 2 {
		r, err := handle(ctx, Order{ID: "o-1", Amount: 1250})
		fmt.Printf("%+v %v\n", r, err)
	}
	_, err := handle(ctx, Order{ID: "o-1", Amount: 99})
	fmt.Println(err)
	// Output:
	// {Charged:1250 Run:1} <nil>
	// {Charged:1250 Run:1} <nil>
	// idemkey: key reused with a different request
}
