package paymentsapi

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/localstack"
)

func TestSingleTableKeepsPaymentsAndKeyRecordsInOneTableAndOneTransaction(t *testing.T) {
	ep := localstack.ForTest(t)
	cfg := Config{KeyTable: "never-created", PaymentTable: localstack.TableName("payments"), Retention: time.Hour, Lease: time.Minute, SingleTable: true}
	ctx := context.Background()
	require.NoError(t, EnsureTables(ctx, ep.Client, cfg))
	ddbtest.DeleteOnCleanup(t, ep.Client, cfg.PaymentTable)
	_, err := ep.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &cfg.KeyTable})
	var missing *types.ResourceNotFoundException
	require.ErrorAs(t, err, &missing, "no key table")
	require.NoError(t, EnsureTables(ctx, ep.Client, cfg), "idempotent on the existing table")

	calls := ddbtest.NewCounter()
	srv := httptest.NewServer(NewHandler(ep.NewClient(calls.Install), cfg))
	t.Cleanup(srv.Close)
	a := &api{t: t, srv: srv}

	first := a.call("POST", "/payments", "alice", "k1", `{"amount":1250,"currency":"EUR"}`)
	require.Equal(t, 201, first.status, first.body)
	assert.Equal(t, 1, calls.Count("TransactWriteItems"), "the payment and its key, one transaction")
	replay := a.call("POST", "/payments", "alice", "k1", `{"amount":1250,"currency":"EUR"}`)
	assert.Equal(t, first.body, replay.body)
	assert.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
	assert.Equal(t, 422, a.call("POST", "/payments", "alice", "k1", `{"amount":9,"currency":"EUR"}`).status)

	// GET /payments, a Query on the caller's owner, meets no key record.
	list := a.call("GET", "/payments", "alice", "", "")
	var l List
	require.NoError(t, json.Unmarshal([]byte(list.body), &l))
	assert.Equal(t, 1, l.Count)

	out, err := ep.Client.Scan(ctx, &dynamodb.ScanInput{TableName: &cfg.PaymentTable})
	require.NoError(t, err)
	var records, payments int
	for _, item := range out.Items {
		if strings.HasPrefix(item["owner"].(*types.AttributeValueMemberS).Value, "idemkey#") {
			records++
		} else {
			payments++
		}
	}
	assert.Equal(t, [2]int{1, 1}, [2]int{records, payments})

	// The sweeper over the shared table, long after: the key goes, the
	// payment stays.
	sw := dynamostore.NewSweeper(ep.Client, cfg.PaymentTable, func(o *dynamostore.SweepOptions) {
		o.Schema, o.ItemsPerSecond = SingleTableSchema, -1
		o.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	})
	rep, err := sw.Sweep(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, int64(1), rep.Evicted)
	assert.Equal(t, int64(1), rep.Foreign)
	assert.Equal(t, 200, a.call("GET", "/payments/"+paymentID(t, first.body), "alice", "", "").status)
}

func paymentID(t *testing.T, body string) string {
	var p Payment
	require.NoError(t, json.Unmarshal([]byte(body), &p))
	return p.ID
}
