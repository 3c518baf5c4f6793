package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
)

func TestSweepInIndexModeNeedsTheIndexThatCreateTableIndexCreates(t *testing.T) {
	ep, table := createdTable(t)
	now := time.Now()
	// The writers of a table swept by index say so.
	indexed := func(o *dynamostore.Options) { o.ExpiryIndex = true }
	claim(t, ep, table, "old", now.Add(-3*time.Hour), time.Minute, time.Hour, true, indexed)
	claim(t, ep, table, "stuck", now.Add(-10*time.Minute), 5*time.Minute, time.Hour, false, indexed)
	claim(t, ep, table, "live", now, time.Minute, time.Hour, true, indexed)
	// A record written before the index, without its bucket.
	claim(t, ep, table, "older", now.Add(-4*time.Hour), time.Minute, time.Hour, true)

	r := idemctl("sweep", "-table", table, "-mode", "index")
	require.Equal(t, exitFail, r.code, "a table without the expiry index is refused in index mode")
	assert.Contains(t, r.stderr, dynamostore.ExpiryIndexName)
	assert.Contains(t, r.stderr, "idemctl")

	r = idemctl("create-table", "-table", table, "-index")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, dynamostore.ExpiryIndexName)
	desc, err := ep.Client.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: &table})
	require.NoError(t, err)
	require.Len(t, desc.Table.GlobalSecondaryIndexes, 1)
	r = idemctl("create-table", "-table", table, "-index")
	require.Equal(t, exitOK, r.code, "idempotent: %s", r.stderr)

	r = idemctl("sweep", "-table", table, "-mode", "index")
	require.Equal(t, exitOK, r.code, r.stderr)
	var report map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &report), r.stdout)
	assert.Equal(t, 2.0, report["evicted"], "the expired record in the index, and the one outside it")
	assert.Equal(t, 1.0, report["unindexed"], "found by the scan for records outside the index")
	assert.Equal(t, 0.0, report["reclaimed"], "index mode reads the stuck record once its exp passed, not before")

	r = idemctl("sweep", "-table", table, "-mode", "gsi")
	assert.Equal(t, exitUsage, r.code)
}
