package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/idemkey/idemkey/examples/payments/paymentsapi"
	"github.com/idemkey/idemkey/localstack"
)

func TestDemoCreatesOnePaymentForTwoCallsWithOneKey(t *testing.T) {
	var out, errs bytes.Buffer
	keys, payments := localstack.TableName("keys"), localstack.TableName("payments")
	err := run(context.Background(), []string{"-demo", "-key-table", keys, "-payment-table", payments}, &out, &errs)
	require.NoError(t, err, errs.String())
	assert.Equal(t, "call 1: amount=1250 currency=EUR replayed=false\n"+
		"call 2: amount=1250 currency=EUR replayed=true\n"+
		"same payment: true; payments of alice: 1\n", out.String())
}

func TestHelpExitsCleanly(t *testing.T) {
	var errs bytes.Buffer
	err := run(context.Background(), []string{"-h"}, &bytes.Buffer{}, &errs)
	assert.ErrorContains(t, err, "help requested")
	assert.Contains(t, errs.String(), "-demo")
}

// The gRPC door asks for the credentials the HTTP API asks for:
// "authorization: Bearer <token>", nothing else.
func TestAuthenticateWantsABearerToken(t *testing.T) {
	for value, ok := range map[string]bool{"Bearer alice": true, "alice": false, "Bearer  ": false, "Basic YWxpY2U6": false} {
		ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", value))
		var owner string
		_, err := authenticate(ctx, nil, nil, func(ctx context.Context, _ any) (any, error) {
			owner = ownerFrom(ctx)
			return nil, nil
		})
		if ok {
			require.NoError(t, err, value)
			assert.Equal(t, paymentsapi.OwnerOf("alice"), owner)
			continue
		}
		assert.Equal(t, codes.Unauthenticated, status.Code(err), value)
		assert.Empty(t, owner, value)
	}
}
