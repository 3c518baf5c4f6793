package deploytest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
)

// underEmulator serves a function of the stack (its built bootstrap) under
// the Runtime Interface Emulator, with the environment and timeout Lambda
// holds for it (or timeout, when not 0), pointed at the stack's tables on
// moto; extra variables are added (or override).
func underEmulator(t *testing.T, s *Stack, function string, extra map[string]string, timeout time.Duration) *Function {
	t.Helper()
	ctx := context.Background()
	if os.Getenv(RIEEnv) == "" {
		t.Skipf("emulator test: %s is not set (.ci/run builds aws-lambda-rie and runs this test)", RIEEnv)
	}
	cfg, err := lambda.NewFromConfig(s.Config).GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(s.Resources[function])})
	require.NoError(t, err)
	env, err := s.Environment(ctx, function)
	require.NoError(t, err)
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_DYNAMODB": aws.ToString(s.Config.BaseEndpoint), "AWS_REGION": Region,
		"AWS_ACCESS_KEY_ID": "moto", "AWS_SECRET_ACCESS_KEY": "moto", "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_LAMBDA_FUNCTION_NAME": s.Resources[function],
	} {
		env[k] = v
	}
	for k, v := range extra {
		env[k] = v
	}
	code := map[string]string{"PaymentsFunction": "payments", "SweeperFunction": "sweeper"}[function]
	bootstrap := filepath.Join(os.Getenv(DistEnv), code, "bootstrap")
	if timeout == 0 {
		timeout = time.Duration(aws.ToInt32(cfg.Timeout)) * time.Second
	}
	return RunForTest(t, bootstrap, env, timeout)
}

// sampleEvent reads one of aws-lambda-go's sample events (events/testdata
// in its module) and makes it a request for method and path with the
// headers and body given, the rest as the sample has it.
func sampleEvent(t *testing.T, name, method, path, body string, headers map[string]string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	var ev events.APIGatewayV2HTTPRequest
	readSample(t, name, &ev)
	ev.RouteKey, ev.RawPath, ev.RawQueryString, ev.Body, ev.IsBase64Encoded = method+" "+path, path, "", body, false
	ev.RequestContext.RouteKey, ev.RequestContext.HTTP.Method, ev.RequestContext.HTTP.Path = ev.RouteKey, method, path
	if ev.Headers == nil {
		ev.Headers = map[string]string{}
	}
	delete(ev.Headers, "content-length")
	for k, v := range headers {
		ev.Headers[k] = v
	}
	return ev
}

// invoke sends an API Gateway event to f and decodes its answer as Resp;
// an answer that is a function error fails the test.
func invoke[Resp any](t *testing.T, f *Function, ev any) Resp {
	t.Helper()
	out, err := f.Invoke(context.Background(), ev)
	require.NoError(t, err)
	require.NotContains(t, string(out), `"errorType"`, "the function failed: %s", out)
	var resp Resp
	require.NoError(t, json.Unmarshal(out, &resp), string(out))
	return resp
}

func invokeHTTP(t *testing.T, f *Function, ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	t.Helper()
	return invoke[events.APIGatewayV2HTTPResponse](t, f, ev)
}

// readSample decodes one of aws-lambda-go's sample events (events/testdata
// in its module) into ev, as it is.
func readSample(t *testing.T, name string, ev any) {
	t.Helper()
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/aws/aws-lambda-go").Output()
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(dir)), "events", "testdata", name))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, ev))
}

// restSampleEvent is sampleEvent for aws-lambda-go's REST API sample
// (payload format 1.0), whose authorizer names the principal "admin";
// without authorizer, the sample's authorizer and identity are left out.
func restSampleEvent(t *testing.T, authorizer bool, body string, headers map[string]string) events.APIGatewayProxyRequest {
	t.Helper()
	var ev events.APIGatewayProxyRequest
	readSample(t, "apigw-request.json", &ev)
	ev.Resource, ev.Path, ev.HTTPMethod, ev.Body, ev.IsBase64Encoded = "/payments", "/payments", "POST", body, false
	ev.RequestContext.ResourcePath, ev.RequestContext.Path, ev.RequestContext.HTTPMethod = "/payments", "/payments", "POST"
	ev.QueryStringParameters, ev.MultiValueQueryStringParameters, ev.PathParameters = nil, nil, nil
	if !authorizer {
		ev.RequestContext.Authorizer = nil
		ev.RequestContext.Identity = events.APIGatewayRequestIdentity{SourceIP: ev.RequestContext.Identity.SourceIP, UserAgent: ev.RequestContext.Identity.UserAgent}
	}
	ev.Headers, ev.MultiValueHeaders = map[string]string{}, nil
	for k, v := range headers {
		ev.Headers[k] = v
	}
	return ev
}

func invokeREST(t *testing.T, f *Function, ev events.APIGatewayProxyRequest) events.APIGatewayProxyResponse {
	t.Helper()
	return invoke[events.APIGatewayProxyResponse](t, f, ev)
}

// The same bootstrap behind a REST API (PAYLOAD_FORMAT=1.0), on
// aws-lambda-go's REST sample: without an authorizer the bearer token is
// the caller, executed once and its retry replayed; behind the sample's
// authorizer the caller is its principal, so another token of that
// principal is the same caller's retry.
func TestPaymentsBootstrapUnderTheEmulatorBehindARESTAPI(t *testing.T) {
	s := ForTest(t, nil)
	f := underEmulator(t, s, "PaymentsFunction", map[string]string{"PAYLOAD_FORMAT": "1.0"}, 0)
	paymentsBefore := items(t, s, "PaymentsTable")
	headers := map[string]string{"Idempotency-Key": `"rie-rest"`, "Content-Type": "application/json", "Authorization": "Bearer rest-caller-1"}
	first := invokeREST(t, f, restSampleEvent(t, false, paymentBody, headers))
	require.Equal(t, 201, first.StatusCode, first.Body)
	retry := invokeREST(t, f, restSampleEvent(t, false, paymentBody, headers))
	assert.Equal(t, 201, retry.StatusCode)
	assert.Equal(t, []string{"true"}, retry.MultiValueHeaders["Idempotent-Replayed"], "the REST door answers multi-value headers")
	assert.JSONEq(t, first.Body, retry.Body)

	headers["Idempotency-Key"] = `"rie-rest-authorizer"`
	admin := invokeREST(t, f, restSampleEvent(t, true, paymentBody, headers))
	require.Equal(t, 201, admin.StatusCode, admin.Body)
	headers["Authorization"] = "Bearer another-token-of-admin"
	again := invokeREST(t, f, restSampleEvent(t, true, paymentBody, headers))
	assert.Equal(t, []string{"true"}, again.MultiValueHeaders["Idempotent-Replayed"], "the authorizer's principal is the caller, not the token")
	assert.JSONEq(t, admin.Body, again.Body)
	assert.Equal(t, paymentsBefore+2, items(t, s, "PaymentsTable"), "two payments: one per key")
}

// items counts a table's items (a consistent scan).
func items(t *testing.T, s *Stack, table string) int {
	t.Helper()
	out, err := dynamodb.NewFromConfig(s.Config).Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(s.Resources[table]), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	return len(out.Items)
}

const paymentBody = `{"amount":1250,"currency":"EUR"}`

// The built payments bootstrap, under AWS's emulator with the stack's
// environment, executes a POST of aws-lambda-go's HTTP API sample event
// once against the stack's tables and replays its retry.
func TestPaymentsBootstrapUnderTheEmulatorExecutesOnceAndReplaysTheRetry(t *testing.T) {
	s := ForTest(t, nil)
	f := underEmulator(t, s, "PaymentsFunction", nil, 0)
	keysBefore, paymentsBefore := items(t, s, "KeyTable"), items(t, s, "PaymentsTable")
	headers := map[string]string{"idempotency-key": `"rie-no-authorizer"`, "content-type": "application/json", "authorization": "Bearer rie-caller-1"}
	first := invokeHTTP(t, f, sampleEvent(t, "apigw-v2-request-no-authorizer.json", "POST", "/payments", paymentBody, headers))
	require.Equal(t, 201, first.StatusCode, first.Body)
	retry := invokeHTTP(t, f, sampleEvent(t, "apigw-v2-request-no-authorizer.json", "POST", "/payments", paymentBody, headers))
	assert.Equal(t, 201, retry.StatusCode)
	assert.Equal(t, "true", retry.Headers["Idempotent-Replayed"])
	assert.JSONEq(t, first.Body, retry.Body)
	assert.Equal(t, paymentsBefore+1, items(t, s, "PaymentsTable"), "one payment")
	assert.Equal(t, keysBefore+1, items(t, s, "KeyTable"), "one key record")
}

// Behind the JWT authorizer: aws-lambda-go's sample carries no subject
// claim, so the function refuses it (401) rather than let the client's
// own Authorization header choose its caller; with the issuer and subject
// claims API Gateway verified, the caller is the subject.
func TestPaymentsBootstrapUnderTheEmulatorBehindTheJWTAuthorizer(t *testing.T) {
	s := ForTest(t, nil)
	f := underEmulator(t, s, "PaymentsFunction", nil, 0)
	headers := map[string]string{"idempotency-key": `"rie-jwt"`, "content-type": "application/json", "authorization": "Bearer token-1"}
	as := invokeHTTP(t, f, sampleEvent(t, "apigw-v2-request-jwt-authorizer.json", "POST", "/payments", paymentBody, headers))
	assert.Equal(t, 401, as.StatusCode, "the sample's claims name no subject: %s", as.Body)

	withSubject := func(token string) events.APIGatewayV2HTTPRequest {
		headers["authorization"] = "Bearer " + token
		ev := sampleEvent(t, "apigw-v2-request-jwt-authorizer.json", "POST", "/payments", paymentBody, headers)
		ev.RequestContext.Authorizer.JWT.Claims["iss"] = "https://issuer.example"
		ev.RequestContext.Authorizer.JWT.Claims["sub"] = "rie-user-1"
		return ev
	}
	first := invokeHTTP(t, f, withSubject("token-1"))
	require.Equal(t, 201, first.StatusCode, first.Body)
	refreshed := invokeHTTP(t, f, withSubject("token-2"))
	assert.Equal(t, "true", refreshed.Headers["Idempotent-Replayed"], "a refreshed token is the same subject's retry")
}

// The sweeper bootstrap, under the emulator with the stack's environment,
// sweeps the stack's key table on a scheduled event: a finished pass with
// no errors that read every record of the table.
func TestSweeperBootstrapUnderTheEmulatorSweepsOnAScheduledEvent(t *testing.T) {
	s := ForTest(t, nil)
	pay := underEmulator(t, s, "PaymentsFunction", nil, 0)
	headers := map[string]string{"idempotency-key": `"rie-sweep"`, "content-type": "application/json", "authorization": "Bearer rie-caller-sweep"}
	require.Equal(t, 201, invokeHTTP(t, pay, sampleEvent(t, "apigw-v2-request-no-authorizer.json", "POST", "/payments", paymentBody, headers)).StatusCode)

	f := underEmulator(t, s, "SweeperFunction", nil, 0)
	records := items(t, s, "KeyTable")
	ev := events.EventBridgeEvent{Version: "0", ID: "rie-scheduled", DetailType: "Scheduled Event", Source: "aws.events",
		AccountID: "123456789012", Time: time.Now().UTC(), Region: Region, Resources: []string{"arn:aws:events:us-east-1:123456789012:rule/sweeper"},
		Detail: json.RawMessage(`{}`)}
	out, err := f.Invoke(context.Background(), ev)
	require.NoError(t, err)
	var r dynamostore.SweepReport
	require.NoError(t, json.Unmarshal(out, &r), string(out))
	assert.True(t, r.Finished, string(out))
	assert.Zero(t, r.Errors, string(out))
	assert.Equal(t, int64(records), r.Scanned, "the pass read every record")
	assert.Contains(t, f.Log(), `"EventId":"rie-scheduled"`, "the EMF line")
}

// An invocation whose execution environment is frozen (SIGSTOP) before
// its deadline cannot release its key; the emulator ends it at the
// deadline, and its key stays in flight (409) until the lease, the invocation's remaining
// time plus 5 s, runs out, and the next invocation then executes it once.
func TestPaymentsInvocationStoppedAtItsDeadlineFreesTheKeyWhenTheLeaseEnds(t *testing.T) {
	s := ForTest(t, nil)
	const timeout = 3 * time.Second
	frozen := underEmulator(t, s, "PaymentsFunction", map[string]string{"LATENCY": "1m"}, timeout)
	next := underEmulator(t, s, "PaymentsFunction", nil, 0)
	headers := map[string]string{"idempotency-key": `"rie-frozen"`, "content-type": "application/json", "authorization": "Bearer rie-caller-frozen"}
	ev := sampleEvent(t, "apigw-v2-request-no-authorizer.json", "POST", "/payments", paymentBody, headers)
	paymentsBefore := items(t, s, "PaymentsTable")
	// The environment's first invocation starts the bootstrap.
	warm := invokeHTTP(t, frozen, sampleEvent(t, "apigw-v2-request-no-authorizer.json", "GET", "/payments", "", headers))
	require.Equal(t, 200, warm.StatusCode, warm.Body)
	start := time.Now()
	go func() {
		time.Sleep(timeout / 2) // claimed, in the processor's latency
		assert.NoError(t, frozen.Freeze())
	}()
	out, err := frozen.Invoke(context.Background(), ev)
	require.NoError(t, err)
	assert.Contains(t, string(out), "timed out", "the emulator stopped the invocation at its deadline: %s", out)

	early := invokeHTTP(t, next, ev)
	if time.Since(start) >= timeout+5*time.Second {
		t.Fatalf("the second invocation came %v after the first, past the lease: cannot observe the 409", time.Since(start))
	}
	assert.Equal(t, 409, early.StatusCode, "within the lease the key is in flight: %s", early.Body)
	var final events.APIGatewayV2HTTPResponse
	require.Eventually(t, func() bool {
		final = invokeHTTP(t, next, ev)
		return final.StatusCode != 409
	}, 30*time.Second, 250*time.Millisecond)
	assert.Equal(t, 201, final.StatusCode, final.Body)
	assert.Empty(t, final.Headers["Idempotent-Replayed"], "the stopped invocation committed nothing")
	assert.Equal(t, paymentsBefore+1, items(t, s, "PaymentsTable"), "exactly one payment")
}
