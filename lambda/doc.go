// Package lambda puts idemkey in front of AWS Lambda functions: HTTP
// functions behind API Gateway, an Application Load Balancer or a Function
// URL, and functions invoked with any other event (SQS, EventBridge, a
// direct invoke).
//
// Our package name collides with aws-lambda-go's; import ours as
// idemlambda:
//
//	import (
//		"github.com/aws/aws-lambda-go/lambda"
//		idemlambda "github.com/idemkey/idemkey/lambda"
//	)
//
// What a user calls:
//
//   - Middleware: package handler's middleware with Lambda defaults (the
//     scope from the event, the lease from the invocation's deadline);
//   - NewAPIGatewayV1, NewAPIGatewayV2, NewALB, NewFunctionURL: an
//     http.Handler as a function for lambda.Start;
//   - Idempotent: a typed function guarded by a key taken from its input;
//   - SQSBatch: Idempotent for each record of an SQS batch, with partial
//     batch failures;
//   - EventScope and Scope, the default scope rules, and FunctionScope, to
//     find a function's records;
//   - APIGatewayV1Event, APIGatewayV2Event, ALBEvent, FunctionURLEvent:
//     the event of a request, from its context.
//   - NewMetrics: an idemkey.Observer that writes one CloudWatch EMF line
//     of request metrics per invocation (per batch for SQSBatch).
//
// Every front door names itself in the request's context
// (idemkey.WithFrontDoor: lambda-apigw-v1, lambda-apigw-v2, lambda-alb,
// lambda-function-url, lambda-invoke, lambda-sqs), so that an Observer's
// events say which one served a request.
//
// Package lambdatest (a local Lambda Runtime API) runs a function's
// bootstrap in tests. On a laptop, AWS's Lambda Runtime Interface
// Emulator (aws-lambda-rie) with the DynamoDB emulator of command
// localstack/cmd/emulator runs the example function
// (lambda/example/payments-lambda) as Lambda does (lambda/README.md).
//
// # HTTP front doors
//
// NewAPIGatewayV1 (REST API, proxy integration), NewAPIGatewayV2 (HTTP API,
// payload format 2.0), NewALB (target group) and NewFunctionURL (buffered
// invoke mode) each turn an http.Handler into a function for lambda.Start.
// They translate and decide nothing: the event becomes an *http.Request,
// the handler answers into an in-memory http.ResponseWriter, and the
// response becomes the event's response type. An http.Handler guarded by
// package handler therefore answers the same statuses, problem documents
// and Idempotent-Replayed header behind API Gateway as behind net/http; a
// repeated Idempotency-Key header, which HTTP APIs and Function URLs join
// with commas, is split again and refused with 400 as net/http refuses it.
// One repetition cannot be told from a single header: two lines that are
// the halves of a quoted key holding a comma (`"x` and `y"`) join into the
// valid key `"x,y"`. Both halves are malformed, and a client that sends
// them sends them on every attempt, so the request still executes once.
//
// Middleware is handler.New with Lambda defaults: the idempotency scope
// comes from the event (EventScope: the JWT subject within its issuer, the authorizer's
// principal, the Cognito identity or the IAM caller, and the API key only
// when none of them is there), and each key's lock lease follows the
// invocation's deadline (handler.LeaseFromDeadline):
//
//	idem := idemlambda.Middleware(store)
//	mux.Handle("POST /payments", idem(createPayment))
//	lambda.Start(idemlambda.NewAPIGatewayV2(mux))
//
// An event that identifies no caller (a route without authorization, a
// Function URL with AuthType NONE, every load balancer event) gets 401 and
// runs nothing: there is no scope shared by all callers unless the code
// says so. A service with exactly one caller sets
// handler.Options.SingleCaller in MiddlewareOptions.Handler; a service
// that authenticates its callers itself (behind a load balancer, for one)
// sets handler.Options.Scope to a rule of its own, which reads the event
// from the request's context.
//
// The event is in the request's context (APIGatewayV1Event,
// APIGatewayV2Event, ALBEvent, FunctionURLEvent), next to aws-lambda-go's
// lambdacontext.
//
// # Any event
//
// Idempotent wraps a typed function, func(context.Context, In) (Out, error),
// with a key chosen from the input: the first invocation runs it and stores
// its output as JSON, later ones with the same key and input get the stored
// output without running it. Each function has a name of its own, part of
// what its keys mean, so functions that share a key table never answer
// each other's inputs; and a scope per caller, unless the function states
// that it has a single caller. SQSBatch applies it to each record of an
// SQS batch and reports failed records as partial batch failures.
//
// # Errors and Lambda's errorType
//
// Lambda reports a function error with an errorType, which aws-lambda-go
// takes from the name of the error's type. Every error of Idempotent
// other than the function's own is therefore of a type named after what
// went wrong (InFlightError, KeyReusedError, KeyError, ScopeError,
// FingerprintError, StoreUnavailableError, StoreMisconfiguredError,
// LockLostError, StagedWriteError, StoredOutputError, OutputEncodingError,
// IdempotencyError), which wraps its cause: errors.Is with ErrNoKey,
// idemkey.ErrInFlight, idemkey.ErrMismatch or idemkey.ErrUnavailable, and
// errors.As with *idemkey.InFlightError or txn's typed errors, see through
// it. The function's own errors are returned as they are. The front doors
// fail only with an *EventError.
//
// # The lease follows the invocation
//
// Lambda stops a function at its deadline without running any more of its
// code, so a key claimed by an invocation that times out stays in flight
// until its lock lease runs out. Middleware and Idempotent therefore claim
// with a lease of the invocation's remaining time plus a margin
// (DefaultLeaseMargin, 5 s): a retry after a timeout takes the key over
// soon after the deadline, and a live invocation's key is never taken over,
// since the invocation cannot outlive its deadline. aws-lambda-go sets the
// deadline of each invocation's context from the Runtime API's
// Lambda-Runtime-Deadline-Ms header.
//
// # Why not aws-lambda-go-api-proxy
//
// github.com/awslabs/aws-lambda-go-api-proxy converts the same events, but
// it is one module of adapters for web frameworks (gin, echo, fiber, iris,
// gorilla/mux, negroni, chi) whose go.mod requires all of them, so they
// would all enter our users' module graphs; and it decides base64, cookie
// and multi-value behaviour for us. The conversion here is a few hundred lines,
// tested against aws-lambda-go's own sample events, and it lets us
// guarantee what the idempotency contract needs: the exact body bytes that
// are fingerprinted, Set-Cookie carried in the cookies field, binary bodies
// base64-encoded by Content-Type, ALB responses in the header mode of their
// request, and the event in the request's context for the scope rules.
//
// This package is not an HTTP server, a router, or a Lambda runtime: it
// relies on aws-lambda-go's lambda.Start for the Runtime API and on package
// handler for the HTTP contract. Response streaming is not supported: a
// guarded response is buffered until its commit anyway.
package lambda
