package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/deploytest"
)

// TestTemplateGrantsExactlyTheCallsTheSweeperMakes runs two invocations
// (one stopped by its deadline, which saves the cursor, and one that
// resumes and finishes, which loads and deletes it), records the IAM
// actions of every call, and compares them with the SweeperFunction policy
// of template.yaml.
func TestTemplateGrantsExactlyTheCallsTheSweeperMakes(t *testing.T) {
	fx := newFixture(t)
	fx.seed(t)
	perms := ddbtest.NewPermissions()
	client := &slowScans{sweepAPI: fx.ep.NewClient(perms.Install), clock: fx.clock, step: 30 * time.Second}
	f := fx.function(client, settings{Segments: 1, PageSize: 10, Margin: 5 * time.Second})
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := f.handle(ctx, event(t))
		cancel()
		require.NoError(t, err)
	}

	tpl, err := deploytest.Load()
	require.NoError(t, err)
	granted, err := tpl.Actions("SweeperFunction")
	require.NoError(t, err)
	assert.Equal(t, granted["KeyTable"], perms.Actions(fx.table))
	assert.Len(t, granted, 1, "the sweeper is granted on the key table only")
	assert.Equal(t, []string{fx.table}, perms.Tables())
}
