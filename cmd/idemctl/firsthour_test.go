package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/localstack"
)

// emptyCredentialEnvironment leaves the SDK no credentials to find: no
// credential variables, and empty shared configuration and credential
// files.
func emptyCredentialEnvironment(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"config", "credentials"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o600))
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	unset(t, credentialVars...)
}

// expectedRegion is the region idemctl uses for the test's endpoint.
func expectedRegion() string {
	if r := os.Getenv("AWS_REGION"); r != "" {
		return r
	}
	return localstack.DefaultRegion
}

func TestALoopbackEndpointWorksWithoutConfiguredCredentials(t *testing.T) {
	ep, table := endpoint(t)
	if !isLoopback(ep.URL) {
		t.Skipf("the endpoint %s is not loopback: dummy credentials never apply to it", ep.URL)
	}
	emptyCredentialEnvironment(t)

	r := idemctl("create-table", "-table", table)
	require.Equal(t, exitOK, r.code, r.stderr)
	claim(t, ep, table, "order-1", time.Now(), time.Minute, time.Hour, true)
	r = idemctl("inspect", "-table", table, "-scope", "tenant-a", "-key", "order-1")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"completed"`)

	r = idemctl("inspect", "-table", table, "-scope", "tenant-a", "-key", "order-1", "-endpoint", ep.URL)
	require.Equal(t, exitOK, r.code, "-endpoint follows the same rule: %s", r.stderr)
}

func TestIdemctlNamesTheEndpointAndRegionItTalksTo(t *testing.T) {
	ep, table := endpoint(t)
	r := idemctl("create-table", "-table", table)
	require.Equal(t, exitOK, r.code, r.stderr)
	first, _, _ := strings.Cut(r.stderr, "\n")
	assert.Equal(t, "idemctl: DynamoDB at "+ep.URL+" (region "+expectedRegion()+")", first)

	r = idemctl("inspect", "-table", table, "-key", "k", "-region", "eu-central-1")
	assert.Equal(t, exitFail, r.code, "no such table in that region, on DynamoDB and moto; the emulator has no regions")
	first, _, _ = strings.Cut(r.stderr, "\n")
	assert.Equal(t, "idemctl: DynamoDB at "+ep.URL+" (region eu-central-1)", first)
}

func TestWithoutAnEndpointIdemctlNamesTheAWSEndpointOfItsRegion(t *testing.T) {
	hermetic(t)
	unset(t, "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	// The line comes before any call: writing it cancels the context, so
	// that the call then fails at once, before any connection.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // bounds a regression that calls AWS
	defer cancel()
	var stdout bytes.Buffer
	stderr := &cancelOnWrite{cancel: cancel}
	code := run(ctx, []string{"inspect", "-table", "t", "-key", "k"}, &stdout, stderr)
	assert.Equal(t, exitFail, code)
	first, _, _ := strings.Cut(stderr.String(), "\n")
	assert.Equal(t, "idemctl: DynamoDB at https://dynamodb.eu-west-1.amazonaws.com (region eu-west-1)", first)
}

// cancelOnWrite is a buffer that cancels a context at its first write.
type cancelOnWrite struct {
	bytes.Buffer
	cancel context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.cancel()
	return w.Buffer.Write(p)
}

func TestInspectShowsLockFieldsOnlyOnInProgressRecords(t *testing.T) {
	ep, table := createdTable(t)
	now := time.Now()
	claim(t, ep, table, "done", now, time.Minute, time.Hour, true)
	claim(t, ep, table, "running", now, 10*time.Minute, time.Hour, false)
	inspected := func(key string) map[string]any {
		r := idemctl("inspect", "-table", table, "-scope", "tenant-a", "-key", key)
		require.Equal(t, exitOK, r.code, r.stderr)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &m), r.stdout)
		return m
	}

	done := inspected("done")
	assert.Equal(t, "completed", done["state"])
	for _, field := range []string{"lockToken", "lockExpires", "lockExpired"} {
		assert.NotContains(t, done, field, "a completed record's lock fences nothing")
	}

	running := inspected("running")
	rec, err := dynamostore.New(ep.Client, table).Get(context.Background(), "tenant-a", "running")
	require.NoError(t, err)
	assert.Equal(t, "in_progress", running["state"])
	assert.Equal(t, rec.LockToken, running["lockToken"])
	assert.Equal(t, rec.LockExpires.UTC().Format(time.RFC3339Nano), running["lockExpires"])
	assert.Equal(t, false, running["lockExpired"])
}

func TestEveryCommandNamesAMissingTableAndHowToCreateIt(t *testing.T) {
	ep, table := endpoint(t) // never created
	want := "table " + table + " does not exist in region " + expectedRegion() + " at " + ep.URL +
		": create it with idemctl create-table -table " + table
	for _, args := range [][]string{
		{"inspect", "-key", "k"},
		{"release", "-key", "k"},
		{"sweep", "-segments", "1"},
		{"list", "-scope", "s"},
	} {
		r := idemctl(append(args, "-table", table)...)
		assert.Equal(t, exitFail, r.code, args[0])
		assert.Contains(t, r.stderr, want, args[0])
		assert.NotContains(t, r.stderr, "ResourceNotFoundException", args[0])
	}
}

// exampleScopes are scopes examples/payments gives bearer tokens
// (paymentsapi.OwnerOf), computed apart: the first 32 hex digits of
// "printf %s TOKEN | sha256sum".
var exampleScopes = map[string]string{
	"alice":               "2bd806c97f0e00af1a1fc3328fa763a9",
	"bob":                 "81b637d8fcd2c6da6359e6963113a117",
	"a token with spaces": "5f3685685ee59e3537cbe0b9772a6493",
}

func TestScopePrintsTheScopeExamplesPaymentsGivesABearerToken(t *testing.T) {
	for token, want := range exampleScopes {
		r := idemctl("scope", "-bearer", token)
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Equal(t, want+"\n", r.stdout, "only the scope on stdout, for $(idemctl scope ...)")
		assert.Contains(t, r.stderr, "examples/payments")
		assert.Contains(t, r.stderr, "SHA-256")
		assert.NotContains(t, r.stderr, "DynamoDB at", "scope calls nothing")
	}
	r := idemctl("scope", "-bearer", " alice ")
	assert.Equal(t, exampleScopes["alice"]+"\n", r.stdout, "the example trims the token, and so does scope")

	r = idemctl("scope")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "-bearer is required")
}

// claimScoped writes a record of (scope, key) claimed at `at`, completed
// when complete is set.
func claimScoped(t *testing.T, ep *localstack.Endpoint, table, scope, key string, at time.Time, complete bool) {
	t.Helper()
	s := dynamostore.New(ep.Client, table, func(o *dynamostore.Options) {
		o.Now, o.Lease, o.Retention = func() time.Time { return at }, time.Minute, time.Hour
	})
	sum := sha256.Sum256([]byte(key))
	c, err := s.Claim(context.Background(), dynamostore.Request{Scope: scope, Key: key, Method: "POST", Path: "/payments", Fingerprint: sum[:]})
	require.NoError(t, err)
	if complete {
		_, err = s.Commit(context.Background(), c, dynamostore.Response{Status: 201}, nil)
		require.NoError(t, err)
	}
}

func TestListPrintsTheLiveKeysOfOneScopeOnly(t *testing.T) {
	ep, table := createdTable(t)
	now := time.Now()
	alice := exampleScopes["alice"]
	claimScoped(t, ep, table, alice, "order-1", now, true)
	claimScoped(t, ep, table, alice, "order-2", now, false)
	claimScoped(t, ep, table, alice, "order-0", now.Add(-3*time.Hour), true) // expired
	claimScoped(t, ep, table, exampleScopes["bob"], "order-1", now, true)
	claimScoped(t, ep, table, alice[:10], alice[10:]+"order-1", now, true) // another scope, same bytes
	claimScoped(t, ep, table, "", "order-9", now, true)
	list := func(args ...string) (listJSON, result) {
		r := idemctl(append([]string{"list", "-table", table}, args...)...)
		var out listJSON
		if r.code == exitOK {
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
		}
		return out, r
	}
	keys := func(out listJSON) []string {
		var ks []string
		for _, k := range out.Keys {
			ks = append(ks, k.Key+" "+k.State)
		}
		slices.Sort(ks)
		return ks
	}

	scope := strings.TrimSpace(idemctl("scope", "-bearer", "alice").stdout)
	out, r := list("-scope", scope)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, []string{"order-1 completed", "order-2 in_progress"}, keys(out))
	assert.False(t, out.Truncated)
	assert.Equal(t, int64(6), out.Scanned, "a Scan reads every item of the table")
	assert.Equal(t, scope, out.Scope)

	out, r = list("-scope", "")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, []string{"order-9 completed"}, keys(out))

	out, r = list("-scope", scope, "-limit", "1")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Len(t, out.Keys, 1)
	assert.Contains(t, r.stderr, "stopped after 1 keys")

	out, r = list("-scope", scope, "-max-scanned", "2")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, int64(2), out.Scanned)
	assert.True(t, out.Truncated)
	assert.Contains(t, r.stderr, "raise -limit or -max-scanned")

	_, r = list("-scope", scope, "-limit", "0")
	assert.Equal(t, exitUsage, r.code)
}
