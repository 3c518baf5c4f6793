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
	"go.yaml.in/yaml/v3"

	"github.com/idemkey/idemkey/dynamostore"
)

// Static: moto 5.2.1's CloudFormation drops a table's
// TimeToLiveSpecification and PointInTimeRecoverySpecification (the key
// schema and billing mode are read from the stack in moto_stack_test.go).
func TestKeyTableHasTTLOnTheLibrarysAttributeAndPointInTimeRecovery(t *testing.T) {
	tpl, err := Load()
	require.NoError(t, err)
	assert.Equal(t, dynamostore.TTLAttribute, tpl.Scalar("KeyTable", "Properties", "TimeToLiveSpecification", "AttributeName"))
	enabled := tpl.Path("KeyTable", "Properties", "TimeToLiveSpecification", "Enabled")
	require.NotNil(t, enabled)
	assert.Equal(t, []string{"!If", "SweepOwnRegion", "false", "true"}, flat(enabled), "TTL on unless WriterRegion is set")
	assert.Equal(t, "true", tpl.Scalar("KeyTable", "Properties", "PointInTimeRecoverySpecification", "PointInTimeRecoveryEnabled"))
}

// Static: moto 5.2.1's CloudFormation cannot build CloudWatch alarms (the
// schedule is read from the stack in moto_stack_test.go).
func TestEvictionLagAlarmWatchesTheSweepersLagAndAlarmsWhenItStopsReporting(t *testing.T) {
	tpl, err := Load()
	require.NoError(t, err)
	assert.Equal(t, "EvictionLagSeconds", tpl.Scalar("EvictionLagAlarm", "Properties", "MetricName"))
	assert.Equal(t, "idemkey", tpl.Scalar("EvictionLagAlarm", "Properties", "Namespace"))
	assert.Equal(t, "breaching", tpl.Scalar("EvictionLagAlarm", "Properties", "TreatMissingData"), "a sweeper that stops reporting must alarm too")
}

func TestEveryGrantNamesOneTable(t *testing.T) {
	tpl, err := Load()
	require.NoError(t, err)
	for _, fn := range []string{"PaymentsFunction", "SweeperFunction"} {
		grants, err := tpl.Actions(fn)
		require.NoError(t, err, fn)
		for target := range grants {
			assert.Equal(t, "AWS::DynamoDB::Table", tpl.Type(target), "%s grants on %s", fn, target)
		}
	}
}

// flat lists a node's tags and scalar values, depth first.
func flat(n *yaml.Node) []string {
	var out []string
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		out = append(out, n.Tag)
	}
	if n.Kind == yaml.ScalarNode {
		return append(out, n.Value)
	}
	for _, c := range n.Content {
		out = append(out, flat(c)...)
	}
	return out
}

// A HomeRegion global table is deployed once per region with WriterRegion
// set: the sweeper gets it as WRITER_REGION (cmd/sweeper), the stack
// refuses a region other than its own, and the key table's TTL is off.
func TestTemplatePassesWriterRegionToTheSweeperAndTurnsTTLOffWithIt(t *testing.T) {
	tpl, err := Load()
	require.NoError(t, err)
	param := tpl.Section("Parameters", "WriterRegion")
	require.NotNil(t, param)
	assert.Equal(t, "String", get(param, "Type").Value)
	assert.Equal(t, "", get(param, "Default").Value, "unset by default: a single-region table")
	assert.Equal(t, strconv.Itoa(dynamostore.MaxSweepRegionLen), get(param, "MaxLength").Value)

	env := tpl.Path("SweeperFunction", "Properties", "Environment", "Variables", "WRITER_REGION")
	require.NotNil(t, env)
	assert.Equal(t, []string{"!Ref", "WriterRegion"}, flat(env))
	// The payments function writes that region on its records: a regional
	// sweeper leaves a record of no region alone, and nothing else would
	// evict it with TTL off.
	env = tpl.Path("PaymentsFunction", "Properties", "Environment", "Variables", "WRITER_REGION")
	require.NotNil(t, env, "the payments function gets the region its records carry")
	assert.Equal(t, []string{"!Ref", "WriterRegion"}, flat(env))

	assert.Equal(t, []string{"!Not", "!Equals", "!Ref", "WriterRegion", ""}, flat(tpl.Section("Conditions", "SweepOwnRegion")))
	rule := tpl.Section("Rules", "WriterRegionIsThisRegion")
	require.NotNil(t, rule)
	assert.Equal(t, []string{"!Not", "!Equals", "!Ref", "WriterRegion", ""}, flat(get(rule, "RuleCondition")))
	assertions := get(rule, "Assertions")
	require.NotNil(t, assertions)
	require.Len(t, assertions.Content, 1)
	assert.Equal(t, []string{"!Equals", "!Ref", "WriterRegion", "!Ref", "AWS::Region"}, flat(get(assertions.Content[0], "Assert")))
}

func TestSweepModeIndexGivesTheKeyTableTheExpiryIndexAndTheSweeperItsMode(t *testing.T) {
	tpl, err := Load()
	require.NoError(t, err)
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
		granted, err := tpl.ActionsFor("SweeperFunction", p)
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
	tpl, err := Load()
	require.NoError(t, err)
	groups := tpl.Section("Metadata", "AWS::CloudFormation::Interface", "ParameterGroups")
	require.NotNil(t, groups)
	grouped := map[string]int{}
	for _, g := range groups.Content {
		for _, name := range scalars(get(g, "Parameters")) {
			grouped[name]++
		}
	}
	params := tpl.Section("Parameters")
	require.NotNil(t, params)
	for i := 0; i < len(params.Content); i += 2 {
		name := params.Content[i].Value
		assert.Equal(t, 1, grouped[name], "parameter %s in exactly one group", name)
	}
	dashboards := tpl.Resources("AWS::CloudWatch::Dashboard")
	require.Len(t, dashboards, 1)
	body := tpl.Path(dashboards[0], "Properties", "DashboardBody")
	require.NotNil(t, body)
	for _, alarm := range tpl.Resources("AWS::CloudWatch::Alarm") {
		assert.Contains(t, body.Value, "${"+alarm+".Arn}", "alarm %s on the dashboard", alarm)
	}
}

// Every parameter of template.yaml has a row in the parameter table of
// docs/operations.md (a row may name several parameters).
func TestEveryParameterIsInTheDocsParameterTable(t *testing.T) {
	tpl, err := Load()
	require.NoError(t, err)
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
	params := tpl.Section("Parameters")
	require.NotNil(t, params)
	require.NotEmpty(t, params.Content)
	for i := 0; i < len(params.Content); i += 2 {
		name := params.Content[i].Value
		assert.True(t, rows[name], "the parameter table of docs/operations.md has no row for %s", name)
	}
}
