package main

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/deploytest"
)

// TestTemplateGrantsExactlyTheCallsTheSweeperMakes runs two invocations
// (one stopped by its deadline, which saves the cursor, and one that
// resumes and finishes, which loads and deletes it), records the IAM
// actions of every call, and compares them with the SweeperFunction
// role's policy as IAM holds it in template.yaml's stack on moto.
func TestTemplateGrantsExactlyTheCallsTheSweeperMakes(t *testing.T) {
	stack := deploytest.ForTest(t, nil)
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

	granted, err := stack.Grants(context.Background(), "SweeperFunction")
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
		if first := p["Dimensions"].([]any)[0].(map[string]any); first["Name"] == "FunctionName" {
			continue // the guarded function's metrics (PermanentFaultAlarm)
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

// TestTheStacksEnvironmentIsOneTheSweeperStartsWith reads the
// SweeperFunction's environment as Lambda holds it in template.yaml's
// stack on moto, with and without WriterRegion and in both sweep modes,
// and reads it as main does: every variable the stack sets is one the
// function reads, and none makes it refuse to start.
func TestTheStacksEnvironmentIsOneTheSweeperStartsWith(t *testing.T) {
	for _, p := range []map[string]string{nil, {"WriterRegion": "us-east-1"}, {"SweepMode": "index"}} {
		stack := deploytest.ForTest(t, p)
		env, err := stack.Environment(context.Background(), "SweeperFunction")
		require.NoError(t, err)
		env["AWS_REGION"] = stack.Config.Region // Lambda's own
		vars := deploytest.NewEnv(env)
		cfg, err := configFromEnv(vars.Getenv)
		require.NoError(t, err, "%v: %v", p, env)
		assert.Empty(t, vars.Unread(), "variables the stack sets and the sweeper does not read")
		assert.Equal(t, stack.Resources["KeyTable"], cfg.Table)
		assert.Equal(t, p["WriterRegion"], cfg.Region)
		wantMode := dynamostore.SweepScan
		if p["SweepMode"] == "index" {
			wantMode = dynamostore.SweepIndex
		}
		assert.Equal(t, wantMode, cfg.Mode, "%v", p)
	}
}

// cursorWrites records the partition keys of the items the sweeper puts
// and whether every Query names an index.
type cursorWrites struct {
	dynamostore.SweepClient
	puts         []string
	baseQueries  int
	indexQueries int
}

func (c *cursorWrites) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if aws.ToString(in.IndexName) == "" {
		c.baseQueries++
	} else {
		c.indexQueries++
	}
	return c.SweepClient.Query(ctx, in, o...)
}

func (c *cursorWrites) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if v, ok := in.Item["pk"].(*types.AttributeValueMemberS); ok {
		c.puts = append(c.puts, v.Value)
	}
	return c.SweepClient.PutItem(ctx, in, o...)
}

// The sweeper puts only its resume cursor and queries only the expiry
// index, so the template grants PutItem only under the cursor's partition
// keys (dynamodb:LeadingKeys) and Query only on the index: its role cannot
// write a key record (a forged completed response) nor read the table
// through Query.
func TestTemplateGrantsPutItemOnTheCursorAndQueryOnTheIndexOnly(t *testing.T) {
	for _, region := range []string{"", "eu-west-1"} {
		fx := newFixture(t)
		require.NoError(t, dynamostore.EnsureExpiryIndex(context.Background(), fx.ep.Client, fx.table, dynamostore.KeySchema{}, 0))
		fx.indexed = true
		fx.seed(t)
		rc := &cursorWrites{SweepClient: &slowQueries{SweepClient: fx.ep.Client, clock: fx.clock, step: 10 * time.Second}}
		f := fx.function(rc, settings{Mode: dynamostore.SweepIndex, Segments: 1, PageSize: 5, Margin: 5 * time.Second, Region: region})
		for range 2 { // one stopped by its deadline (the cursor is put), one that resumes
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			_, err := f.handle(ctx, event(t))
			cancel()
			require.NoError(t, err)
		}
		require.NotEmpty(t, rc.puts, "the cursor was saved")
		assert.Positive(t, rc.indexQueries)
		assert.Zero(t, rc.baseQueries, "every Query names the index")

		stack := deploytest.ForTest(t, map[string]string{"SweepMode": "index"})
		stmts, _, err := stack.Policy(context.Background(), "SweeperFunction")
		require.NoError(t, err)
		tableARN, err := stack.TableARN(context.Background(), "KeyTable")
		require.NoError(t, err)
		var leading []any
		for _, s := range stmts {
			if slices.Contains(s.Actions, "dynamodb:Query") {
				assert.Equal(t, []string{tableARN + "/index/idemkey-expiry"}, s.Resources, "Query on the index only")
			}
			if slices.Contains(s.Actions, "dynamodb:PutItem") {
				assert.Equal(t, []string{"dynamodb:PutItem"}, s.Actions)
				like, _ := s.Condition["ForAllValues:StringLike"].(map[string]any)
				leading, _ = like["dynamodb:LeadingKeys"].([]any)
			}
		}
		require.NotEmpty(t, leading, "PutItem is conditioned on dynamodb:LeadingKeys")
		for _, pk := range rc.puts {
			assert.True(t, slices.ContainsFunc(leading, func(p any) bool { return stringLike(p.(string), pk) }),
				"the cursor key %q is one the grant allows (%v)", pk, leading)
		}
		assert.False(t, slices.ContainsFunc(leading, func(p any) bool { return stringLike(p.(string), "tenant-a:order-1") }),
			"no key record's partition key is allowed")
	}
}

// stringLike matches s against an IAM StringLike pattern: * stands for
// any run of characters, ? for one.
func stringLike(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if stringLike(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && stringLike(pattern[1:], s[1:])
	}
	return s != "" && s[0] == pattern[0] && stringLike(pattern[1:], s[1:])
}
