package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPrintsOneLinePerModeInTheDocumentedForm(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-seed", "2", "-ops", "30", "-modes", "naive,home-failover"}, &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.Len(t, lines, 3, stdout.String())
	form := regexp.MustCompile(`^mode=(naive|home|home-failover|strong) requests=\d+ logical_ops=30 duplicates=\d+ unavailable=\d+$`)
	assert.Regexp(t, form, lines[0])
	assert.True(t, strings.HasPrefix(lines[0], "mode=naive "))
	assert.Regexp(t, form, lines[1])
	assert.True(t, strings.HasPrefix(lines[1], "mode=home-failover "))
	assert.Regexp(t, `^fence_reported=\d+ failovers=\d+ duplicates_in_lag_window=\d+$`, lines[2])
}

func TestRejectsUnknownModesAndArguments(t *testing.T) {
	var out bytes.Buffer
	assert.ErrorContains(t, run(context.Background(), []string{"-modes", "eventual"}, &out, &out), "unknown mode")
	assert.ErrorContains(t, run(context.Background(), []string{"extra"}, &out, &out), "unexpected arguments")
}
