package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/examples/payments/paymentsapi"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/localstack"
)

// event is aws-lambda-go's HTTP API sample without an authorizer (as the
// example's template deploys it), turned into a call of the payments API:
// the test sets the method, path, headers and body (JSON, with its media
// type).
func event(t *testing.T, method, path, key, body string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "apigw-v2-request-no-authorizer.json"))
	require.NoError(t, err)
	var ev events.APIGatewayV2HTTPRequest
	require.NoError(t, json.Unmarshal(raw, &ev))
	ev.RequestContext.HTTP.Method, ev.RawPath, ev.Body = method, path, body
	ev.Headers["authorization"] = "Bearer alice"
	if body != "" {
		ev.Headers["content-type"] = "application/json"
	}
	if key != "" {
		ev.Headers["idempotency-key"] = key
	}
	return ev
}

// TestFunctionServesThePaymentsAPIFromTheDefaultConfiguration builds the
// function as main does, with the client from the SDK's default
// configuration pointed at the test endpoint by AWS_ENDPOINT_URL_DYNAMODB.
func TestFunctionServesThePaymentsAPIFromTheDefaultConfiguration(t *testing.T) {
	ep := localstack.ForTest(t)
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", ep.URL)
	t.Setenv("AWS_REGION", ep.Config().Region)
	t.Setenv("AWS_ACCESS_KEY_ID", localstack.LocalAccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", localstack.LocalSecretAccessKey)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	env := map[string]string{"KEY_TABLE": localstack.TableName("keys"), "PAYMENT_TABLE": localstack.TableName("payments")}
	cfg, err := configFrom(func(k string) string { return env[k] })
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, paymentsapi.EnsureTables(ctx, ep.Client, cfg), "the test creates the tables; the function does not")
	for _, name := range []string{cfg.KeyTable, cfg.PaymentTable} {
		ddbtest.DeleteOnCleanup(t, ep.Client, name)
	}

	awsCfg, err := config.LoadDefaultConfig(ctx)
	require.NoError(t, err)
	fn := newFunction(dynamodb.NewFromConfig(awsCfg), cfg)

	first, err := fn(ctx, event(t, "POST", "/payments", "order-42", `{"amount":1250,"currency":"EUR"}`))
	require.NoError(t, err)
	require.Equal(t, 201, first.StatusCode, first.Body)
	again, err := fn(ctx, event(t, "POST", "/payments", "order-42", `{"currency":"EUR","amount":1250}`))
	require.NoError(t, err)
	assert.Equal(t, 201, again.StatusCode)
	assert.Equal(t, "true", again.Headers["Idempotent-Replayed"])
	assert.JSONEq(t, first.Body, again.Body)
	reused, err := fn(ctx, event(t, "POST", "/payments", "order-42", `{"amount":1,"currency":"EUR"}`))
	require.NoError(t, err)
	assert.Equal(t, 422, reused.StatusCode)

	list, err := fn(ctx, event(t, "GET", "/payments", "", ""))
	require.NoError(t, err)
	var payments struct{ Count int }
	require.NoError(t, json.Unmarshal([]byte(list.Body), &payments))
	assert.Equal(t, 1, payments.Count)
}

func TestConfigurationFromTheEnvironment(t *testing.T) {
	env := map[string]string{}
	get := func(k string) string { return env[k] }
	_, err := configFrom(get)
	assert.Error(t, err, "table names are required")
	env["KEY_TABLE"], env["PAYMENT_TABLE"] = "keys", "payments"
	cfg, err := configFrom(get)
	require.NoError(t, err)
	assert.Equal(t, "24h0m0s", cfg.Retention.String())
	assert.Zero(t, cfg.Lease, "the store's lease")
	env["RETENTION"], env["LEASE"] = "168h", "35s"
	cfg, err = configFrom(get)
	require.NoError(t, err)
	assert.Equal(t, "168h0m0s", cfg.Retention.String())
	assert.Equal(t, "35s", cfg.Lease.String())
	env["LEASE"] = "soon"
	_, err = configFrom(get)
	assert.Error(t, err)
	env["LEASE"] = "35s"
	assert.Empty(t, cfg.Region, "no WRITER_REGION, no region on the records")
	env["WRITER_REGION"] = "eu-west-1"
	cfg, err = configFrom(get)
	require.NoError(t, err)
	assert.Equal(t, "eu-west-1", cfg.Region)
	env["WRITER_REGION"] = strings.Repeat("r", dynamostore.MaxSweepRegionLen+1)
	_, err = configFrom(get)
	assert.ErrorContains(t, err, "WRITER_REGION", "refused, not a panic in dynamostore.New")
	env["WRITER_REGION"] = ""
	assert.False(t, cfg.ExpiryIndex, "no EXPIRY_INDEX: records for a table swept by scan")
	env["EXPIRY_INDEX"] = "true"
	cfg, err = configFrom(get)
	require.NoError(t, err)
	assert.True(t, cfg.ExpiryIndex)
	env["EXPIRY_INDEX"] = "yes"
	_, err = configFrom(get)
	assert.ErrorContains(t, err, "EXPIRY_INDEX")
	env["EXPIRY_INDEX"] = ""
	for _, v := range []string{"1.0", "2.0"} {
		env["PAYLOAD_FORMAT"] = v
		_, err = configFrom(get)
		assert.NoError(t, err, "PAYLOAD_FORMAT=%s", v)
	}
	env["PAYLOAD_FORMAT"] = "1"
	_, err = configFrom(get)
	assert.ErrorContains(t, err, "PAYLOAD_FORMAT", "a typo must not start the wrong front door")
}
