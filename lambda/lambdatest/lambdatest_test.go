package lambdatest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/lambda/lambdatest"
)

var greeterPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lambdatest")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	greeterPath = filepath.Join(dir, "bootstrap")
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", greeterPath, "./testdata/greeter")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintln(os.Stderr, string(out))
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// runtime starts a Runtime and, unless noFunction, the greeter against it.
func runtime(t *testing.T, optFns ...func(*lambdatest.Options)) (*lambdatest.Runtime, func() *exec.Cmd) {
	t.Helper()
	rt, err := lambdatest.Start(optFns...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	start := func() *exec.Cmd {
		cmd := exec.Command(greeterPath)
		cmd.Env = append(os.Environ(), rt.Env()...)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	return rt, start
}

func TestFunctionSeesItsNameARNAndDeadline(t *testing.T) {
	rt, start := runtime(t, func(o *lambdatest.Options) { o.FunctionName = "greeter"; o.Timeout = time.Minute })
	start()
	res, err := rt.Invoke(context.Background(), map[string]string{"name": "me"})
	require.NoError(t, err)
	require.Nil(t, res.Error)
	var g struct {
		Function   string `json:"function"`
		ARN        string `json:"arn"`
		RemainingS int64  `json:"remaining_s"`
	}
	require.NoError(t, json.Unmarshal(res.Payload, &g))
	assert.Equal(t, "greeter", g.Function)
	assert.Equal(t, "arn:aws:lambda:us-east-1:123456789012:function:greeter", g.ARN)
	assert.Positive(t, g.RemainingS, "the context's deadline is the invocation's")
	assert.LessOrEqual(t, g.RemainingS, int64(60), "the deadline is the function's timeout after it received the invocation")
}

func TestFunctionErrorsAndPanicsCarryTheirErrorType(t *testing.T) {
	rt, start := runtime(t)
	start()
	res, err := rt.Invoke(context.Background(), json.RawMessage(`{}`))
	require.NoError(t, err, "a function error is not an error of Invoke")
	require.NotNil(t, res.Error)
	assert.Nil(t, res.Payload)
	assert.Equal(t, "NoNameError", res.Error.Type)
	assert.Equal(t, "no name to greet", res.Error.Message)

	res, err = rt.Invoke(context.Background(), map[string]any{"name": "x", "panic": true})
	require.NoError(t, err)
	require.NotNil(t, res.Error)
	assert.Equal(t, "string", res.Error.Type, "aws-lambda-go names a panic by its value's type")
	assert.Equal(t, "asked to panic", res.Error.Message)
	assert.NotEmpty(t, res.Error.StackTrace)
}

func TestInvocationUnansweredByItsDeadlineTimesOutAndItsLateAnswerIsRefused(t *testing.T) {
	rt, start := runtime(t, func(o *lambdatest.Options) { o.Timeout = time.Second })
	cmd := start()
	_, err := rt.Invoke(context.Background(), map[string]string{"name": "slow", "sleep": "2s"})
	require.ErrorIs(t, err, lambdatest.ErrTimeout)
	// The late response is refused: aws-lambda-go then exits, as the
	// process would have been stopped at the deadline.
	err = cmd.Wait()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the function exits after its late answer is refused: %v", err)
}

func TestInvocationWithdrawnBeforeAnyFunctionPollsIsNeverDelivered(t *testing.T) {
	rt, start := runtime(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := rt.Invoke(ctx, map[string]string{"name": "withdrawn"})
	require.ErrorIs(t, err, context.Canceled)

	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = rt.Invoke(ctx, map[string]string{"name": "withdrawn too"})
	require.ErrorIs(t, err, context.DeadlineExceeded, "no function polls: the invocation waits in the queue")

	start()
	res, err := rt.Invoke(context.Background(), map[string]string{"name": "ada"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"greeting":"hello, ada"}`, string(res.Payload), "the withdrawn invocations were skipped")
}

func TestInvokeAPIAnswersAsLambdaDoes(t *testing.T) {
	rt, start := runtime(t, func(o *lambdatest.Options) { o.FunctionName = "greeter"; o.Timeout = time.Second })
	start()
	post := func(name, body string) (*http.Response, string) {
		resp, err := http.Post("http://"+rt.Addr()+"/2015-03-31/functions/"+name+"/invocations", "application/json", bytes.NewBufferString(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(b)
	}

	resp, body := post("greeter", `{"name":"ada"}`)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Empty(t, resp.Header.Get("X-Amz-Function-Error"))
	assert.JSONEq(t, `{"greeting":"hello, ada"}`, body)

	resp, body = post("greeter", "")
	assert.Equal(t, http.StatusOK, resp.StatusCode, "a function error is a 200 with X-Amz-Function-Error")
	assert.Equal(t, "Unhandled", resp.Header.Get("X-Amz-Function-Error"))
	assert.JSONEq(t, `{"errorMessage":"no name to greet","errorType":"NoNameError"}`, body, "no body is the event {}")

	resp, _ = post("greeter", `{"name":`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, "InvalidRequestContentException", resp.Header.Get("X-Amzn-ErrorType"))

	resp, _ = post("other", `{}`)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, "ResourceNotFoundException", resp.Header.Get("X-Amzn-ErrorType"))

	resp, body = post("greeter", `{"name":"slow","sleep":"2s"}`)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "Unhandled", resp.Header.Get("X-Amz-Function-Error"))
	assert.JSONEq(t, `{"errorMessage":"Task timed out after 1.00 seconds","errorType":"Sandbox.Timedout"}`, body)
}

func TestInvokeOnAClosedRuntimeFails(t *testing.T) {
	rt, _ := runtime(t)
	require.NoError(t, rt.Close())
	_, err := rt.Invoke(context.Background(), map[string]string{"name": "ada"})
	require.ErrorIs(t, err, lambdatest.ErrClosed)
}
