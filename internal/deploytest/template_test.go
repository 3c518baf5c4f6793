package deploytest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
)

// Static: moto 5.2.1's CloudFormation drops a table's
// TimeToLiveSpecification and PointInTimeRecoverySpecification (the key
// schema and billing mode are read from the stack in moto_stack_test.go).
func TestKeyTableHasTTLOnTheLibrarysAttributeAndPointInTimeRecovery(t *testing.T) {
	props := load(t).At("Resources", "KeyTable", "Properties").(map[string]any)
	assert.Equal(t, map[string]any{"AttributeName": dynamostore.TTLAttribute, "Enabled": map[string]any{"Fn::If": []any{"SweepOwnRegion", "false", "true"}}},
		props["TimeToLiveSpecification"], "TTL on unless WriterRegion is set")
	assert.Equal(t, map[string]any{"PointInTimeRecoveryEnabled": "true"}, props["PointInTimeRecoverySpecification"])
}

// Static: moto 5.2.1's CloudFormation cannot build CloudWatch alarms (the
// schedule is read from the stack in moto_stack_test.go).
func TestEvictionLagAlarmWatchesTheSweepersLagAndAlarmsWhenItStopsReporting(t *testing.T) {
	props := load(t).At("Resources", "EvictionLagAlarm", "Properties").(map[string]any)
	assert.Equal(t, "EvictionLagSeconds", props["MetricName"])
	assert.Equal(t, "idemkey", props["Namespace"])
	assert.Equal(t, "breaching", props["TreatMissingData"], "a sweeper that stops reporting must alarm too")
}

func TestEveryGrantNamesOneTable(t *testing.T) {
	tpl := load(t)
	for _, fn := range []string{"PaymentsFunction", "SweeperFunction"} {
		grants, err := tpl.Actions(fn, nil)
		require.NoError(t, err, fn)
		for target := range grants {
			assert.Equal(t, "AWS::DynamoDB::Table", tpl.Type(target), "%s grants on %s", fn, target)
		}
	}
}

func ref(name string) map[string]any { return map[string]any{"Ref": name} }

// A HomeRegion global table is deployed once per region with WriterRegion
// set: the sweeper gets it as WRITER_REGION (cmd/sweeper), the stack
// refuses a region other than its own, and the key table's TTL is off.
func TestTemplatePassesWriterRegionToTheSweeperAndTurnsTTLOffWithIt(t *testing.T) {
	tpl := load(t)
	param := tpl.At("Parameters", "WriterRegion").(map[string]any)
	assert.Equal(t, "String", param["Type"])
	assert.Equal(t, "", param["Default"], "unset by default: a single-region table")
	assert.Equal(t, strconv.Itoa(dynamostore.MaxSweepRegionLen), param["MaxLength"])

	assert.Equal(t, ref("WriterRegion"), tpl.At("Resources", "SweeperFunction", "Properties", "Environment", "Variables", "WRITER_REGION"))
	// The payments function writes that region on its records: a regional
	// sweeper leaves a record of no region alone, and nothing else would
	// evict it with TTL off.
	assert.Equal(t, ref("WriterRegion"), tpl.At("Resources", "PaymentsFunction", "Properties", "Environment", "Variables", "WRITER_REGION"),
		"the payments function gets the region its records carry")

	set := map[string]any{"Fn::Not": []any{map[string]any{"Fn::Equals": []any{ref("WriterRegion"), ""}}}}
	assert.Equal(t, set, tpl.At("Conditions", "SweepOwnRegion"))
	assert.Equal(t, map[string]any{
		"RuleCondition": set,
		"Assertions": []any{map[string]any{
			"Assert":            map[string]any{"Fn::Equals": []any{ref("WriterRegion"), ref("AWS::Region")}},
			"AssertDescription": "WriterRegion must be the stack's own region; a region's records are swept only in its own replica.",
		}},
	}, tpl.At("Rules", "WriterRegionIsThisRegion"))
}

func TestSweepModeIndexGivesTheKeyTableTheExpiryIndexAndTheSweeperItsMode(t *testing.T) {
	tpl := load(t)
	require.NoError(t, tpl.Allowed("SweepMode", "scan"))
	require.NoError(t, tpl.Allowed("SweepMode", "index"))
	require.Error(t, tpl.Allowed("SweepMode", "gsi"))

	for mode, indexed := range map[string]bool{"scan": false, "index": true} {
		p := Params{"SweepMode": mode}
		gsis, err := tpl.Property(p, "KeyTable", "Properties", "GlobalSecondaryIndexes")
		require.NoError(t, err, mode)
		env, err := tpl.Environment(p, "SweeperFunction")
		require.NoError(t, err, mode)
		assert.Equal(t, mode, env["SWEEP_MODE"])
		api, err := tpl.Environment(p, "PaymentsFunction")
		require.NoError(t, err, mode)
		assert.Equal(t, fmt.Sprint(indexed), api["EXPIRY_INDEX"],
			"the API's records carry what the index needs exactly when the sweeper reads it (dynamostore.Options.ExpiryIndex)")
		granted, err := tpl.Actions("SweeperFunction", p)
		require.NoError(t, err)
		if !indexed {
			assert.Equal(t, NoValue, gsis, "scan mode: no index to pay for")
			assert.NotContains(t, granted["KeyTable"], "dynamodb:Query")
			continue
		}
		list, ok := gsis.([]any)
		require.True(t, ok, "%T", gsis)
		require.Len(t, list, 1)
		gsi := list[0].(map[string]any)
		assert.Equal(t, dynamostore.ExpiryIndexName, gsi["IndexName"])
		assert.Equal(t, []any{
			map[string]any{"AttributeName": dynamostore.ExpiryBucketAttribute, "KeyType": "HASH"},
			map[string]any{"AttributeName": dynamostore.TTLAttribute, "KeyType": "RANGE"},
		}, gsi["KeySchema"])
		// The projection dynamostore.EnsureExpiryIndex creates and
		// requires: only attributes that no commit changes.
		assert.Equal(t, map[string]any{"ProjectionType": "INCLUDE", "NonKeyAttributes": []any{"c", "e", "g", "idemkey"}},
			gsi["Projection"])
		defs, err := tpl.Property(p, "KeyTable", "Properties", "AttributeDefinitions")
		require.NoError(t, err)
		assert.Contains(t, defs, map[string]any{"AttributeName": dynamostore.ExpiryBucketAttribute, "AttributeType": "S"})
		assert.Contains(t, defs, map[string]any{"AttributeName": dynamostore.TTLAttribute, "AttributeType": "N"})
		assert.Subset(t, granted["KeyTable"], []string{"dynamodb:Query", "dynamodb:DescribeTable"})
	}
}

// Every parameter is in one group of the console's form, and the
// dashboard's alarm widget shows every alarm of the stack.
func TestEveryParameterIsGroupedAndEveryAlarmIsOnTheDashboard(t *testing.T) {
	tpl := load(t)
	groups, _ := tpl.At("Metadata", "AWS::CloudFormation::Interface", "ParameterGroups").([]any)
	require.NotEmpty(t, groups)
	grouped := map[string]int{}
	for _, g := range groups {
		for _, name := range strs(g.(map[string]any)["Parameters"]) {
			grouped[name]++
		}
	}
	for name := range tpl.At("Parameters").(map[string]any) {
		assert.Equal(t, 1, grouped[name], "parameter %s in exactly one group", name)
	}
	dashboards := tpl.Resources("AWS::CloudWatch::Dashboard")
	require.Len(t, dashboards, 1)
	body, ok := tpl.At("Resources", dashboards[0], "Properties", "DashboardBody", "Fn::Sub").(string)
	require.True(t, ok, "the dashboard's body is a !Sub")
	for _, alarm := range tpl.Resources("AWS::CloudWatch::Alarm") {
		assert.Contains(t, body, "${"+alarm+".Arn}", "alarm %s on the dashboard", alarm)
	}
}

// Every parameter of template.yaml has a row in the parameter table of
// docs/operations.md (a row may name several parameters).
func TestEveryParameterIsInTheDocsParameterTable(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(Root(), "docs", "operations.md"))
	require.NoError(t, err)
	rows := map[string]bool{}
	for line := range strings.SplitSeq(string(readme), "\n") {
		if first, _, ok := strings.Cut(strings.TrimPrefix(line, "| "), " |"); ok && strings.HasPrefix(line, "| `") {
			for name := range strings.SplitSeq(first, ", ") {
				rows[strings.Trim(name, "`")] = true
			}
		}
	}
	params := load(t).At("Parameters").(map[string]any)
	require.NotEmpty(t, params)
	for name := range params {
		assert.True(t, rows[name], "the parameter table of docs/operations.md has no row for %s", name)
	}
}
