// Harness "service": a main function with ctx, and the quickstart's
// newService (README, "Use it").
package main

import (
	"context"
	"log"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

func newService(ctx context.Context, client *dynamodb.Client) (http.Handler, error) {
	return http.NotFoundHandler(), nil
}

func main() {
	ctx := context.Background()
	// README block
}

var _, _, _ = log.Fatal, config.LoadDefaultConfig, http.ListenAndServe
