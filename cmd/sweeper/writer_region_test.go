package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/examples/payments/paymentsapi"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/deploytest"
	"github.com/idemkey/idemkey/localstack"
)

// The template deployed with WriterRegion turns the key table's TTL off
// and sweeps only that region's records: the template's payments function
// must write that region on its records, or nothing would ever evict them.
func TestWriterRegionStackEvictsThePaymentsFunctionsRecords(t *testing.T) {
	stack := deploytest.ForTest(t, map[string]string{"WriterRegion": "us-east-1"})

	// The payments function's records carry the region its environment
	// gives it (payments-lambda reads WRITER_REGION into Config.Region).
	payEnv, err := stack.Environment(context.Background(), "PaymentsFunction")
	require.NoError(t, err)
	require.Equal(t, "us-east-1", payEnv["WRITER_REGION"])

	// Write one key record as the payments function does.
	ep := localstack.ForTest(t)
	keys, pays := localstack.TableName("zz-keys"), localstack.TableName("zz-pays")
	cfg := paymentsapi.Config{KeyTable: keys, PaymentTable: pays, Retention: 24 * time.Hour, Lease: time.Minute, Region: payEnv["WRITER_REGION"]}
	require.NoError(t, paymentsapi.EnsureTables(context.Background(), ep.Client, cfg))
	ddbtest.DeleteOnCleanup(t, ep.Client, keys)
	ddbtest.DeleteOnCleanup(t, ep.Client, pays)
	h := paymentsapi.NewHandler(ep.Client, cfg)
	req := httptest.NewRequest("POST", "/payments", strings.NewReader(`{"amount":5,"currency":"EUR"}`))
	req.Header.Set("Authorization", "Bearer alice")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "order-1")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())

	// The sweeper, configured from the template's environment (TTL is off
	// in this stack: the sweeper alone evicts), three days later.
	env, err := stack.Environment(context.Background(), "SweeperFunction")
	require.NoError(t, err)
	env["AWS_REGION"] = "us-east-1"
	env["KEY_TABLE"] = keys
	s, err := configFromEnv(deploytest.NewEnv(env).Getenv)
	require.NoError(t, err, "the template's WriterRegion environment is accepted")
	var out bytes.Buffer
	later := time.Now().Add(72 * time.Hour)
	f := &function{client: ep.Client, cfg: s, stdout: &out, logger: slog.New(slog.DiscardHandler), now: func() time.Time { return later }}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := f.handle(ctx, event(t))
	require.NoError(t, err)

	scan, err := ep.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(keys)})
	require.NoError(t, err)
	expiredLeft := 0
	for _, it := range scan.Items {
		if _, ok := it["exp"]; ok {
			expiredLeft++
		}
	}
	assert.Equal(t, int64(1), r.Evicted, "the expired key record of the payments function is evicted")
	assert.Zero(t, r.Foreign)
	assert.Contains(t, out.String(), `"Unowned":0`, "the metrics line counts the records no regional sweeper deletes")
	assert.Zero(t, expiredLeft, "no expired key record is left in a table without TTL")
}
