// Harness "lambda": a Lambda function's main, with the AWS configuration
// in cfg and the POST handler of the README's "Use it" in createPayment.
package main

import (
	"context"
	"log"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkey/idemkey/dynamostore"
	idemlambda "github.com/idemkey/idemkey/lambda"
)

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	var createPayment http.Handler
	// README block
}

var (
	_ = lambda.Start
	_ = dynamodb.NewFromConfig
	_ = dynamostore.New
	_ = idemlambda.Middleware
	_ = os.Getenv
)
