package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/examples/payments/paymentsapi"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/lambda/lambdatest"
	"github.com/idemkey/idemkey/localstack"
)

// e2e runs the real bootstrap binary against a local Lambda Runtime API and
// a DynamoDB endpoint.
type e2e struct {
	t         *testing.T
	bootstrap string
	rt        *lambdatest.Runtime
	ep        *localstack.Endpoint
	cfg       paymentsapi.Config
}

func newE2E(t *testing.T) *e2e {
	t.Helper()
	dir := t.TempDir()
	bootstrap := filepath.Join(dir, "bootstrap")
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bootstrap, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))

	ep := localstack.ForTest(t)
	cfg := paymentsapi.Config{KeyTable: localstack.TableName("keys"), PaymentTable: localstack.TableName("payments")}
	require.NoError(t, paymentsapi.EnsureTables(context.Background(), ep.Client, cfg))
	for _, name := range []string{cfg.KeyTable, cfg.PaymentTable} {
		ddbtest.DeleteOnCleanup(t, ep.Client, name)
	}
	e := &e2e{t: t, bootstrap: bootstrap, ep: ep, cfg: cfg}
	e.rt = e.runtime(30 * time.Second)
	return e
}

// runtime starts a local Lambda Runtime API for a function with the given
// timeout.
func (e *e2e) runtime(timeout time.Duration) *lambdatest.Runtime {
	e.t.Helper()
	rt, err := lambdatest.Start(func(o *lambdatest.Options) { o.FunctionName = "payments"; o.Timeout = timeout })
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = rt.Close() })
	return rt
}

// start runs a fresh execution environment: the bootstrap process, polling
// rt.
func (e *e2e) start(rt *lambdatest.Runtime, extraEnv ...string) *exec.Cmd {
	e.t.Helper()
	cmd := exec.Command(e.bootstrap)
	cmd.Env = append(append(rt.Env(),
		"AWS_ENDPOINT_URL_DYNAMODB="+e.ep.URL,
		"AWS_REGION="+e.ep.Config().Region,
		"AWS_ACCESS_KEY_ID="+localstack.LocalAccessKeyID, "AWS_SECRET_ACCESS_KEY="+localstack.LocalSecretAccessKey,
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE="+filepath.Join(e.t.TempDir(), "none"), "AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(e.t.TempDir(), "none"),
		"KEY_TABLE="+e.cfg.KeyTable, "PAYMENT_TABLE="+e.cfg.PaymentTable,
		"PATH="+os.Getenv("PATH"),
	), extraEnv...)
	cmd.Stderr = os.Stderr
	require.NoError(e.t, cmd.Start())
	e.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// invoke sends a POST /payments to the function polling rt.
func (e *e2e) invoke(rt *lambdatest.Runtime, key, body string) (events.APIGatewayV2HTTPResponse, error) {
	e.t.Helper()
	res, err := rt.Invoke(context.Background(), event(e.t, "POST", "/payments", key, body))
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	require.Nil(e.t, res.Error, "the function reported an error: %s", res.Error)
	var resp events.APIGatewayV2HTTPResponse
	require.NoError(e.t, json.Unmarshal(res.Payload, &resp))
	return resp, nil
}

func (e *e2e) payments() int {
	e.t.Helper()
	out, err := e.ep.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: &e.cfg.PaymentTable, ConsistentRead: aws.Bool(true)})
	require.NoError(e.t, err)
	return len(out.Items)
}

func TestBootstrapReplaysAcrossInvocations(t *testing.T) {
	e := newE2E(t)
	e.start(e.rt)
	body := `{"amount":4200,"currency":"EUR"}`
	first, err := e.invoke(e.rt, "e2e-1", body)
	require.NoError(t, err)
	require.Equal(t, 201, first.StatusCode, first.Body)
	second, err := e.invoke(e.rt, "e2e-1", body)
	require.NoError(t, err)
	assert.Equal(t, 201, second.StatusCode)
	assert.Equal(t, "true", second.Headers["Idempotent-Replayed"])
	assert.JSONEq(t, first.Body, second.Body)
	assert.Equal(t, 1, e.payments())
}

// CREATE_TABLES=true is how the function runs on a laptop: against an
// emulator that starts empty, it creates its tables before serving.
func TestBootstrapCreatesItsMissingTablesWhenAskedTo(t *testing.T) {
	e := newE2E(t)
	e.cfg = paymentsapi.Config{KeyTable: localstack.TableName("keys"), PaymentTable: localstack.TableName("payments")}
	for _, name := range []string{e.cfg.KeyTable, e.cfg.PaymentTable} {
		ddbtest.DeleteOnCleanup(t, e.ep.Client, name)
	}
	e.start(e.rt, "CREATE_TABLES=true")
	resp, err := e.invoke(e.rt, "e2e-3", `{"amount":1,"currency":"EUR"}`)
	require.NoError(t, err)
	assert.Equal(t, 201, resp.StatusCode, resp.Body)
	assert.Equal(t, 1, e.payments())
}

// An invocation that runs past its deadline is stopped by Lambda; its
// claim's lease (the invocation's remaining time plus the 5 s margin) then
// runs out, and the next invocation reclaims the key and executes once.
// The process is killed just before the deadline, so that it cannot notice
// the deadline and release the key itself: the case where only the lease
// frees the key.
func TestKeyOfAnInvocationKilledAtItsDeadlineIsReclaimedByTheNext(t *testing.T) {
	e := newE2E(t)
	const timeout = 2 * time.Second
	short := e.runtime(timeout) // the function's timeout for the first invocation
	slow := e.start(short, "LATENCY=1m")
	body := `{"amount":99,"currency":"USD"}`
	start := time.Now()
	go func() {
		time.Sleep(timeout - 300*time.Millisecond)
		_ = slow.Process.Kill()
	}()
	_, err := e.invoke(short, "e2e-2", body)
	require.ErrorIs(t, err, lambdatest.ErrTimeout)
	_ = slow.Wait()

	e.start(e.rt) // a fresh execution environment
	early, err := e.invoke(e.rt, "e2e-2", body)
	require.NoError(t, err)
	if time.Since(start) >= timeout+5*time.Second {
		t.Fatalf("the restart took %v, longer than the dead claim's lease: cannot observe the 409", time.Since(start))
	}
	assert.Equal(t, 409, early.StatusCode, "while the dead invocation's lease runs, the key is in flight")

	var final events.APIGatewayV2HTTPResponse
	require.Eventually(t, func() bool {
		final, err = e.invoke(e.rt, "e2e-2", body)
		return err == nil && final.StatusCode != 409
	}, 30*time.Second, 250*time.Millisecond)
	assert.Equal(t, 201, final.StatusCode, final.Body)
	assert.Empty(t, final.Headers["Idempotent-Replayed"], "the dead invocation committed nothing: this one executes")
	assert.Equal(t, 1, e.payments(), "exactly one payment")

	again, err := e.invoke(e.rt, "e2e-2", body)
	require.NoError(t, err)
	assert.Equal(t, "true", again.Headers["Idempotent-Replayed"])
}
