package lambda_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
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
		if err := ddbtest.DeleteTable(ctx, ep.Client, table); err != nil {
			panic(fmt.Sprintf("table %s was not deleted: %v", table, err))
		}
		if err := ep.Close(); err != nil {
			panic(err)
		}
	}
}

func ExampleNewAPIGatewayV1() {
	ctx := context.Background()
	store, done := keyTable(ctx)
	defer done()

	mux := http.NewServeMux()
	mux.Handle("POST /orders", idemlambda.Middleware(store)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated) // stage DynamoDB writes on txn.FromContext(r.Context()) first
		fmt.Fprint(w, "order created")
	})))
	handle := idemlambda.NewAPIGatewayV1(mux) // in main: lambda.Start(handle)

	event := events.APIGatewayProxyRequest{
		HTTPMethod: "POST",
		Path:       "/orders",
		Headers:    map[string]string{"Idempotency-Key": "order-7"},
		Body:       `{"sku":"tea"}`,
		// The caller, as a Lambda authorizer of the REST API identified it.
		RequestContext: events.APIGatewayProxyRequestContext{Authorizer: map[string]any{"principalId": "user-1"}},
	}
	for range 2 {
		resp, err := handle(ctx, event)
		if err != nil {
			panic(err)
		}
		fmt.Println(resp.StatusCode, resp.Body, "replayed:", resp.MultiValueHeaders["Idempotent-Replayed"])
	}
	// Output:
	// 201 order created replayed: []
	// 201 order created replayed: [true]
}

func ExampleNewFunctionURL() {
	ctx := context.Background()
	store, done := keyTable(ctx)
	defer done()

	runs := 0
	refund := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs++
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"refund":%d}`, runs)
	})
	handle := idemlambda.NewFunctionURL(idemlambda.Middleware(store)(refund)) // in main: lambda.Start(handle)

	// A Function URL with AuthType AWS_IAM: the scope is the IAM caller.
	event := events.LambdaFunctionURLRequest{
		RawPath: "/refunds",
		Headers: map[string]string{"idempotency-key": `"refund-3"`, "content-type": "application/json"},
		Body:    `{"order":"o-3"}`,
		RequestContext: events.LambdaFunctionURLRequestContext{
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: "POST"},
			Authorizer: &events.LambdaFunctionURLRequestContextAuthorizerDescription{
				IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:iam::123456789012:user/billing"},
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
	fmt.Println("runs:", runs)
	// Output:
	// 200 {"refund":1} replayed: false
	// 200 {"refund":1} replayed: true
	// runs: 1
}

// A target group with multi-value headers enabled sends multiValueHeaders
// and reads them back: several Set-Cookie headers survive. A load
// balancer authenticates no caller, so a guarded handler behind it needs a
// scope rule of its own (see EventScope).
func ExampleNewALB() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /session", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "a", Value: "1"})
		http.SetCookie(w, &http.Cookie{Name: "b", Value: "2"})
		fmt.Fprint(w, "hello "+r.URL.Query().Get("user"))
	})
	handle := idemlambda.NewALB(mux) // in main: lambda.Start(handle)

	resp, err := handle(context.Background(), events.ALBTargetGroupRequest{
		HTTPMethod:                      "GET",
		Path:                            "/session",
		MultiValueQueryStringParameters: map[string][]string{"user": {"ada"}},
		MultiValueHeaders:               map[string][]string{"accept": {"text/plain"}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.StatusDescription, resp.Body)
	fmt.Println(resp.MultiValueHeaders["Set-Cookie"])
	// Output:
	// 200 OK hello ada
	// [a=1 b=2]
}

func ExampleSQSBatch() {
	ctx := context.Background()
	store, done := keyTable(ctx)
	defer done()

	shipped := map[string]int{}
	handle := idemlambda.SQSBatch(store, func(ctx context.Context, m events.SQSMessage) error {
		if m.Body == "order-2" {
			return errors.New("warehouse closed")
		}
		shipped[m.Body]++ // stage DynamoDB writes on txn.FromContext(ctx) here
		return nil
	}, func(o *idemlambda.FuncOptions[events.SQSMessage]) {
		o.Name = "ship-orders"
		// The default key, the message id, is unique per message, so
		// every producer can share one scope.
		o.SingleCaller = true
	}) // in main: lambda.Start(handle)

	resp, err := handle(ctx, events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m-1", Body: "order-1"},
		{MessageId: "m-2", Body: "order-2"},
	}})
	if err != nil {
		panic(err)
	}
	fmt.Println("failed:", resp.BatchItemFailures)

	// SQS delivers m-1 again (its visibility timeout ran out) with m-3.
	resp, err = handle(ctx, events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m-1", Body: "order-1"},
		{MessageId: "m-3", Body: "order-3"},
	}})
	if err != nil {
		panic(err)
	}
	fmt.Println("failed:", resp.BatchItemFailures)
	fmt.Println("shipped:", shipped)
	// Output:
	// failed: [{m-2}]
	// failed: []
	// shipped: map[order-1:1 order-3:1]
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
	// The same key for another order: refused. The error's type names
	// the failure, and so does the errorType Lambda reports.
	_, err := handle(ctx, Order{ID: "o-1", Amount: 99})
	var reused *idemlambda.KeyReusedError
	fmt.Println(errors.As(err, &reused), err)
	// Output:
	// {Charged:1250 Run:1} <nil>
	// {Charged:1250 Run:1} <nil>
	// true idemkey: key reused with a different request
}
