package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func buildGreeter(t *testing.T) string {
	t.Helper()
	bootstrap := filepath.Join(t.TempDir(), "bootstrap")
	out, err := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bootstrap, "../../testdata/greeter").CombinedOutput()
	require.NoError(t, err, string(out))
	return bootstrap
}

// start runs the command until the test ends and returns its address.
func start(t *testing.T, args ...string) (addr string, status <-chan int, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, args, pw, io.Discard)
		_ = pw.Close()
	}()
	t.Cleanup(cancel)
	lines := bufio.NewScanner(pr)
	require.True(t, lines.Scan(), "the command printed nothing")
	addr, ok := strings.CutPrefix(lines.Text(), "listening on ")
	require.True(t, ok, lines.Text())
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	return addr, done, cancel
}

func invoke(t *testing.T, addr, event string) (string, string) {
	t.Helper()
	resp, err := http.Post("http://"+addr+"/2015-03-31/functions/function/invocations", "application/json", bytes.NewBufferString(event))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.Header.Get("X-Amz-Function-Error"), string(b)
}

func TestRunsTheBootstrapAndStartsANewOneAfterItExits(t *testing.T) {
	addr, status, stop := start(t, "-addr", "127.0.0.1:0", buildGreeter(t))

	fnErr, body := invoke(t, addr, `{"name":"ada"}`)
	assert.Empty(t, fnErr)
	assert.JSONEq(t, `{"greeting":"hello, ada"}`, body)

	fnErr, body = invoke(t, addr, `{"name":"ada","panic":true}`)
	assert.Equal(t, "Unhandled", fnErr)
	assert.Contains(t, body, `"errorMessage":"asked to panic"`)

	// aws-lambda-go exits after a panic: a new bootstrap answers.
	fnErr, body = invoke(t, addr, `{"name":"grace"}`)
	assert.Empty(t, fnErr)
	assert.JSONEq(t, `{"greeting":"hello, grace"}`, body)

	stop()
	assert.Equal(t, 0, <-status)
}

func TestBootstrapThatExitsAtItsStartEndsTheCommandWithItsStatus(t *testing.T) {
	// A bootstrap outside Lambda's environment: aws-lambda-go's Start
	// exits with status 1 when AWS_LAMBDA_RUNTIME_API is unset; here
	// "false" stands for any bootstrap that fails at its start.
	falsePath, err := exec.LookPath("false")
	require.NoError(t, err)
	_, status, _ := start(t, "-addr", "127.0.0.1:0", falsePath)
	assert.Equal(t, 1, <-status)
}

func TestBadFlagsExitWith2AndHelpWith0(t *testing.T) {
	ctx := context.Background()
	assert.Equal(t, 2, run(ctx, []string{"-timeout", "-1s"}, io.Discard, io.Discard))
	assert.Equal(t, 2, run(ctx, []string{"-nope"}, io.Discard, io.Discard))
	assert.Equal(t, 0, run(ctx, []string{"-h"}, io.Discard, io.Discard))
}
