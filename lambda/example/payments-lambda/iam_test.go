package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/examples/payments/paymentsapi"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/deploytest"
	"github.com/idemkey/idemkey/localstack"
)

// TestTemplateGrantsExactlyTheCallsTheFunctionMakes drives the function
// through every path that reaches DynamoDB (first execution, replay,
// mismatch, in flight, a commit that fails and is released, reads), records
// the IAM actions its calls need per table, and compares them with the
// PaymentsFunction role's policy as IAM holds it in template.yaml's stack
// on moto: nothing missing, nothing extra.
func TestTemplateGrantsExactlyTheCallsTheFunctionMakes(t *testing.T) {
	stack := deploytest.ForTest(t, nil)
	for name, opts := range map[string][]func(*dynamodb.Options){
		"item with the condition failure": nil,
		"consistent-read fallback":        {ddbtest.WithoutOldItem},
	} {
		t.Run(name, func(t *testing.T) {
			ep := localstack.ForTest(t)
			perms := ddbtest.NewPermissions()
			faulty := ddbtest.NewFaulty(ep.NewClient(append(opts, perms.Install)...))
			cfg := paymentsapi.Config{KeyTable: localstack.TableName("keys"), PaymentTable: localstack.TableName("payments"), Retention: time.Hour}
			ctx := context.Background()
			require.NoError(t, paymentsapi.EnsureTables(ctx, ep.Client, cfg))
			for _, name := range []string{cfg.KeyTable, cfg.PaymentTable} {
				ddbtest.DeleteOnCleanup(t, ep.Client, name)
			}
			fn := newFunction(faulty, cfg)
			call := func(method, path, key, body string) int {
				resp, err := fn(ctx, event(t, method, path, key, body))
				require.NoError(t, err)
				return resp.StatusCode
			}
			body := `{"amount":100,"currency":"EUR"}`
			resp, err := fn(ctx, event(t, "POST", "/payments", "k1", body))
			require.NoError(t, err)
			require.Equal(t, 201, resp.StatusCode)
			assert.Equal(t, 201, call("POST", "/payments", "k1", body))                            // replay
			assert.Equal(t, 422, call("POST", "/payments", "k1", `{"amount":5,"currency":"EUR"}`)) // mismatch
			faulty.Plan("TransactWriteItems", ddbtest.FailBefore)
			assert.Equal(t, 503, call("POST", "/payments", "k2", body)) // the commit fails: read, release
			var p struct{ ID string }
			require.NoError(t, json.Unmarshal([]byte(resp.Body), &p))
			assert.Equal(t, 200, call("GET", "/payments/"+p.ID, "", ""))
			assert.Equal(t, 200, call("GET", "/payments", "", ""))

			granted, err := stack.Grants(ctx, "PaymentsFunction")
			require.NoError(t, err)
			assert.Equal(t, granted["KeyTable"], perms.Actions(cfg.KeyTable), "key table")
			assert.Equal(t, granted["PaymentsTable"], perms.Actions(cfg.PaymentTable), "payments table")
			assert.Len(t, granted, 2, "no grant on any other resource")
		})
	}
}
