package deploytest

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	idemlambda "github.com/idemkey/idemkey/lambda"
)

// emittedMetrics returns the names of the metrics idemlambda.Metrics
// writes, every phase included.
func emittedMetrics(t *testing.T) []string {
	t.Helper()
	var line bytes.Buffer
	idemlambda.NewMetrics(&line, func(o *idemlambda.MetricsOptions) { o.FunctionName = "f" }).
		Observe(context.Background(), idemkey.Event{Phases: idemkey.PhaseClaim | idemkey.PhaseRun | idemkey.PhaseCommit})
	var doc struct {
		AWS struct {
			CloudWatchMetrics []struct {
				Namespace string
				Metrics   []struct{ Name string }
			}
		} `json:"_aws"`
	}
	require.NoError(t, json.Unmarshal(line.Bytes(), &doc))
	var names []string
	for _, m := range doc.AWS.CloudWatchMetrics[0].Metrics {
		names = append(names, m.Name)
	}
	assert.Equal(t, idemlambda.MetricsNamespace, doc.AWS.CloudWatchMetrics[0].Namespace)
	return names
}

// sweeperMetrics are the sweeper's metric names (cmd/sweeper).
var sweeperMetrics = []string{"EvictionLagSeconds", "OldestLiveKeyAgeSeconds"}

func TestDashboardShowsOutcomesCommitLatencyAndSweeperLag(t *testing.T) {
	tpl := load(t)
	require.Equal(t, "AWS::CloudWatch::Dashboard", tpl.Type("Dashboard"))
	body, _ := tpl.At("Resources", "Dashboard", "Properties", "DashboardBody", "Fn::Sub").(string)
	// The !Sub references become strings, so that the body parses as JSON.
	body = regexp.MustCompile(`\$\{([A-Za-z0-9:.]+)\}`).ReplaceAllString(body, "<$1>")
	var dash struct {
		Widgets []struct {
			Type       string
			Properties struct {
				Title   string
				Stat    string
				Metrics [][]string
				Alarms  []string
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(body), &dash), body)

	emitted := emittedMetrics(t)
	stats := map[string]string{} // metric -> stat
	var alarms []string
	for _, w := range dash.Widgets {
		alarms = append(alarms, w.Properties.Alarms...)
		ns, dim, value := "", "", ""
		for _, m := range w.Properties.Metrics {
			require.Len(t, m, 4, "%s: namespace, name, one dimension", w.Properties.Title)
			if m[0] != "." {
				ns, dim, value = m[0], m[2], m[3]
			}
			assert.Equal(t, "idemkey", ns)
			name := m[1]
			stats[name] = w.Properties.Stat
			switch {
			case slices.Contains(sweeperMetrics, name):
				assert.Equal(t, []string{"TableName", "<KeyTable>"}, []string{dim, value}, name)
			default:
				assert.Contains(t, emitted, name, "the dashboard reads a metric idemlambda.Metrics writes")
				assert.Equal(t, []string{"FunctionName", "<PaymentsFunction>"}, []string{dim, value}, name)
			}
		}
	}
	for _, name := range []string{"Replay", "InFlight", "Mismatch", "LockLost", "Unavailable", "EvictionLagSeconds"} {
		assert.Contains(t, stats, name)
	}
	assert.Equal(t, "p99", stats["CommitDuration"], "commit latency p99")
	assert.ElementsMatch(t, []string{"<LockLostRateAlarm.Arn>", "<UnavailableRateAlarm.Arn>", "<PermanentFaultAlarm.Arn>", "<EvictionLagAlarm.Arn>", "<SweeperErrorsAlarm.Arn>", "<SweeperFunctionErrorsAlarm.Arn>"}, alarms)
}

func TestLockLostAndUnavailableAlarmOnTheirShareOfRequests(t *testing.T) {
	tpl := load(t)
	emitted := emittedMetrics(t)
	for alarm, metric := range map[string]string{"LockLostRateAlarm": "LockLost", "UnavailableRateAlarm": "Unavailable"} {
		props := resolve(t, tpl, nil, alarm, "Properties").(map[string]any)
		assert.Equal(t, "1", props["Threshold"], "%s: 1 percent by default", alarm)
		assert.Equal(t, "5", resolve(t, tpl, Params{"RequestFaultAlarmPercent": "5"}, alarm, "Properties", "Threshold"))
		assert.Equal(t, "GreaterThanThreshold", props["ComparisonOperator"], alarm)
		assert.Equal(t, "notBreaching", props["TreatMissingData"], "no requests, no alarm")
		read := map[string]string{}
		var expression string
		for _, m := range props["Metrics"].([]any) {
			m := m.(map[string]any)
			if e, ok := m["Expression"]; ok {
				expression = e.(string)
				assert.Equal(t, "true", m["ReturnData"])
				continue
			}
			stat := m["MetricStat"].(map[string]any)
			metric := stat["Metric"].(map[string]any)
			assert.Equal(t, idemlambda.MetricsNamespace, metric["Namespace"])
			assert.Equal(t, []any{map[string]any{"Name": "FunctionName", "Value": "<Ref PaymentsFunction>"}}, metric["Dimensions"])
			assert.Equal(t, "Sum", stat["Stat"])
			assert.Contains(t, emitted, metric["MetricName"])
			read[m["Id"].(string)] = metric["MetricName"].(string)
		}
		assert.Equal(t, map[string]string{"faults": metric, "requests": "Requests"}, read, alarm)
		assert.Equal(t, "IF(requests > 0, 100 * faults / requests, 0)", expression)
	}
	require.NoError(t, tpl.Check(Params{"RequestFaultAlarmPercent": "5"}))
	assert.Error(t, tpl.Check(Params{"RequestFaultAlarmPercent": "101"}))
}

// Static: moto cannot build alarms. One request answered with the
// Permanent outcome (a metric the function emits) in a minute alarms.
func TestPermanentOutcomeAlarmsOnTheFirstOne(t *testing.T) {
	tpl := load(t)
	props := resolve(t, tpl, nil, "PermanentFaultAlarm", "Properties").(map[string]any)
	assert.Contains(t, emittedMetrics(t), props["MetricName"])
	assert.Equal(t, "Permanent", props["MetricName"])
	assert.Equal(t, idemlambda.MetricsNamespace, props["Namespace"])
	assert.Equal(t, []any{map[string]any{"Name": "FunctionName", "Value": "<Ref PaymentsFunction>"}}, props["Dimensions"])
	for k, v := range map[string]string{"Statistic": "Sum", "Period": "60", "EvaluationPeriods": "1", "Threshold": "0",
		"ComparisonOperator": "GreaterThanThreshold", "TreatMissingData": "notBreaching"} {
		assert.Equal(t, v, props[k], k)
	}
}

// The template's informational checks pass too (the CI runs cfn-lint
// with the same flag).
func TestTemplatePassesCfnLintIncludingInformationalChecks(t *testing.T) {
	lint, err := exec.LookPath("cfn-lint")
	if err != nil {
		t.Skip("cfn-lint is not installed")
	}
	out, err := exec.Command(lint, "../../template.yaml", "--include-checks", "I").CombinedOutput()
	assert.NoError(t, err, "%s", out)
}
