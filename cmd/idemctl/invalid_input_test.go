package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/localstack"
)

// invalidInputEndpoint is endpoint() on the embedded emulator, whatever the
// environment says.
func invalidInputEndpoint(t *testing.T) (*localstack.Endpoint, string) {
	t.Helper()
	t.Setenv("KEY_TABLE", "")
	ep := localstack.ForTest(t, func(o *localstack.Options) { o.Embedded = true })
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", ep.URL)
	hermetic(t)
	t.Setenv("AWS_REGION", localstack.DefaultRegion)
	unset(t, credentialVars...)
	table := localstack.TableName("invalid-input")
	ddbtest.DeleteOnCleanup(t, ep.Client, table)
	r := idemctl("create-table", "-table", table)
	require.Equal(t, exitOK, r.code, r.stderr)
	return ep, table
}

// stuckRecord writes an in-progress record of (scope, key) whose lock expired
// ten minutes ago (exp still ahead): what release deletes without flags.
func stuckRecord(t *testing.T, ep *localstack.Endpoint, table, scope, key string) {
	t.Helper()
	at := time.Now().Add(-10 * time.Minute)
	s := dynamostore.New(ep.Client, table, func(o *dynamostore.Options) {
		o.Now, o.Lease, o.Retention = func() time.Time { return at }, time.Minute, time.Hour
	})
	sum := sha256.Sum256([]byte(key))
	c, err := s.Claim(context.Background(), dynamostore.Request{Scope: scope, Key: key, Method: "POST", Path: "/p", Fingerprint: sum[:]})
	require.NoError(t, err)
	require.Equal(t, dynamostore.Acquired, c.Result)
}

func recordExists(t *testing.T, ep *localstack.Endpoint, table, scope, key string) bool {
	t.Helper()
	_, err := dynamostore.New(ep.Client, table).Get(context.Background(), scope, key)
	if errors.Is(err, dynamostore.ErrNotFound) {
		return false
	}
	require.NoError(t, err)
	return true
}

// A key that is not valid UTF-8 names no record: the SDK would send its
// invalid bytes as U+FFFD, the key of another record, so release refuses
// it and deletes nothing.
func TestReleaseOfAKeyThatIsNotUTF8DeletesNothing(t *testing.T) {
	ep, table := invalidInputEndpoint(t)
	stuckRecord(t, ep, table, "tenant-a", "\uFFFD")
	require.True(t, recordExists(t, ep, table, "tenant-a", "\uFFFD"))

	r := idemctl("release", "-table", table, "-scope", "tenant-a", "-key", "\xff")
	t.Logf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	assert.NotEqual(t, exitOK, r.code, "a key that is not valid UTF-8 names no record: it must be refused")
	assert.True(t, recordExists(t, ep, table, "tenant-a", "\uFFFD"), "the record of key U+FFFD, which the operator did not name, was deleted")
}

// The same across tenants: scope "\xff\xff\xff" (3 bytes) with key "k"
// would be sent as 3:<U+FFFD x3>k, the record of scope U+FFFD (3 bytes)
// and key U+FFFD U+FFFD k: another tenant's.
func TestReleaseOfAScopeThatIsNotUTF8DeletesNoOtherTenantsRecord(t *testing.T) {
	ep, table := invalidInputEndpoint(t)
	otherScope, otherKey := "\uFFFD", "\uFFFD\uFFFDk"
	stuckRecord(t, ep, table, otherScope, otherKey)

	r := idemctl("release", "-table", table, "-scope", "\xff\xff\xff", "-key", "k")
	t.Logf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	assert.NotEqual(t, exitOK, r.code)
	assert.True(t, recordExists(t, ep, table, otherScope, otherKey), "another tenant's record was deleted")
}

// -rate NaN is not negative (NaN < 0 is false) and limited nothing: the
// rate must be a finite number.
func TestSweepRefusesARateThatIsNotAFiniteNumber(t *testing.T) {
	_, table := invalidInputEndpoint(t)
	for _, rate := range []string{"NaN", "Inf"} {
		r := idemctl("sweep", "-table", table, "-rate", rate)
		t.Logf("-rate %s: exit %d, stderr: %s", rate, r.code, r.stderr)
		assert.Equal(t, exitUsage, r.code, "-rate %s", rate)
	}
}
