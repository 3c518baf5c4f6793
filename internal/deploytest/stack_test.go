package deploytest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func load(t *testing.T) Template {
	t.Helper()
	tpl, err := Load()
	require.NoError(t, err)
	return tpl
}

// resolve is Property that fails the test on an error.
func resolve(t *testing.T, tpl Template, p Params, resource string, keys ...string) any {
	t.Helper()
	v, err := tpl.Property(p, resource, keys...)
	require.NoError(t, err, "%s %v", resource, keys)
	return v
}

// env is Environment that fails the test on an error.
func env(t *testing.T, tpl Template, p Params, function string) map[string]string {
	t.Helper()
	e, err := tpl.Environment(p, function)
	require.NoError(t, err)
	return e
}

// Static: moto's CloudFormation does not replace a table on update
// (deleting the stack, which keeps both tables, is tested on moto in
// moto_stack_test.go).
func TestTablesOutliveAnUpdateThatReplacesThem(t *testing.T) {
	tpl := load(t)
	tables := tpl.Resources("AWS::DynamoDB::Table")
	require.ElementsMatch(t, []string{"KeyTable", "PaymentsTable"}, tables)
	for _, table := range tables {
		assert.Equal(t, "Retain", tpl.At("Resources", table, "UpdateReplacePolicy"), table)
	}
}

func TestTableNamesAreParametersAndCloudFormationNamesTheTablesWhenTheyAreEmpty(t *testing.T) {
	tpl := load(t)
	for table, param := range map[string]string{"KeyTable": "KeyTableName", "PaymentsTable": "PaymentsTableName"} {
		assert.Equal(t, NoValue, resolve(t, tpl, nil, table, "Properties", "TableName"), "%s: unnamed by default", table)
		assert.Equal(t, "idemkey-keys", resolve(t, tpl, Params{param: "idemkey-keys"}, table, "Properties", "TableName"))
		for _, bad := range []string{"ab", "with space", "slash/no", strings.Repeat("x", 256)} {
			assert.Error(t, tpl.Check(Params{param: bad}), "%s=%q", param, bad)
		}
		assert.NoError(t, tpl.Check(Params{param: "my_keys.v-2"}))
	}
	// The functions get the tables' names whatever they are.
	assert.Equal(t, "<Ref KeyTable>", env(t, tpl, nil, "PaymentsFunction")["KEY_TABLE"])
	assert.Equal(t, "<Ref PaymentsTable>", env(t, tpl, nil, "PaymentsFunction")["PAYMENT_TABLE"])
	assert.Equal(t, "<Ref KeyTable>", env(t, tpl, nil, "SweeperFunction")["KEY_TABLE"])
}

// buildScriptArchitectures reads the architectures scripts/build-lambda.sh
// accepts, from the assignments of its case statement.
func buildScriptArchitectures(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "scripts", "build-lambda.sh"))
	require.NoError(t, err)
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^\S[^)]*\) architecture=(\S+) goarch=`).FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
	}
	return out
}

func TestArchitectureParameterOffersWhatTheBuildScriptBuilds(t *testing.T) {
	tpl := load(t)
	param := tpl.At("Parameters", "Architecture").(map[string]any)
	assert.Equal(t, "arm64", param["Default"])
	assert.Equal(t, buildScriptArchitectures(t), strs(param["AllowedValues"]))
	assert.Error(t, tpl.Check(Params{"Architecture": "amd64"}), "Lambda's name is x86_64")

	arch, err := tpl.Resolve(tpl.At("Globals", "Function", "Architectures"), Params{"Architecture": "x86_64"})
	require.NoError(t, err)
	assert.Equal(t, []any{"x86_64"}, arch)
	for _, fn := range tpl.Resources("AWS::Serverless::Function") {
		assert.Nil(t, tpl.At("Resources", fn, "Properties", "Architectures"), "%s takes the Globals' architecture", fn)
	}

	// The script refuses any other, before it builds anything.
	cmd := exec.Command("bash", filepath.Join("..", "..", "scripts", "build-lambda.sh"), "ppc64le")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v: %s", err, out)
	assert.Equal(t, 2, exit.ExitCode())
	assert.Contains(t, string(out), "want arm64 or x86_64")
}

func TestLeaseIsZeroOrOutlivesTheFunctionAndNeverTheRetention(t *testing.T) {
	tpl := load(t)
	timeout, err := strconv.Atoi(fmt.Sprint(tpl.At("Resources", "PaymentsFunction", "Properties", "Timeout")))
	require.NoError(t, err)
	minRetention, err := strconv.Atoi(fmt.Sprint(tpl.At("Parameters", "RetentionHours", "MinValue")))
	require.NoError(t, err)
	var allowed []int
	for s := range 5000 {
		if tpl.Allowed("LeaseSeconds", strconv.Itoa(s)) == nil {
			allowed = append(allowed, s)
		}
	}
	require.Greater(t, len(allowed), 2)
	least, greatest := allowed[1], allowed[len(allowed)-1]
	assert.Equal(t, 0, allowed[0], "0: the lease follows the invocation")
	assert.Greater(t, least, timeout, "a fixed lease outlives the longest invocation")
	assert.Equal(t, timeout+1, least, "and any that does is allowed")
	assert.Equal(t, 2+greatest-least, len(allowed), "every value between the least and the greatest")
	assert.Equal(t, minRetention*3600, greatest, "no lease is longer than the shortest retention")
	for _, bad := range []string{"", "-5", "60s", "1e3", "030"} {
		assert.Error(t, tpl.Allowed("LeaseSeconds", bad), "LeaseSeconds=%q", bad)
	}
	assert.Error(t, tpl.Check(Params{"RetentionHours": "0"}))
}

func TestPaymentsFunctionGetsRetentionAndLeaseAsDurations(t *testing.T) {
	tpl := load(t)
	e := env(t, tpl, nil, "PaymentsFunction")
	assert.Equal(t, "24h", e["RETENTION"])
	assert.Equal(t, "", e["LEASE"], "by default the lease follows the invocation")
	e = env(t, tpl, Params{"RetentionHours": "168", "LeaseSeconds": "90"}, "PaymentsFunction")
	assert.Equal(t, "168h", e["RETENTION"])
	assert.Equal(t, "90s", e["LEASE"])
}

func TestEveryAlarmNotifiesTheTopicOnlyWhenOneIsGiven(t *testing.T) {
	tpl := load(t)
	alarms := tpl.Resources("AWS::CloudWatch::Alarm")
	require.ElementsMatch(t, []string{"EvictionLagAlarm", "SweeperErrorsAlarm", "SweeperFunctionErrorsAlarm", "LockLostRateAlarm", "UnavailableRateAlarm", "PermanentFaultAlarm"}, alarms)
	topic := "arn:aws:sns:eu-west-1:123456789012:oncall"
	require.NoError(t, tpl.Check(Params{"AlarmTopicArn": topic}))
	assert.Error(t, tpl.Check(Params{"AlarmTopicArn": "oncall"}))
	for _, alarm := range alarms {
		for _, actions := range []string{"AlarmActions", "OKActions"} {
			assert.Equal(t, NoValue, resolve(t, tpl, nil, alarm, "Properties", actions), "%s %s: nobody by default", alarm, actions)
			assert.Equal(t, []any{topic}, resolve(t, tpl, Params{"AlarmTopicArn": topic}, alarm, "Properties", actions), "%s %s", alarm, actions)
		}
	}
}

func TestSweeperAlarmsOnItsOwnErrorsAndOnLambdasCountOfFailedInvocations(t *testing.T) {
	tpl := load(t)
	props := func(alarm string) map[string]any {
		return resolve(t, tpl, nil, alarm, "Properties").(map[string]any)
	}
	own := props("SweeperErrorsAlarm")
	assert.Equal(t, "idemkey", own["Namespace"])
	assert.Equal(t, "Errors", own["MetricName"])
	assert.Equal(t, []any{map[string]any{"Name": "TableName", "Value": "<Ref KeyTable>"}}, own["Dimensions"])
	lambda := props("SweeperFunctionErrorsAlarm")
	assert.Equal(t, "AWS/Lambda", lambda["Namespace"])
	assert.Equal(t, "Errors", lambda["MetricName"])
	assert.Equal(t, []any{map[string]any{"Name": "FunctionName", "Value": "<Ref SweeperFunction>"}}, lambda["Dimensions"])
	for _, p := range []map[string]any{own, lambda} {
		assert.Equal(t, "Sum", p["Statistic"])
		assert.Equal(t, "0", p["Threshold"])
		assert.Equal(t, "GreaterThanThreshold", p["ComparisonOperator"])
		assert.Equal(t, "notBreaching", p["TreatMissingData"], "silence is the eviction-lag alarm's")
	}
	assert.Equal(t, "breaching", props("EvictionLagAlarm")["TreatMissingData"])
}

func TestEachFunctionLogsToAGroupOfItsOwnWithTheRetentionParameter(t *testing.T) {
	tpl := load(t)
	seen := map[string]string{}
	for _, fn := range tpl.Resources("AWS::Serverless::Function") {
		ref, _ := tpl.At("Resources", fn, "Properties", "LoggingConfig", "LogGroup").(map[string]any)
		group, ok := ref["Ref"].(string)
		require.True(t, ok, "%s: LoggingConfig.LogGroup is a !Ref", fn)
		assert.Equal(t, "AWS::Logs::LogGroup", tpl.Type(group), fn)
		assert.Empty(t, seen[group], "%s shares %s with %s", fn, group, seen[group])
		seen[group] = fn
		assert.Equal(t, "14", resolve(t, tpl, Params{"LogRetentionDays": "14"}, group, "Properties", "RetentionInDays"))
		name := resolve(t, tpl, Params{"AWS::StackName": "pay"}, group, "Properties", "LogGroupName")
		assert.Regexp(t, `^/aws/lambda/pay-`, name)
	}
	require.Len(t, seen, 2)
	assert.Len(t, tpl.Resources("AWS::Logs::LogGroup"), 2, "no group without a function")
	assert.NoError(t, tpl.Check(nil))
	assert.Equal(t, "30", tpl.At("Parameters", "LogRetentionDays", "Default"))
	assert.Error(t, tpl.Check(Params{"LogRetentionDays": "31"}), "CloudWatch Logs' retentions only")
}

// routes are the HTTP API's routes by route key.
func routes(t *testing.T, tpl Template, p Params) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, r := range tpl.Resources("AWS::ApiGatewayV2::Route") {
		props := resolve(t, tpl, p, r, "Properties").(map[string]any)
		out[props["RouteKey"].(string)] = props
	}
	return out
}

func TestJWTAuthorizerGuardsEveryRouteOnlyWhenAnIssuerIsSet(t *testing.T) {
	tpl := load(t)
	jwt := Params{"JwtIssuer": "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc", "JwtAudience": "client1,client2"}
	require.NoError(t, tpl.Check(jwt))

	assert.Equal(t, NoValue, resolve(t, tpl, nil, "JwtAuthorizer"), "no authorizer by default")
	for key, r := range routes(t, tpl, nil) {
		assert.Equal(t, "NONE", r["AuthorizationType"], key)
		assert.NotContains(t, r, "AuthorizerId", key)
	}

	authorizer := resolve(t, tpl, jwt, "JwtAuthorizer", "Properties").(map[string]any)
	assert.Equal(t, "JWT", authorizer["AuthorizerType"])
	assert.Equal(t, []any{"$request.header.Authorization"}, authorizer["IdentitySource"])
	assert.Equal(t, map[string]any{"Issuer": jwt["JwtIssuer"], "Audience": []string{"client1", "client2"}}, authorizer["JwtConfiguration"])
	guarded := routes(t, tpl, jwt)
	assert.Len(t, guarded, 3)
	for key, r := range guarded {
		assert.Equal(t, "JWT", r["AuthorizationType"], key)
		assert.Equal(t, "<Ref JwtAuthorizer>", r["AuthorizerId"], key)
	}
}

func TestJWTIssuerAndAudienceAreSetTogether(t *testing.T) {
	tpl := load(t)
	assert.ErrorContains(t, tpl.Check(Params{"JwtIssuer": "https://issuer.example"}), "JwtIssuerAndAudienceTogether")
	assert.ErrorContains(t, tpl.Check(Params{"JwtAudience": "client1"}), "JwtIssuerAndAudienceTogether")
	assert.Error(t, tpl.Check(Params{"JwtIssuer": "http://issuer.example", "JwtAudience": "client1"}), "https only")
	assert.NoError(t, tpl.Check(Params{"JwtIssuer": "https://issuer.example", "JwtAudience": "client1"}))
}

// A route key's path against the invoke permission's source ARN: * matches
// any run of characters, as in IAM.
func TestTheAPIInvokesThePaymentsFunctionOnEveryRoute(t *testing.T) {
	tpl := load(t)
	p := Params{"AWS::Partition": "aws", "AWS::Region": "eu-west-1", "AWS::AccountId": "123456789012"}
	integration := resolve(t, tpl, p, "PaymentsIntegration", "Properties").(map[string]any)
	assert.Equal(t, "AWS_PROXY", integration["IntegrationType"])
	assert.Equal(t, "<GetAtt PaymentsFunction.Arn>", integration["IntegrationUri"])
	assert.Equal(t, "2.0", integration["PayloadFormatVersion"], "the payload the function's front door reads")

	perm := resolve(t, tpl, p, "PaymentsApiInvokePermission", "Properties").(map[string]any)
	assert.Equal(t, "<Ref PaymentsFunction>", perm["FunctionName"])
	assert.Equal(t, "apigateway.amazonaws.com", perm["Principal"])
	source := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(perm["SourceArn"].(string)), `\*`, ".*") + "$")
	all := routes(t, tpl, p)
	assert.ElementsMatch(t, []string{"POST /payments", "GET /payments", "GET /payments/{id}"}, keys(all))
	for key, r := range all {
		assert.Equal(t, "integrations/<Ref PaymentsIntegration>", r["Target"], key)
		method, path, _ := strings.Cut(key, " ")
		arn := "arn:aws:execute-api:eu-west-1:123456789012:<Ref PaymentsApi>/$default/" + method + strings.ReplaceAll(path, "{id}", "pay_1")
		assert.Regexp(t, source, arn, key)
	}
	assert.NotRegexp(t, source, "arn:aws:execute-api:eu-west-1:123456789012:<Ref OtherApi>/$default/GET/payments")
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
