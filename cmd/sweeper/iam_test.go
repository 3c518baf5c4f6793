package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/deploytest"
)

// TestTemplateGrantsExactlyTheCallsTheSweeperMakes runs two invocations
// (one stopped by its deadline, which saves the cursor, and one that
// resumes and finishes, which loads and deletes it), records the IAM
// actions of every call, and compares them with the SweeperFunction policy
// of template.yaml.
func TestTemplateGrantsExactlyTheCallsTheSweeperMakes(t *testing.T) {
	fx := newFixture(t)
	fx.seed(t)
	perms := ddbtest.NewPermissions()
	client := &slowScans{SweepClient: fx.ep.NewClient(perms.Install), clock: fx.clock, step: 30 * time.Second}
	f := fx.function(client, settings{Segments: 1, PageSize: 10, Margin: 5 * time.Second})
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := f.handle(ctx, event(t))
		cancel()
		require.NoError(t, err)
	}

	tpl, err := deploytest.Load()
	require.NoError(t, err)
	granted, err := tpl.Actions("SweeperFunction")
	require.NoError(t, err)
	assert.Equal(t, granted["KeyTable"], perms.Actions(fx.table))
	assert.Len(t, granted, 1, "the sweeper is granted on the key table only")
	assert.Equal(t, []string{fx.table}, perms.Tables())
}

// TestTemplateAlarmsOnMetricsTheSweeperEmits runs one invocation and
// compares the metrics line it writes with the alarms of template.yaml in
// the sweeper's namespace: each alarm's metric is one the line carries,
// under the namespace and with the dimensions the alarm names (a metric
// name or dimension that drifted would leave the alarm watching nothing).
func TestTemplateAlarmsOnMetricsTheSweeperEmits(t *testing.T) {
	fx := newFixture(t)
	fx.seed(t)
	f := fx.function(nil, settings{Segments: 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := f.handle(ctx, event(t))
	require.NoError(t, err)
	docs := fx.lines(t)
	require.Len(t, docs, 1)
	var line struct {
		AWS struct {
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name string }
			}
		} `json:"_aws"`
	}
	raw, err := json.Marshal(docs[0])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &line))
	require.Len(t, line.AWS.CloudWatchMetrics, 1)
	emitted := line.AWS.CloudWatchMetrics[0]
	var names []string
	for _, m := range emitted.Metrics {
		names = append(names, m.Name)
	}

	tpl, err := deploytest.Load()
	require.NoError(t, err)
	watched := map[string]bool{}
	for _, alarm := range tpl.Resources("AWS::CloudWatch::Alarm") {
		props, err := tpl.Property(nil, alarm, "Properties")
		require.NoError(t, err)
		p := props.(map[string]any)
		if p["Namespace"] != Namespace {
			continue
		}
		metric := p["MetricName"].(string)
		watched[metric] = true
		assert.Contains(t, names, metric, alarm)
		var dims []string
		for _, d := range p["Dimensions"].([]any) {
			dim := d.(map[string]any)
			dims = append(dims, dim["Name"].(string))
			assert.Equal(t, "<Ref KeyTable>", dim["Value"], "%s: the key table's name, which the sweeper gets as KEY_TABLE", alarm)
		}
		assert.Equal(t, emitted.Dimensions, [][]string{dims}, alarm)
	}
	assert.Equal(t, fx.table, docs[0]["TableName"], "the line's TableName is KEY_TABLE")
	assert.Equal(t, map[string]bool{"EvictionLagSeconds": true, "Errors": true}, watched, "the lag and the sweeper's own errors")
	env, err := tpl.Environment(nil, "SweeperFunction")
	require.NoError(t, err)
	assert.Equal(t, "<Ref KeyTable>", env["KEY_TABLE"])
}

// TestTheTemplatesEnvironmentIsOneTheSweeperStartsWith resolves the
// SweeperFunction's environment in template.yaml, with and without
// WriterRegion, and reads it as main does: every variable the template
// sets is one the function reads, and none makes it refuse to start.
func TestTheTemplatesEnvironmentIsOneTheSweeperStartsWith(t *testing.T) {
	tpl, err := deploytest.Load()
	require.NoError(t, err)
	for _, p := range []deploytest.Params{
		{"AWS::Region": "eu-west-1"},
		{"AWS::Region": "eu-west-1", "WriterRegion": "eu-west-1"},
	} {
		require.NoError(t, tpl.Check(p), "%v", p)
		env, err := tpl.Environment(p, "SweeperFunction")
		require.NoError(t, err)
		env["AWS_REGION"] = p["AWS::Region"] // Lambda's own
		vars := deploytest.NewEnv(env)
		cfg, err := configFromEnv(vars.Getenv)
		require.NoError(t, err, "%v: %v", p, env)
		assert.Empty(t, vars.Unread(), "variables the template sets and the sweeper does not read")
		assert.Equal(t, "KeyTable", cfg.Table)
		assert.Equal(t, p["WriterRegion"], cfg.Region)
	}
}
