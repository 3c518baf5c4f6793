package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/localstack"
)

// otherRegion returns a region name other than region.
func otherRegion(region string) string {
	if region == "us-west-2" {
		return "eu-west-1"
	}
	return "us-west-2"
}

// stuckRecordIn writes an in-progress record of (scope, key), written by
// region (none when empty), whose lock expired ten minutes ago: what
// release deletes without flags.
func stuckRecordIn(t *testing.T, ep *localstack.Endpoint, table, region, scope, key string) {
	t.Helper()
	at := time.Now().Add(-10 * time.Minute)
	s := dynamostore.New(ep.Client, table, func(o *dynamostore.Options) {
		o.Now, o.Lease, o.Retention, o.Region = func() time.Time { return at }, time.Minute, time.Hour, region
	})
	sum := sha256.Sum256([]byte(key))
	c, err := s.Claim(context.Background(), dynamostore.Request{Scope: scope, Key: key, Method: "POST", Path: "/p", Fingerprint: sum[:]})
	require.NoError(t, err)
	require.Equal(t, dynamostore.Acquired, c.Result)
}

// On an MREC global table a region's records are deleted only in that
// region's replica: a delete in another replica can replicate over a newer
// write (a takeover claim) and let a request execute twice. release
// refuses, as sweep -writer-region does, a record another region wrote,
// names both regions and how to proceed, and deletes nothing.
func TestReleaseRefusesARecordAnotherRegionWroteInThisReplica(t *testing.T) {
	ep, table := createdTable(t)
	own := ep.Client.Options().Region // the replica idemctl talks to
	other := otherRegion(own)
	stuckRecordIn(t, ep, table, other, "t", "theirs")
	stuckRecordIn(t, ep, table, own, "t", "mine")

	ins := idemctl("inspect", "-table", table, "-scope", "t", "-key", "theirs")
	require.Equal(t, exitOK, ins.code, ins.stderr)
	assert.Contains(t, ins.stdout, `"region": "`+other+`"`)

	r := idemctl("release", "-table", table, "-scope", "t", "-key", "theirs")
	assert.Equal(t, exitFail, r.code, "a record of %s is not released in %s's replica", other, own)
	assert.Contains(t, r.stderr, "written by region "+other)
	assert.Contains(t, r.stderr, "the AWS region is "+own)
	assert.Contains(t, r.stderr, "-region "+other)
	assert.Contains(t, r.stderr, "Nothing was deleted")
	assert.True(t, recordExists(t, ep, table, "t", "theirs"))

	r = idemctl("release", "-table", table, "-scope", "t", "-key", "mine")
	require.Equal(t, exitOK, r.code, "a record of this replica's region is released: %s", r.stderr)
	assert.False(t, recordExists(t, ep, table, "t", "mine"))

	r = idemctl("release", "-table", table, "-scope", "t", "-key", "theirs", "-any-region")
	require.Equal(t, exitOK, r.code, "-any-region releases it here anyway: %s", r.stderr)
	assert.False(t, recordExists(t, ep, table, "t", "theirs"))

	help := idemctl("release", "-h")
	assert.Contains(t, help.stderr, "-any-region")
}

// The package doc says "Interrupting a sweep (SIGINT, SIGTERM) stops it
// cleanly with a cursor": the operator gets the report, the cursor and how
// to continue, and exit status 0; the cursor resumes the pass.
func TestAnInterruptedSweepStopsCleanlyWithACursorThatResumesIt(t *testing.T) {
	ep, table := createdTable(t)
	now := time.Now()
	keys := []string{"a", "b", "c", "d", "e", "f"}
	for _, k := range keys {
		claim(t, ep, table, "old-"+k, now.Add(-3*time.Hour), time.Minute, time.Hour, true)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// One item a second: the interrupt comes while the sweep waits
	// between its first pages.
	timer := time.AfterFunc(1500*time.Millisecond, cancel)
	defer timer.Stop()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"sweep", "-table", table, "-segments", "1", "-page", "1", "-rate", "1"}, &stdout, &stderr)

	assert.Equal(t, exitOK, code, "a clean stop: %s", stderr.String())
	var first map[string]any
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &first), stdout.String())
	assert.Equal(t, false, first["finished"])
	assert.Equal(t, string(dynamostore.SweepStoppedByCancel), first["stoppedBy"])
	cursor, _ := first["cursor"].(string)
	require.NotEmpty(t, cursor)
	assert.Contains(t, stderr.String(), "continue it with -cursor "+cursor)
	assert.NotContains(t, stderr.String(), "context canceled")

	r := idemctl("sweep", "-table", table, "-segments", "1", "-rate", "0", "-cursor", cursor)
	require.Equal(t, exitOK, r.code, r.stderr)
	var rest map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rest), r.stdout)
	assert.Equal(t, true, rest["finished"])
	assert.Equal(t, float64(len(keys)), first["evicted"].(float64)+rest["evicted"].(float64),
		"the two runs evict every expired record")
}
