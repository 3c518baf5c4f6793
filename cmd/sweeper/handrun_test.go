package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The binary run from a shell (no Lambda runtime API) says how to sweep
// from a shell and how to run the function locally, and exits 2, instead
// of aws-lambda-go's bare complaint about missing environment variables.
func TestRunByHandTheBinarySaysHowToSweepLocally(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "bootstrap")
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bin, ".")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())
	for name, env := range map[string][]string{
		"without configuration": nil,
		"with a key table":      {"KEY_TABLE=keys", "AWS_REGION=us-east-1"},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(bin)
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "exits with a status: %v", err)
			assert.Equal(t, 2, exit.ExitCode())
			text := out.String()
			assert.Contains(t, text, "AWS_LAMBDA_RUNTIME_API is not set")
			assert.Contains(t, text, "idemctl sweep -table TABLE")
			assert.Contains(t, text, "aws-lambda-rie ./bootstrap")
			assert.NotContains(t, text, "expected AWS Lambda environment variables", "aws-lambda-go's own message")
		})
	}
}

// The summary log line gives its durations in seconds under names ending
// in _seconds, as the EMF line does, not as slog's nanoseconds.
func TestSummaryLogLineGivesDurationsInSeconds(t *testing.T) {
	fx := newFixture(t)
	fx.seed(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := fx.function(nil, settings{Segments: 1}).handle(ctx, event(t))
	require.NoError(t, err)
	require.Positive(t, r.EvictionLag)

	var summary map[string]any
	sc := bufio.NewScanner(strings.NewReader(fx.logs.String()))
	for sc.Scan() {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		if line["msg"] == "idemkey sweep" {
			summary = line
		}
	}
	require.NotNil(t, summary, "the summary line is logged")
	assert.Equal(t, r.EvictionLag.Seconds(), summary["eviction_lag_seconds"])
	assert.Equal(t, r.OldestLiveKeyAge.Seconds(), summary["oldest_live_key_age_seconds"])
	assert.Equal(t, r.Duration.Seconds(), summary["duration_seconds"])
	for _, nanos := range []string{"eviction_lag", "oldest_live_key_age", "duration"} {
		assert.NotContains(t, summary, nanos)
	}
}
