// Command payments-lambda serves idemkey's example payments API
// (examples/payments/paymentsapi) as an AWS Lambda function behind an API
// Gateway HTTP API (payload format 2.0, as the template deploys it) or a
// REST API (PAYLOAD_FORMAT=1.0), through the lambda package's front doors:
// every POST /payments is guarded by idemkey exactly as behind net/http.
//
// It creates no tables unless CREATE_TABLES says so. Configuration, from
// the environment:
//
//	KEY_TABLE      the idempotency key table (required)
//	PAYMENT_TABLE  the payments table (required)
//	RETENTION      how long keys are kept, a Go duration (default 24h)
//	LEASE          the lock lease of a claim, a Go duration. Default: the
//	               invocation's remaining time plus 5 s, so a key held by
//	               an invocation that timed out is free for the retry soon
//	               after, while a live invocation's key is never reclaimed
//	LATENCY        simulated payment-processor latency inside the handler,
//	               a Go duration (default none; for tests and demos)
//	WRITER_REGION  written on every key record (dynamostore.Options.Region),
//	               so that the sweeper of that region (the template's
//	               WriterRegion, which sets both) evicts them; default none
//	EXPIRY_INDEX   "true": the key table has the expiry index and is swept
//	               by it (dynamostore.Options.ExpiryIndex; the template's
//	               SweepMode index sets it); default "false"
//	BODY_BUCKET    the S3 bucket of large response bodies
//	               (dynamostore.Options.Bodies, package s3body; the
//	               template's LargeResponseBodies s3 sets it); default none:
//	               a body too large for its record is stored as omitted
//	BODY_KMS_KEY   with BODY_BUCKET, the KMS key of SSE-KMS; default SSE-S3
//	PAYLOAD_FORMAT "2.0" (default): API Gateway HTTP API events; "1.0":
//	               REST API (and HTTP API payload 1.0) events
//	CREATE_TABLES  "true": create both tables at start when they are
//	               missing (key table with TTL on, both on-demand), for
//	               runs on a laptop against an emulator; a deployed
//	               stack's template creates its tables
//
// The caller (the owner of its payments, and the idempotency scope) is the
// identity an API Gateway authorizer verified, when the route has one: for
// a JWT authorizer, the token's sub claim. Without one, the bearer token
// itself is the caller, whatever it is: fine for a demo, not for
// production (the example's SAM template adds a JWT authorizer when its
// JwtIssuer parameter is set).
//
// The DynamoDB client comes from the SDK's default configuration, so the
// usual variables apply: AWS_REGION, credentials, and
// AWS_ENDPOINT_URL_DYNAMODB for DynamoDB Local or LocalStack.
//
// Build it for provided.al2023 with scripts/build-lambda.sh (a static
// bootstrap, -tags lambda.norpc). On a laptop, run it against the
// DynamoDB emulator (command localstack/cmd/emulator) under AWS's Lambda
// Runtime Interface Emulator (aws-lambda-rie), with CREATE_TABLES=true
// (lambda/README.md).
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/examples/payments/paymentsapi"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/internal/problem"
	idemlambda "github.com/idemkey/idemkey/lambda"
	"github.com/idemkey/idemkey/s3body"
)

// handlerFunc is what lambda.Start runs.
type handlerFunc = func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

func main() {
	ctx := context.Background()
	cfg, err := configFrom(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "payments-lambda:", err)
		os.Exit(1)
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "payments-lambda: AWS configuration:", err)
		os.Exit(1)
	}
	client := dynamodb.NewFromConfig(awsCfg)
	if cfg.BodyBucket != "" {
		cfg.Bodies = s3body.New(s3.NewFromConfig(awsCfg), cfg.BodyBucket, func(o *s3body.Options) { o.KMSKeyID = cfg.BodyKMSKey })
	}
	if os.Getenv("CREATE_TABLES") == "true" {
		if err := paymentsapi.EnsureTables(ctx, client, cfg); err != nil {
			fmt.Fprintln(os.Stderr, "payments-lambda: creating the tables:", err)
			os.Exit(1)
		}
	}
	// One EMF line per invocation on stdout: the template's dashboard and
	// its lock-lost and unavailable alarms read these metrics.
	cfg.Observer = idemlambda.NewMetrics(os.Stdout)
	if os.Getenv("PAYLOAD_FORMAT") == "1.0" {
		lambda.Start(newRESTFunction(client, cfg))
	} else {
		lambda.Start(newFunction(client, cfg))
	}
}

// newFunction returns the function: the payments API behind the HTTP API
// front door.
func newFunction(client paymentsapi.Client, cfg paymentsapi.Config) handlerFunc {
	return idemlambda.NewAPIGatewayV2(verifiedCaller(paymentsapi.NewHandler(client, withDeadlineLease(cfg))))
}

// newRESTFunction returns the function behind the REST API front door
// (payload format 1.0).
func newRESTFunction(client paymentsapi.Client, cfg paymentsapi.Config) func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	return idemlambda.NewAPIGatewayV1(verifiedCaller(paymentsapi.NewHandler(client, withDeadlineLease(cfg))))
}

// withDeadlineLease makes the lease follow the invocation unless the
// configuration sets one: its remaining time plus a margin.
func withDeadlineLease(cfg paymentsapi.Config) paymentsapi.Config {
	if cfg.LeaseFromRequest == nil && cfg.Lease == 0 {
		cfg.LeaseFromRequest = handler.LeaseFromDeadline(idemlambda.DefaultLeaseMargin)
	}
	return cfg
}

// verifiedCaller passes on, in place of the bearer token, the identity
// API Gateway verified when the route has an authorizer (lambda.Scope:
// the token's issuer and sub claim behind a JWT authorizer). The API
// hashes the bearer token into the caller, so it then sees one caller per
// subject, whose payments and keys survive the refresh of its token.
// Without an authorizer the request passes unchanged. A route with an
// authorizer whose identity lambda.Scope cannot read (a Lambda
// authorizer's context without principalId or sub, say) is answered 401:
// passing the client's own Authorization header on would let the client
// choose its caller.
func verifiedCaller(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, err := idemlambda.Scope(r)
		v2, _ := idemlambda.APIGatewayV2Event(r.Context())
		v1, _ := idemlambda.APIGatewayV1Event(r.Context())
		switch {
		case err == nil:
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer "+caller)
		case v2 != nil && v2.RequestContext.Authorizer != nil, v1 != nil && len(v1.RequestContext.Authorizer) > 0:
			problem.Write(w, problem.New(http.StatusUnauthorized, problem.Unauthorized, "Caller not identified",
				"The route's authorizer names no caller identity this function reads: "+err.Error()), 0)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// configFrom reads the configuration from the environment.
func configFrom(getenv func(string) string) (paymentsapi.Config, error) {
	cfg := paymentsapi.Config{KeyTable: getenv("KEY_TABLE"), PaymentTable: getenv("PAYMENT_TABLE"), Retention: 24 * time.Hour, Region: getenv("WRITER_REGION")}
	if cfg.KeyTable == "" || cfg.PaymentTable == "" {
		return cfg, fmt.Errorf("KEY_TABLE and PAYMENT_TABLE must name the tables")
	}
	if len(cfg.Region) > dynamostore.MaxSweepRegionLen {
		return cfg, fmt.Errorf("WRITER_REGION is %d bytes, more than %d: no sweeper of that region could evict its records", len(cfg.Region), dynamostore.MaxSweepRegionLen)
	}
	switch v := getenv("PAYLOAD_FORMAT"); v {
	case "", "1.0", "2.0":
	default:
		return cfg, fmt.Errorf("PAYLOAD_FORMAT=%q: must be \"1.0\" or \"2.0\"", v)
	}
	cfg.BodyBucket, cfg.BodyKMSKey = getenv("BODY_BUCKET"), getenv("BODY_KMS_KEY")
	if cfg.BodyBucket == "" && cfg.BodyKMSKey != "" {
		return cfg, fmt.Errorf("BODY_KMS_KEY is set without BODY_BUCKET: set the bucket of large response bodies, or unset the key")
	}
	switch v := getenv("EXPIRY_INDEX"); v {
	case "", "false":
	case "true":
		cfg.ExpiryIndex = true
	default:
		return cfg, fmt.Errorf("EXPIRY_INDEX=%q: must be \"true\" or \"false\"", v)
	}
	for name, d := range map[string]*time.Duration{"RETENTION": &cfg.Retention, "LEASE": &cfg.Lease, "LATENCY": &cfg.Latency} {
		v := getenv(name)
		if v == "" {
			continue
		}
		parsed, err := time.ParseDuration(v)
		if err != nil || parsed <= 0 {
			return cfg, fmt.Errorf("%s=%q is not a positive duration", name, v)
		}
		*d = parsed
	}
	return cfg, nil
}
