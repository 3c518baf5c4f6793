package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/deploytest"
)

func TestSweepModeComesFromSweepModeAndAnyOtherValueRefusesToStart(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	for value, want := range map[string]dynamostore.SweepMode{"": "", "scan": dynamostore.SweepScan, "index": dynamostore.SweepIndex, " index ": dynamostore.SweepIndex} {
		s, err := configFromEnv(env(map[string]string{"KEY_TABLE": "keys", "SWEEP_MODE": value}))
		require.NoError(t, err, value)
		assert.Equal(t, want, s.Mode, value)
	}
	for _, value := range []string{"Index", "gsi", "scan,index", "1"} {
		_, err := configFromEnv(env(map[string]string{"KEY_TABLE": "keys", "SWEEP_MODE": value}))
		require.Error(t, err, value)
		assert.Contains(t, err.Error(), "SWEEP_MODE=")
		assert.Contains(t, err.Error(), `"scan"`)
		assert.Contains(t, err.Error(), `"index"`)
	}
}

// TestIndexModeInvocationSweepsWithTheCallsTheTemplateGrantsInIndexMode
// runs the function in index mode on a table with the expiry index and
// compares the IAM actions of its calls with the SweeperFunction policy of
// template.yaml deployed with SweepMode index.
func TestIndexModeInvocationSweepsWithTheCallsTheTemplateGrantsInIndexMode(t *testing.T) {
	fx := newFixture(t)
	require.NoError(t, dynamostore.EnsureExpiryIndex(context.Background(), fx.ep.Client, fx.table, dynamostore.KeySchema{}, 0))
	fx.indexed = true
	expired, stuck, _ := fx.seed(t)
	perms := ddbtest.NewPermissions()
	f := fx.function(fx.ep.NewClient(perms.Install), settings{Mode: dynamostore.SweepIndex})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := f.handle(ctx, event(t))
	require.NoError(t, err)
	assert.Equal(t, dynamostore.SweepIndex, r.Mode)
	assert.Equal(t, expired, r.Evicted)
	assert.Zero(t, r.Reclaimed, "index mode reads the stuck records once their exp passed, not before")
	assert.Positive(t, stuck)

	stack := deploytest.ForTest(t, map[string]string{"SweepMode": "index"})
	granted, err := stack.Grants(context.Background(), "SweeperFunction")
	require.NoError(t, err)
	used := perms.Actions(fx.table)
	assert.Contains(t, used, "dynamodb:Query")
	assert.Contains(t, used, "dynamodb:Scan", "the first sweep scans for records outside the index")
	assert.Subset(t, granted["KeyTable"], used, "every call of index mode is granted")

	// That scan found none and noted it: the next invocation reads the
	// index alone.
	again := ddbtest.NewPermissions()
	_, err = fx.function(fx.ep.NewClient(again.Install), settings{Mode: dynamostore.SweepIndex}).handle(ctx, event(t))
	require.NoError(t, err)
	assert.NotContains(t, again.Actions(fx.table), "dynamodb:Scan")
	assert.Contains(t, fx.stdout.String(), `"Unindexed":0`, "the metrics line counts the records outside the index")
	env, err := stack.Environment(context.Background(), "SweeperFunction")
	require.NoError(t, err)
	assert.Equal(t, "index", env["SWEEP_MODE"])
}
