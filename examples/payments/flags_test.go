package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRetentionOrLeaseThatCannotBeSafeIsRefusedBeforeServing(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-ttl", "1m", "-lease", "5m"}, "must be at least -lease"},
		{[]string{"-ttl", "-1h"}, "-ttl must be positive (got -1h0m0s)"},
		{[]string{"-ttl", "0s"}, "-ttl must be positive"},
		{[]string{"-lease", "-5m"}, "-lease must be positive (got -5m0s)"},
		{[]string{"-lease", "0s"}, "-lease must be positive"},
		{[]string{"-latency", "-1s"}, "-latency must not be negative"},
	} {
		var out, errOut bytes.Buffer
		// A value that is wrongly accepted serves until the deadline.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := run(ctx, append(tc.args, "-addr", "127.0.0.1:0"), &out, &errOut)
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
		if strings.Contains(out.String(), "listening") {
			t.Errorf("run(%q) started serving: %s", tc.args, out.String())
		}
	}
}

// exitCode runs the built command and returns its exit code and its
// combined output.
func exitCode(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), string(out)
	}
	require.NoError(t, err, string(out))
	return 0, string(out)
}

func TestHelpExitsZeroAndNamesTheEndpointVariableAndEveryFlag(t *testing.T) {
	bin := paymentsBinary(t)
	code, out := exitCode(t, bin, "-h")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "AWS_ENDPOINT_URL_DYNAMODB")
	assert.Contains(t, out, "lost when the")
	for _, name := range []string{"addr", "ttl", "lease", "latency", "key-table", "payment-table", "single-table", "unguarded"} {
		assert.Contains(t, out, "  -"+name, "the usage lists -%s", name)
	}
	assert.NotContains(t, out, "help requested")
}

func TestBadFlagsExitTwoAndUnusableValuesExitOneWithTheReason(t *testing.T) {
	bin := paymentsBinary(t)
	code, out := exitCode(t, bin, "-no-such-flag")
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, "flag provided but not defined: -no-such-flag")

	code, out = exitCode(t, bin, "-ttl", "-1h")
	assert.Equal(t, 1, code, out)
	assert.Equal(t, "payments: -ttl must be positive (got -1h0m0s)\n", out)
}
