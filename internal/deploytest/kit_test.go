package deploytest

import (
	"context"
	"maps"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
)

// kitTemplate is the operator kit: the unit a user copies around their
// own function.
const kitTemplate = "examples/own-function/template.yaml"

// The operator kit, deployed to moto, builds what template.yaml builds for
// the library's part: the key table (its index in index mode), the
// guarded function's grant on it (the payments function's, which
// TestTemplateGrantsExactlyTheCallsTheFunctionMakes compares with the
// calls it makes) and the sweeper's (compared with the sweeper's calls in
// cmd/sweeper), the same environment, the same schedule.
func TestOperatorKitStackGrantsAndConfiguresAsTheTemplateDoes(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []string{"scan", "index"} {
		t.Run(mode, func(t *testing.T) {
			params := map[string]string{"SweepMode": mode}
			if mode == "scan" {
				params = nil // the default stack, shared with the other tests
			}
			kit := TemplateForTest(t, kitTemplate, map[string]string{"SweepMode": mode})
			ref := ForTest(t, params)
			for id, typ := range kit.Unbuilt {
				assert.Equal(t, "AWS::CloudWatch::Alarm", typ, "%s is left out", id)
			}
			for _, id := range []string{"KeyTable", "YourFunction", "SweeperFunction", "SweeperFunctionEvery5Minutes", "Dashboard"} {
				assert.Contains(t, kit.Resources, id)
			}

			ddb := dynamodb.NewFromConfig(kit.Config)
			table, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(kit.Resources["KeyTable"])})
			require.NoError(t, err)
			refTable, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(ref.Resources["KeyTable"])})
			require.NoError(t, err)
			assert.Equal(t, refTable.Table.KeySchema, table.Table.KeySchema)
			assert.Equal(t, refTable.Table.BillingModeSummary, table.Table.BillingModeSummary)
			if mode == "index" {
				require.NoError(t, dynamostore.EnsureExpiryIndex(ctx, ddb, kit.Resources["KeyTable"], dynamostore.KeySchema{}, 0))
			} else {
				assert.Empty(t, table.Table.GlobalSecondaryIndexes)
			}

			guarded, err := kit.Grants(ctx, "YourFunction")
			require.NoError(t, err)
			payments, err := ref.Grants(ctx, "PaymentsFunction")
			require.NoError(t, err)
			assert.Equal(t, map[string][]string{"KeyTable": payments["KeyTable"]}, guarded, "the guarded function's grant")
			sweeper, err := kit.Grants(ctx, "SweeperFunction")
			require.NoError(t, err)
			refSweeper, err := ref.Grants(ctx, "SweeperFunction")
			require.NoError(t, err)
			assert.Equal(t, refSweeper, sweeper, "the sweeper's grants")
			stmts, _, err := kit.Policy(ctx, "SweeperFunction")
			require.NoError(t, err)
			refStmts, _, err := ref.Policy(ctx, "SweeperFunction")
			require.NoError(t, err)
			conditions := func(stmts []RoleStatement) (out []map[string]any) {
				for _, s := range stmts {
					if s.Condition != nil {
						out = append(out, s.Condition)
					}
				}
				return out
			}
			assert.Equal(t, conditions(refStmts), conditions(stmts), "PutItem on the cursor only")

			env, err := kit.Environment(ctx, "YourFunction")
			require.NoError(t, err)
			refEnv, err := ref.Environment(ctx, "PaymentsFunction")
			require.NoError(t, err)
			assert.Equal(t, map[string]string{"KEY_TABLE": kit.Resources["KeyTable"], "EXPIRY_INDEX": refEnv["EXPIRY_INDEX"]}, env)
			sweepEnv, err := kit.Environment(ctx, "SweeperFunction")
			require.NoError(t, err)
			refSweepEnv, err := ref.Environment(ctx, "SweeperFunction")
			require.NoError(t, err)
			want := maps.Clone(refSweepEnv)
			delete(want, "WRITER_REGION") // multi-region only
			delete(want, "BODY_BUCKET")   // the kit keeps no bodies in S3 (LargeResponseBodies is the full template's)
			want["KEY_TABLE"] = kit.Resources["KeyTable"]
			assert.Equal(t, want, sweepEnv)

			rule, err := eventbridge.NewFromConfig(kit.Config).DescribeRule(ctx, &eventbridge.DescribeRuleInput{Name: aws.String(kit.Resources["SweeperFunctionEvery5Minutes"])})
			require.NoError(t, err)
			assert.Equal(t, "rate(5 minutes)", aws.ToString(rule.ScheduleExpression))
		})
	}
}
