package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/keyschema"
	"github.com/idemkey/idemkey/localstack"
)

// result is one run of idemctl.
type result struct {
	code           int
	stdout, stderr string
}

func idemctl(args ...string) result {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return result{code, stdout.String(), stderr.String()}
}

// hermetic keeps the developer's AWS configuration out of the test.
func hermetic(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none")
	t.Setenv("AWS_CONFIG_FILE", none)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("KEY_TABLE", "")
}

// unset empties the variables for the test.
func unset(t *testing.T, names ...string) {
	for _, name := range names {
		t.Setenv(name, "")
	}
}

// endpoint points idemctl, through the SDK's own variable, at the test's
// DynamoDB endpoint, and returns it with a fresh table name, deleted when
// the test ends. The embedded emulator, or an external one on loopback
// without credentials configured (DynamoDB Local, moto, the standalone
// emulator), gets a hermetic configuration without credentials, which
// idemctl then supplies itself; real AWS keeps the environment's.
func endpoint(t *testing.T) (*localstack.Endpoint, string) {
	t.Setenv("KEY_TABLE", "")
	ep := localstack.ForTest(t)
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", ep.URL)
	if ep.Embedded || (isLoopback(ep.URL) && os.Getenv("AWS_ACCESS_KEY_ID") == "") {
		hermetic(t)
		t.Setenv("AWS_REGION", localstack.DefaultRegion)
		unset(t, credentialVars...)
	}
	table := localstack.TableName("idemctl")
	ddbtest.DeleteOnCleanup(t, ep.Client, table)
	return ep, table
}

// credentialVars are the variables through which the SDK's default chain
// finds credentials.
var credentialVars = []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
	"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"}

// isLoopback reports whether url is an http(s) URL on this machine's
// loopback interface.
func isLoopback(url string) bool {
	for _, host := range []string{"://127.", "://localhost", "://[::1]"} {
		if strings.Contains(url, host) {
			return true
		}
	}
	return false
}

// createdTable is endpoint with the table created by idemctl itself.
func createdTable(t *testing.T) (*localstack.Endpoint, string) {
	ep, table := endpoint(t)
	r := idemctl("create-table", "-table", table)
	require.Equal(t, exitOK, r.code, r.stderr)
	return ep, table
}

// claim writes a record claimed at `at` with the given lease, completed
// with a response when complete is set.
func claim(t *testing.T, ep *localstack.Endpoint, table, key string, at time.Time, lease, retention time.Duration, complete bool,
	optFns ...func(*dynamostore.Options)) {
	t.Helper()
	s := dynamostore.New(ep.Client, table, append([]func(*dynamostore.Options){func(o *dynamostore.Options) {
		o.Now, o.Lease, o.Retention = func() time.Time { return at }, lease, retention
	}}, optFns...)...)
	sum := sha256.Sum256([]byte(key))
	c, err := s.Claim(context.Background(), dynamostore.Request{Scope: "tenant-a", Key: key, Method: "POST", Path: "/payments", Fingerprint: sum[:]})
	require.NoError(t, err)
	if complete {
		_, err = s.Commit(context.Background(), c, dynamostore.Response{Status: 201,
			Header: http.Header{"Content-Type": {"application/json"}, "Location": {"/payments/p1"}}, Body: []byte(`{"id":"p1"}`)}, nil)
		require.NoError(t, err)
	}
}

func TestUsageErrorsExitWithStatus2(t *testing.T) {
	hermetic(t)
	for name, args := range map[string][]string{
		"no command":          nil,
		"unknown command":     {"drop-table", "-table", "t"},
		"no table":            {"inspect", "-key", "k"},
		"no key":              {"inspect", "-table", "t"},
		"release without key": {"release", "-table", "t", "-scope", "s"},
		"unknown flag":        {"sweep", "-table", "t", "-fast"},
		"bad flag value":      {"sweep", "-table", "t", "-segments", "four"},
		"zero segments":       {"sweep", "-table", "t", "-segments", "0"},
		"negative rate":       {"sweep", "-table", "t", "-rate", "-5"},
		"stray argument":      {"create-table", "-table", "t", "extra"},
	} {
		r := idemctl(args...)
		assert.Equal(t, exitUsage, r.code, name)
		assert.Empty(t, r.stdout, name)
		assert.NotEmpty(t, r.stderr, name)
	}
}

func TestHelpPrintsUsageAndSucceeds(t *testing.T) {
	r := idemctl("help")
	assert.Equal(t, exitOK, r.code)
	for _, want := range []string{"create-table", "inspect", "list", "release", "sweep", "scope", "examples/payments", "loopback"} {
		assert.Contains(t, r.stdout, want)
	}
	for cmd, flags := range map[string][]string{
		"sweep": {"-dry-run"},
		"list":  {"-limit", "-max-scanned", "-scope", "Scan"},
		"scope": {"-bearer", "SHA-256", "examples/payments"},
	} {
		r = idemctl(cmd, "-h")
		assert.Equal(t, exitOK, r.code, cmd)
		for _, want := range flags {
			assert.Contains(t, r.stderr, want, cmd)
		}
	}
	assert.NotContains(t, idemctl("scope", "-h").stderr, "-table", "scope reads no table")
}

func TestWithoutEndpointOrRegionIdemctlRefusesToGuessAWSRegion(t *testing.T) {
	hermetic(t)
	unset(t, "AWS_ENDPOINT_URL_DYNAMODB", "AWS_REGION", "AWS_DEFAULT_REGION")
	r := idemctl("create-table", "-table", "t")
	assert.Equal(t, exitFail, r.code)
	assert.Contains(t, r.stderr, "no AWS region")
}

func TestANonLoopbackEndpointWithoutCredentialsFailsAndSaysWhy(t *testing.T) {
	hermetic(t)
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://192.0.2.1:8000") // TEST-NET-1: never contacted
	unset(t, credentialVars...)
	r := idemctl("inspect", "-table", "t", "-key", "k")
	assert.Equal(t, exitFail, r.code)
	assert.Contains(t, r.stderr, "no AWS credentials for http://192.0.2.1:8000")
	assert.Contains(t, r.stderr, "loopback endpoint only")
	assert.Contains(t, r.stderr, "AWS_ACCESS_KEY_ID")
	assert.NotContains(t, r.stderr, "DynamoDB at", "nothing is named before the configuration is complete")
}

func TestCreateTableIsIdempotentAndKeyTableDefaultsTheTable(t *testing.T) {
	ep, table := endpoint(t)
	r := idemctl("create-table", "-table", table)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, table)
	assert.Contains(t, r.stdout, `TTL on "exp"`)

	t.Setenv("KEY_TABLE", table)
	r = idemctl("create-table")
	require.Equal(t, exitOK, r.code, r.stderr)
	ttl, err := ep.Client.DescribeTimeToLive(context.Background(), &dynamodb.DescribeTimeToLiveInput{TableName: &table})
	require.NoError(t, err)
	assert.Equal(t, dynamostore.TTLAttribute, *ttl.TimeToLiveDescription.AttributeName)
}

func TestEndpointFlagOverridesTheEnvironment(t *testing.T) {
	ep, table := endpoint(t)
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:1") // nothing listens there
	r := idemctl("create-table", "-table", table, "-endpoint", ep.URL)
	require.Equal(t, exitOK, r.code, r.stderr)
	r = idemctl("create-table", "-table", table)
	assert.Equal(t, exitFail, r.code, "the environment's endpoint was used without -endpoint")
}

func TestInspectPrintsTheRecordWithoutItsBodyUnlessAsked(t *testing.T) {
	ep, table := createdTable(t)
	now := time.Now()
	claim(t, ep, table, "order-1", now, time.Minute, time.Hour, true)

	r := idemctl("inspect", "-table", table, "-scope", "tenant-a", "-key", "order-1")
	require.Equal(t, exitOK, r.code, r.stderr)
	var got recordJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	sum := sha256.Sum256([]byte("order-1"))
	assert.Equal(t, "completed", got.State)
	assert.Equal(t, "POST", got.Method)
	assert.Equal(t, "/payments", got.Path)
	assert.Equal(t, hex.EncodeToString(sum[:dynamostore.StoredFingerprintSize]), got.Fingerprint, "the part a record stores")
	assert.Equal(t, keyschema.PartitionKey("tenant-a", "order-1"), got.PartitionKey)
	// The claim's exp: its lease's end plus the retention, rounded up to
	// the second; the commit keeps it.
	assert.Equal(t, (now.Add(time.Minute+time.Hour).UnixMilli()+999)/1000, got.Expires.Unix())
	assert.Equal(t, now.UnixMilli(), got.Created.UnixMilli())
	assert.Nil(t, got.LockExpires, "a completed record shows no lock")
	assert.NotNil(t, got.Completed)
	require.NotNil(t, got.Response)
	assert.Equal(t, 201, got.Response.Status)
	assert.Equal(t, []string{"Content-Type", "Location"}, got.Response.HeaderNames)
	assert.Equal(t, len(`{"id":"p1"}`), got.Response.BodyBytes)
	assert.Nil(t, got.Response.Body)
	assert.NotContains(t, r.stdout, "p1\"}", "the body is printed only with -body")

	r = idemctl("inspect", "-table", table, "-scope", "tenant-a", "-key", "order-1", "-body")
	require.Equal(t, exitOK, r.code, r.stderr)
	got = recordJSON{}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	require.NotNil(t, got.Response.Body)
	assert.Equal(t, `{"id":"p1"}`, *got.Response.Body)

	r = idemctl("inspect", "-table", table, "-scope", "tenant-b", "-key", "order-1")
	assert.Equal(t, exitFail, r.code)
	assert.Contains(t, r.stderr, "no live record")
}

func TestReleaseFreesOnlyStuckKeysUnlessForced(t *testing.T) {
	ep, table := createdTable(t)
	now := time.Now()
	claim(t, ep, table, "stuck", now.Add(-10*time.Minute), 5*time.Minute, time.Hour, false)
	claim(t, ep, table, "running", now, time.Hour, time.Hour, false)
	claim(t, ep, table, "done", now, time.Minute, time.Hour, true)
	rel := func(key string, flags ...string) result {
		return idemctl(append([]string{"release", "-table", table, "-scope", "tenant-a", "-key", key}, flags...)...)
	}
	inspectCode := func(key string) int {
		return idemctl("inspect", "-table", table, "-scope", "tenant-a", "-key", key).code
	}

	r := rel("stuck")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "released")
	assert.Equal(t, exitFail, inspectCode("stuck"))

	r = rel("running")
	assert.Equal(t, exitFail, r.code)
	assert.Contains(t, r.stderr, "-force")
	assert.Equal(t, exitOK, inspectCode("running"))
	r = rel("running", "-force")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, exitFail, inspectCode("running"))

	r = rel("done", "-force")
	assert.Equal(t, exitFail, r.code)
	assert.Contains(t, r.stderr, "duplicate")
	assert.Equal(t, exitOK, inspectCode("done"))
	r = rel("done", "-force-completed")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stderr, "warning")
	assert.Equal(t, exitFail, inspectCode("done"))

	r = rel("never")
	assert.Equal(t, exitFail, r.code)
	assert.Contains(t, r.stderr, "nothing to release")
}

func TestSweepPrintsTheReportAndDryRunDeletesNothing(t *testing.T) {
	ep, table := createdTable(t)
	now := time.Now()
	claim(t, ep, table, "old-1", now.Add(-3*time.Hour), time.Minute, time.Hour, true)
	claim(t, ep, table, "old-2", now.Add(-3*time.Hour), time.Minute, time.Hour, false)
	claim(t, ep, table, "stuck", now.Add(-10*time.Minute), 5*time.Minute, time.Hour, false)
	claim(t, ep, table, "live", now, time.Minute, time.Hour, true)
	report := func(args ...string) (map[string]any, result) {
		r := idemctl(append([]string{"sweep", "-table", table, "-segments", "4"}, args...)...)
		var m map[string]any
		if r.code == exitOK {
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &m), r.stdout)
		}
		return m, r
	}

	dry, r := report("-dry-run")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, true, dry["dryRun"])
	assert.Equal(t, 2.0, dry["evicted"])
	assert.Equal(t, 1.0, dry["reclaimed"])
	assert.Equal(t, 1.0, dry["liveKeys"])
	assert.Equal(t, true, dry["finished"])

	done, r := report("-v", "-rate", "0")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, false, done["dryRun"])
	assert.Equal(t, 2.0, done["evicted"], "the dry run deleted nothing")
	assert.Equal(t, 1.0, done["reclaimed"])
	assert.Contains(t, r.stderr, "idemkey sweep", "-v logs the summary")
	assert.NotContains(t, r.stderr, "old-1")

	again, r := report()
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, 1.0, again["scanned"])
	assert.Equal(t, 0.0, again["evicted"])
}

func TestSweepWithABadCursorFails(t *testing.T) {
	_, table := createdTable(t)
	r := idemctl("sweep", "-table", table, "-cursor", "not-a-cursor")
	assert.Equal(t, exitFail, r.code)
	assert.Contains(t, r.stderr, "invalid sweep cursor")
	assert.Empty(t, strings.TrimSpace(r.stdout))
}

func TestSweepOnAMissingTableFailsAndStillPrintsTheReport(t *testing.T) {
	_, table := endpoint(t)
	r := idemctl("sweep", "-table", table, "-segments", "1")
	assert.Equal(t, exitFail, r.code)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &m))
	assert.Equal(t, 1.0, m["errors"])
	assert.Equal(t, "error", m["stoppedBy"])
	assert.Contains(t, r.stderr, "table "+table+" does not exist")
}

func TestSweepRefusesMoreSegmentsThanOneCursorItemHolds(t *testing.T) {
	hermetic(t)
	r := idemctl("sweep", "-table", "t", "-segments", strconv.Itoa(dynamostore.MaxSweepSegments+1))
	assert.Equal(t, exitUsage, r.code)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, "-segments must be 1 to "+strconv.Itoa(dynamostore.MaxSweepSegments))
	assert.Contains(t, r.stderr, "400 KB item")
	assert.Less(t, dynamostore.MaxSweepSegments, 200, "a worst-case cursor of 200 segments is more than 400 KB")
}

func TestCreateTableWithoutTTLLeavesTTLOffAndRefusesATableWithTTL(t *testing.T) {
	ep, table := endpoint(t)
	r := idemctl("create-table", "-table", table, "-no-ttl")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "TTL off")
	out, err := ep.Client.DescribeTimeToLive(context.Background(), &dynamodb.DescribeTimeToLiveInput{TableName: &table})
	require.NoError(t, err)
	if d := out.TimeToLiveDescription; d != nil {
		assert.NotEqual(t, types.TimeToLiveStatusEnabled, d.TimeToLiveStatus)
	}

	r = idemctl("create-table", "-table", table) // the default path enables TTL
	require.Equal(t, exitOK, r.code, r.stderr)
	r = idemctl("create-table", "-table", table, "-no-ttl")
	assert.Equal(t, exitFail, r.code)
	assert.Contains(t, r.stderr, "TTL must be off")
}

// claimIn writes a completed record for key, written by region, that
// expired two hours ago.
func claimIn(t *testing.T, ep *localstack.Endpoint, table, region, key string) {
	t.Helper()
	at := time.Now().Add(-3 * time.Hour)
	s := dynamostore.New(ep.Client, table, func(o *dynamostore.Options) {
		o.Now, o.Lease, o.Retention, o.Region = func() time.Time { return at }, time.Minute, time.Hour, region
	})
	sum := sha256.Sum256([]byte(key))
	c, err := s.Claim(context.Background(), dynamostore.Request{Scope: "tenant-a", Key: key, Method: "POST", Path: "/payments", Fingerprint: sum[:]})
	require.NoError(t, err)
	_, err = s.Commit(context.Background(), c, dynamostore.Response{Status: 201}, nil)
	require.NoError(t, err)
}

func TestSweepWithWriterRegionEvictsOnlyThatRegionsRecordsAndResumesOnlyItsOwnCursor(t *testing.T) {
	ep, table := createdTable(t)
	region := ep.Client.Options().Region // the replica idemctl talks to
	for i := range 3 {
		claimIn(t, ep, table, region, "mine-"+strconv.Itoa(i))
		claimIn(t, ep, table, "elsewhere-1", "theirs-"+strconv.Itoa(i))
	}
	sweep := func(args ...string) (map[string]any, result) {
		r := idemctl(append([]string{"sweep", "-table", table, "-segments", "1", "-rate", "0", "-region", region}, args...)...)
		var m map[string]any
		if r.code == exitOK {
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &m), r.stdout)
		}
		return m, r
	}

	// An unfinished pass of another writer region (its cursor), and of none.
	other := dynamostore.NewSweeper(ep.Client, table, func(o *dynamostore.SweepOptions) {
		o.Region, o.PageSize, o.Segments, o.DryRun = "elsewhere-1", 1, 1, true
		o.Budget, o.Now = time.Nanosecond, func() time.Time { return time.Now().Add(-time.Hour) }
	})
	theirs, err := other.Sweep(context.Background(), "")
	require.NoError(t, err)
	require.NotEmpty(t, theirs.Cursor)
	_, r := sweep("-writer-region", region, "-cursor", theirs.Cursor)
	assert.Equal(t, exitFail, r.code, "a cursor of another writer region is refused")
	assert.Contains(t, r.stderr, "another region")

	m, r := sweep("-writer-region", region)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, 3.0, m["evicted"], "only the records %s wrote", region)
	assert.Equal(t, 3.0, m["foreign"])

	_, r = sweep("-writer-region", "elsewhere-1")
	assert.Equal(t, exitFail, r.code, "a writer region other than the replica's is refused")
	assert.Contains(t, r.stderr, "own replica")
	_, r = sweep("-writer-region", strings.Repeat("r", dynamostore.MaxSweepRegionLen+1))
	assert.Equal(t, exitUsage, r.code)

	m, r = sweep()
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, 3.0, m["evicted"], "without -writer-region every expired record goes")
}
