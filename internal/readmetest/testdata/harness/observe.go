// Harness "observe": a service's main, with the AWS configuration in cfg,
// the POST handler of the README's "Use it" in createPayment and its
// tenantOf (README, "Observability").
package main

import (
	"context"
	"log"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/tracing/smithyoteltracing"
	"go.opentelemetry.io/otel"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/idemotel"
	idemlambda "github.com/idemkey/idemkey/lambda"
)

func tenantOf(ctx context.Context) (string, error) { return "", nil }

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	var createPayment http.Handler
	_, _ = cfg, createPayment
	// README block
}

var (
	_ = lambda.Start
	_ = dynamodb.NewFromConfig
	_ = dynamostore.New
	_ = handler.New
	_ = idemkey.Observers
	_ = idemotel.New
	_ = idemlambda.NewMetrics
	_ = smithyoteltracing.Adapt
	_ = otel.GetTracerProvider
	_ = os.Stdout
	_ = tenantOf
)
