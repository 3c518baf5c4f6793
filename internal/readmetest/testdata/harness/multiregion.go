// Harness "multiregion": one DynamoDB client per region (ddbUSEast1,
// ddbEUWest1, ddbAPSE2), ctx, and the service's scope rule tenantOf.
package main

import (
	"context"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/multiregion"
)

func main() {
	ctx := context.Background()
	var ddbUSEast1, ddbEUWest1, ddbAPSE2 *dynamodb.Client
	var tenantOf func(*http.Request) (string, error)
	// README block
	_, _, _ = idem, report, err
}

var (
	_ = handler.New
	_ = multiregion.New
)
