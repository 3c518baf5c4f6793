package lambda_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
	idemlambda "github.com/idemkey/idemkey/lambda"
	"github.com/idemkey/idemkey/lambda/lambdatest"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/txn"
)

// bootstrapEnv, set in the environment of this test binary, makes it a
// Lambda bootstrap instead of a test run: the function it serves is named
// by the variable's value.
const bootstrapEnv = "IDEMLAMBDA_TEST_BOOTSTRAP"

func TestMain(m *testing.M) {
	switch os.Getenv(bootstrapEnv) {
	case "":
		os.Exit(m.Run())
	case "charge":
		serveCharge()
	case "gateway":
		lambda.Start(idemlambda.NewAPIGatewayV2(http.NotFoundHandler()))
	}
	os.Exit(2)
}

// charge is the input of the function the bootstrap serves.
type charge struct {
	ID      string `json:"id"`
	Amount  int    `json:"amount"`
	Decline bool   `json:"decline,omitempty"`
	// Stage stages a write whose condition cannot pass.
	Stage bool `json:"stage,omitempty"`
}

// DeclinedError is the function's own error type.
type DeclinedError struct{ Amount int }

func (e *DeclinedError) Error() string { return fmt.Sprintf("card declined for %d", e.Amount) }

// chargeFunc is the function the bootstrap and the test serve, over table.
func chargeFunc(client *dynamodb.Client, table string, hold func()) func(context.Context, charge) (string, error) {
	return idemlambda.Idempotent(dynamostore.New(client, table), func(ctx context.Context, c charge) (string, error) {
		if hold != nil {
			hold()
		}
		if c.Decline {
			return "", &DeclinedError{Amount: c.Amount}
		}
		if c.Stage {
			tx, _ := txn.FromContext(ctx)
			tx.ConditionCheck(types.ConditionCheck{
				TableName:           aws.String(table),
				Key:                 map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "no such item"}},
				ConditionExpression: aws.String("attribute_exists(pk)"),
			})
		}
		return fmt.Sprintf("charged %d", c.Amount), nil
	}, func(o *idemlambda.FuncOptions[charge]) {
		o.Name = "charge"
		o.SingleCaller = true
		o.Key = func(c charge) (string, error) { return c.ID, nil }
	})
}

// serveCharge runs the bootstrap: the SDK's default configuration, from the
// environment the test set.
func serveCharge() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	lambda.Start(chargeFunc(dynamodb.NewFromConfig(cfg), os.Getenv("KEY_TABLE"), nil))
}

// bootstrap starts this test binary as the bootstrap of function, against
// rt, with the DynamoDB endpoint url.
func bootstrap(t *testing.T, rt *lambdatest.Runtime, function, url string, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), rt.Env()...),
		bootstrapEnv+"="+function,
		"AWS_ENDPOINT_URL_DYNAMODB="+url, "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID="+localstack.LocalAccessKeyID, "AWS_SECRET_ACCESS_KEY="+localstack.LocalSecretAccessKey,
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE="+filepath.Join(t.TempDir(), "none"), "AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(t.TempDir(), "none"),
	)
	cmd.Env = append(cmd.Env, env...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
}

// invokeErrorType invokes the function polling rt and returns the errorType
// Lambda received, "" after a response.
func invokeErrorType(t *testing.T, rt *lambdatest.Runtime, in any) string {
	t.Helper()
	res, err := rt.Invoke(context.Background(), in)
	require.NoError(t, err)
	if res.Error == nil {
		return ""
	}
	return res.Error.Type
}

func TestIdempotentErrorsReachLambdaWithAnErrorTypeThatNamesThem(t *testing.T) {
	ep := localstack.ForTest(t)
	table := localstack.TableName("errortype")
	require.NoError(t, dynamostore.EnsureTable(context.Background(), ep.Client, table, 0))
	ddbtest.DeleteOnCleanup(t, ep.Client, table)
	rt, err := lambdatest.Start(func(o *lambdatest.Options) { o.Timeout = time.Minute })
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	bootstrap(t, rt, "charge", ep.URL, "KEY_TABLE="+table)

	assert.Equal(t, "", invokeErrorType(t, rt, charge{ID: "c-1", Amount: 100}))
	assert.Equal(t, "KeyReusedError", invokeErrorType(t, rt, charge{ID: "c-1", Amount: 999}))
	assert.Equal(t, "KeyError", invokeErrorType(t, rt, charge{Amount: 100}))
	assert.Equal(t, "DeclinedError", invokeErrorType(t, rt, charge{ID: "c-2", Amount: 5, Decline: true}),
		"the function's own error keeps its own type")
	assert.Equal(t, "StagedWriteError", invokeErrorType(t, rt, charge{ID: "c-3", Amount: 5, Stage: true}))

	// An invocation of this process holds c-4 while the bootstrap gets it.
	entered, release := make(chan struct{}), make(chan struct{})
	local := chargeFunc(ep.Client, table, func() { close(entered); <-release })
	done := make(chan error, 1)
	go func() { _, err := local(context.Background(), charge{ID: "c-4", Amount: 7}); done <- err }()
	<-entered
	assert.Equal(t, "InFlightError", invokeErrorType(t, rt, charge{ID: "c-4", Amount: 7}))
	close(release)
	require.NoError(t, <-done)

	// A bootstrap whose DynamoDB endpoint does not answer.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	down, err := lambdatest.Start(func(o *lambdatest.Options) { o.Timeout = time.Minute })
	require.NoError(t, err)
	t.Cleanup(func() { _ = down.Close() })
	bootstrap(t, down, "charge", dead, "KEY_TABLE="+table, "AWS_MAX_ATTEMPTS=1")
	assert.Equal(t, "StoreUnavailableError", invokeErrorType(t, down, charge{ID: "c-5", Amount: 1}))

	// A bootstrap whose key table does not exist: a retry meets it again.
	misconfigured, err := lambdatest.Start(func(o *lambdatest.Options) { o.Timeout = time.Minute })
	require.NoError(t, err)
	t.Cleanup(func() { _ = misconfigured.Close() })
	bootstrap(t, misconfigured, "charge", ep.URL, "KEY_TABLE="+table+"-missing")
	assert.Equal(t, "StoreMisconfiguredError", invokeErrorType(t, misconfigured, charge{ID: "c-6", Amount: 1}))
}

func TestFrontDoorRejectingAnEventReachesLambdaAsEventError(t *testing.T) {
	rt, err := lambdatest.Start(func(o *lambdatest.Options) { o.Timeout = time.Minute })
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	bootstrap(t, rt, "gateway", "http://127.0.0.1:1")
	res, err := rt.Invoke(context.Background(), events.APIGatewayV2HTTPRequest{
		RawPath: "/", Body: "not base64!", IsBase64Encoded: true,
		RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"}},
	})
	require.NoError(t, err)
	require.NotNil(t, res.Error)
	assert.Equal(t, "EventError", res.Error.Type)
}

// The types that name the errors wrap them: the sentinel and typed errors
// of idemkey, txn and this package are still found.
func TestIdempotentErrorsMatchTheirSentinelsAndTypedCauses(t *testing.T) {
	ep := localstack.ForTest(t)
	table := localstack.TableName("errortype")
	require.NoError(t, dynamostore.EnsureTable(context.Background(), ep.Client, table, 0))
	ddbtest.DeleteOnCleanup(t, ep.Client, table)
	ctx := context.Background()
	fn := chargeFunc(ep.Client, table, nil)

	_, err := fn(ctx, charge{ID: "m-1", Amount: 1})
	require.NoError(t, err)
	_, err = fn(ctx, charge{ID: "m-1", Amount: 2})
	var reused *idemlambda.KeyReusedError
	assert.ErrorAs(t, err, &reused)
	assert.ErrorIs(t, err, idemkey.ErrMismatch)

	_, err = fn(ctx, charge{Amount: 1})
	var keyErr *idemlambda.KeyError
	assert.ErrorAs(t, err, &keyErr)
	assert.ErrorIs(t, err, idemlambda.ErrNoKey)

	_, err = fn(ctx, charge{ID: "m-2", Stage: true})
	var staged *idemlambda.StagedWriteError
	assert.ErrorAs(t, err, &staged)
	var cond *txn.ConditionFailedError
	assert.ErrorAs(t, err, &cond)

	_, err = fn(ctx, charge{ID: "m-3", Decline: true})
	var declined *DeclinedError
	require.ErrorAs(t, err, &declined)
	assert.Same(t, declined, err, "the function's error is returned as it is, not wrapped")

	entered, release := make(chan struct{}), make(chan struct{})
	held := chargeFunc(ep.Client, table, func() { close(entered); <-release })
	done := make(chan error, 1)
	go func() { _, err := held(ctx, charge{ID: "m-4"}); done <- err }()
	<-entered
	_, err = fn(ctx, charge{ID: "m-4"})
	close(release)
	require.NoError(t, <-done)
	var inFlight *idemlambda.InFlightError
	assert.ErrorAs(t, err, &inFlight)
	var core *idemkey.InFlightError
	require.ErrorAs(t, err, &core)
	assert.Positive(t, core.RetryAfter)
	assert.ErrorIs(t, err, idemkey.ErrInFlight)

	down := dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String("http://127.0.0.1:1"), RetryMaxAttempts: 1,
		Credentials: aws.AnonymousCredentials{},
	})
	_, err = chargeFunc(down, table, nil)(ctx, charge{ID: "m-5"})
	var unavailable *idemlambda.StoreUnavailableError
	assert.ErrorAs(t, err, &unavailable)
	var coreUnavailable *idemkey.UnavailableError
	assert.ErrorAs(t, err, &coreUnavailable)
	assert.ErrorIs(t, err, idemkey.ErrUnavailable)
	assert.False(t, errors.Is(err, idemkey.ErrMismatch))
}
