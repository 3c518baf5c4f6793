// Harness "test": the body of a test function, with t and ctx.
package main

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkey/idemkey/localstack"
)

func testFragment(t *testing.T) {
	ctx := context.Background()
	// README block
	_ = err
}

func main() { _ = testFragment }

var (
	_ = localstack.ForTest
	_ = dynamodb.NewFromConfig
)
