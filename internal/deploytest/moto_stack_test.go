package deploytest

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
)

// The parameter sets a deployment meaningfully differs by.
var stackParams = map[string]map[string]string{
	"default":      {},
	"index":        {"SweepMode": "index"},
	"writerRegion": {"WriterRegion": Region},
	"jwt":          {"JwtIssuer": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_abc", "JwtAudience": "client1,client2"},
	"alarmTopic":   {"AlarmTopicArn": "arn:aws:sns:us-east-1:123456789012:oncall"},
}

// The resources moto 5.2.1's CloudFormation cannot build: the static
// tests of this package (template_test.go, stack_test.go,
// observability_test.go) check them.
func TestMotoBuildsEveryResourceButTheAlarmsAndTheHTTPAPI(t *testing.T) {
	s := ForTest(t, nil)
	for id, typ := range s.Unbuilt {
		assert.True(t, typ == "AWS::CloudWatch::Alarm" || strings.HasPrefix(typ, "AWS::ApiGatewayV2::"), "%s (%s) is left out", id, typ)
	}
	for _, id := range []string{"KeyTable", "PaymentsTable", "PaymentsFunction", "PaymentsFunctionRole", "SweeperFunction", "SweeperFunctionRole",
		"SweeperFunctionEvery5Minutes", "SweeperFunctionEvery5MinutesPermission", "PaymentsApiInvokePermission", "PaymentsLogGroup", "SweeperLogGroup", "Dashboard"} {
		assert.Contains(t, s.Resources, id, "the stack built %s", id)
	}
}

func TestStackKeyTableHasTheLibrarysSchemaAndTheExpiryIndexInIndexMode(t *testing.T) {
	ctx := context.Background()
	for name, params := range stackParams {
		t.Run(name, func(t *testing.T) {
			s := ForTest(t, params)
			out, err := dynamodb.NewFromConfig(s.Config).DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.Resources["KeyTable"])})
			require.NoError(t, err)
			table := out.Table
			assert.Equal(t, []ddbtypes.KeySchemaElement{{AttributeName: aws.String(dynamostore.PartitionKey), KeyType: ddbtypes.KeyTypeHash}}, table.KeySchema)
			require.NotNil(t, table.BillingModeSummary)
			assert.Equal(t, ddbtypes.BillingModePayPerRequest, table.BillingModeSummary.BillingMode)
			if params["SweepMode"] != "index" {
				assert.Empty(t, table.GlobalSecondaryIndexes, "scan mode: no index to pay for")
				return
			}
			require.Len(t, table.GlobalSecondaryIndexes, 1)
			gsi := table.GlobalSecondaryIndexes[0]
			assert.Equal(t, dynamostore.ExpiryIndexName, aws.ToString(gsi.IndexName))
			assert.Equal(t, []ddbtypes.KeySchemaElement{
				{AttributeName: aws.String(dynamostore.ExpiryBucketAttribute), KeyType: ddbtypes.KeyTypeHash},
				{AttributeName: aws.String(dynamostore.TTLAttribute), KeyType: ddbtypes.KeyTypeRange},
			}, gsi.KeySchema)
			require.NotNil(t, gsi.Projection)
			assert.Equal(t, ddbtypes.ProjectionTypeInclude, gsi.Projection.ProjectionType)
			// The library accepts the index (keys and projected attributes) as
			// the one it would create.
			require.NoError(t, dynamostore.EnsureExpiryIndex(ctx, dynamodb.NewFromConfig(s.Config), s.Resources["KeyTable"], dynamostore.KeySchema{}, 0))
		})
	}
}

// Deleting the stack keeps both tables (DeletionPolicy Retain: a retry of
// a completed request must not execute again) and deletes the log groups.
func TestDeletingTheStackKeepsTheTablesAndDeletesTheLogGroups(t *testing.T) {
	ctx := context.Background()
	s := OwnForTest(t, nil)
	ddb := dynamodb.NewFromConfig(s.Config)
	logs := cloudwatchlogs.NewFromConfig(s.Config)
	require.NoError(t, s.Delete(ctx))
	for _, table := range []string{"KeyTable", "PaymentsTable"} {
		_, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.Resources[table])})
		assert.NoError(t, err, "%s outlives the stack", table)
		t.Cleanup(func() {
			_, _ = ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(s.Resources[table])})
		})
	}
	for _, group := range []string{"PaymentsLogGroup", "SweeperLogGroup"} {
		out, err := logs.DescribeLogGroups(ctx, &cloudwatchlogs.DescribeLogGroupsInput{LogGroupNamePrefix: aws.String(s.Resources[group])})
		require.NoError(t, err)
		assert.Empty(t, out.LogGroups, "%s goes with the stack", group)
	}
}

func TestStackFunctionsGetTheirEnvironmentTimeoutAndLogGroup(t *testing.T) {
	ctx := context.Background()
	for name, params := range stackParams {
		t.Run(name, func(t *testing.T) {
			s := ForTest(t, params)
			mode := params["SweepMode"]
			if mode == "" {
				mode = "scan"
			}
			want := map[string]map[string]string{
				"PaymentsFunction": {"KEY_TABLE": s.Resources["KeyTable"], "PAYMENT_TABLE": s.Resources["PaymentsTable"],
					"RETENTION": "24h", "LEASE": "", "WRITER_REGION": params["WriterRegion"],
					"EXPIRY_INDEX": strconv.FormatBool(params["SweepMode"] == "index"),
					"BODY_BUCKET":  "", "BODY_KMS_KEY": ""}, // LargeResponseBodies off
				"SweeperFunction": {"KEY_TABLE": s.Resources["KeyTable"], "SEGMENTS": "4", "MARGIN": "30s",
					"WRITER_REGION": params["WriterRegion"], "SWEEP_MODE": mode, "BODY_BUCKET": ""},
			}
			timeouts := map[string]int32{"PaymentsFunction": 29, "SweeperFunction": 120}
			groups := map[string]string{"PaymentsFunction": "PaymentsLogGroup", "SweeperFunction": "SweeperLogGroup"}
			lc := lambda.NewFromConfig(s.Config)
			logs := cloudwatchlogs.NewFromConfig(s.Config)
			for fn, env := range want {
				got, err := s.Environment(ctx, fn)
				require.NoError(t, err)
				assert.Equal(t, env, got, fn)
				cfg, err := lc.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(s.Resources[fn])})
				require.NoError(t, err)
				assert.Equal(t, timeouts[fn], aws.ToInt32(cfg.Timeout), fn)
				assert.Equal(t, "provided.al2023", string(cfg.Runtime), fn)
				assert.Equal(t, "bootstrap", aws.ToString(cfg.Handler), fn)
				assert.Equal(t, int32(256), aws.ToInt32(cfg.MemorySize), fn)

				group := s.Resources[groups[fn]]
				assert.True(t, strings.HasPrefix(group, "/aws/lambda/"+s.Name+"-"), "%s: %s", fn, group)
				out, err := logs.DescribeLogGroups(ctx, &cloudwatchlogs.DescribeLogGroupsInput{LogGroupNamePrefix: aws.String(group)})
				require.NoError(t, err)
				require.Len(t, out.LogGroups, 1, group)
				assert.Equal(t, int32(30), aws.ToInt32(out.LogGroups[0].RetentionInDays), group)
			}
		})
	}
}

func TestStackSchedulesTheSweeperEveryFiveMinutes(t *testing.T) {
	ctx := context.Background()
	s := ForTest(t, nil)
	ev := eventbridge.NewFromConfig(s.Config)
	rule, err := ev.DescribeRule(ctx, &eventbridge.DescribeRuleInput{Name: aws.String(s.Resources["SweeperFunctionEvery5Minutes"])})
	require.NoError(t, err)
	assert.Equal(t, "rate(5 minutes)", aws.ToString(rule.ScheduleExpression))
	assert.Equal(t, "ENABLED", string(rule.State))
	targets, err := ev.ListTargetsByRule(ctx, &eventbridge.ListTargetsByRuleInput{Rule: rule.Name})
	require.NoError(t, err)
	fn, err := lambda.NewFromConfig(s.Config).GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(s.Resources["SweeperFunction"])})
	require.NoError(t, err)
	require.Len(t, targets.Targets, 1)
	assert.Equal(t, aws.ToString(fn.FunctionArn), aws.ToString(targets.Targets[0].Arn))
}

// The policies as IAM holds them: the exact comparison with the calls each
// function makes is in cmd/sweeper and lambda/example/payments-lambda
// (TestStackGrantsExactlyTheCalls...); here, the conditions and resources
// of the narrowed grants.
func TestStackNarrowsTheSweepersPutItemToItsCursorAndQueryToTheIndex(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []string{"scan", "index"} {
		t.Run(mode, func(t *testing.T) {
			s := ForTest(t, map[string]string{"SweepMode": mode})
			stmts, _, err := s.Policy(ctx, "SweeperFunction")
			require.NoError(t, err)
			arn, err := s.TableARN(ctx, "KeyTable")
			require.NoError(t, err)
			var puts int
			var queried, scanned []string
			for _, st := range stmts {
				assert.Equal(t, "Allow", st.Effect)
				if slices.Contains(st.Actions, "dynamodb:PutItem") {
					puts++
					assert.Equal(t, []string{"dynamodb:PutItem"}, st.Actions)
					assert.Equal(t, map[string]any{"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": []any{"#sweep-cursor", "#sweep-cursor/*", "#expiry-index-complete", "#expiry-index-complete/*"}}}, st.Condition,
						"PutItem only on the cursor and the note of the scan for records outside the index")
				}
				if slices.Contains(st.Actions, "dynamodb:Query") {
					queried = append(queried, st.Resources...)
				}
				if slices.Contains(st.Actions, "dynamodb:Scan") {
					scanned = append(scanned, st.Resources...)
				}
			}
			assert.Equal(t, 1, puts)
			index := arn + "/index/" + dynamostore.ExpiryIndexName
			if mode == "index" {
				assert.Equal(t, []string{index}, queried, "Query on the index only")
				assert.ElementsMatch(t, []string{arn, index}, scanned, "the scan for records outside the index, and the index's one-entry check of the key schema")
			} else {
				assert.Empty(t, queried)
				assert.Equal(t, []string{arn}, scanned)
			}
		})
	}
}
