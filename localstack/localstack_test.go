package localstack

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// isolateAWSEnv clears the environment variables and shared files through
// which AWS configuration and credentials could reach the test.
func isolateAWSEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{
		EndpointEnv, "AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
	} {
		t.Setenv(k, "")
	}
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
}

func start(t *testing.T, optFns ...func(*Options)) *Endpoint {
	t.Helper()
	e, err := Start(context.Background(), optFns...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func accessKey(t *testing.T, e *Endpoint) string {
	t.Helper()
	creds, err := e.Config().Credentials.Retrieve(context.Background())
	if err != nil {
		t.Fatalf("retrieving credentials: %v", err)
	}
	return creds.AccessKeyID
}

// tableExists reports whether c's endpoint has the table.
func tableExists(t *testing.T, c *dynamodb.Client, table string) bool {
	t.Helper()
	_, err := c.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	var rnf *types.ResourceNotFoundException
	if errors.As(err, &rnf) {
		return false
	}
	if err != nil {
		t.Fatalf("DescribeTable: %v", err)
	}
	return true
}

func TestStartWithoutEndpointEnvServesTheEmbeddedEmulatorOnLoopback(t *testing.T) {
	isolateAWSEnv(t)
	e := start(t)
	u, err := url.Parse(e.URL)
	if err != nil {
		t.Fatal(err)
	}
	if !e.Embedded || u.Scheme != "http" || u.Hostname() != "127.0.0.1" || u.Port() == "0" {
		t.Errorf("Embedded = %v, URL = %s; want an embedded http://127.0.0.1:<port>", e.Embedded, e.URL)
	}
	if got := e.Config().Region; got != DefaultRegion {
		t.Errorf("region = %q, want %q", got, DefaultRegion)
	}
	if got := accessKey(t, e); got != LocalAccessKeyID {
		t.Errorf("access key = %q, want %q", got, LocalAccessKeyID)
	}
	createTable(t, e.Client, "t", "")
	if !tableExists(t, e.Client, "t") {
		t.Error("table missing after CreateTable")
	}
}

func TestStartUsesTheEndpointNamedByEndpointEnv(t *testing.T) {
	other := embedded(t)
	isolateAWSEnv(t)
	t.Setenv(EndpointEnv, other.URL)
	e := ForTest(t)
	if e.Embedded || e.URL != other.URL {
		t.Fatalf("Embedded = %v, URL = %s; want the external %s", e.Embedded, e.URL, other.URL)
	}
	createTable(t, e.Client, "t", "")
	if !tableExists(t, other.Client, "t") {
		t.Error("table created through the external endpoint is not on the server named by the variable")
	}
	if !tableExists(t, dynamodb.NewFromConfig(e.Config()), "t") {
		t.Error("client built from Config does not reach the endpoint")
	}
	if got := accessKey(t, e); got != LocalAccessKeyID {
		t.Errorf("access key = %q, want the local dummy %q for a loopback endpoint without configured credentials", got, LocalAccessKeyID)
	}
	if got := e.Config().Region; got != DefaultRegion {
		t.Errorf("region = %q, want %q", got, DefaultRegion)
	}
}

func TestStartKeepsConfiguredCredentialsAndRegionForAnExternalEndpoint(t *testing.T) {
	other := embedded(t)
	isolateAWSEnv(t)
	t.Setenv(EndpointEnv, strings.Replace(other.URL, "127.0.0.1", "localhost", 1))
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDCONFIGURED")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "eu-west-1")
	e := ForTest(t)
	if got := accessKey(t, e); got != "AKIDCONFIGURED" {
		t.Errorf("access key = %q, want the configured AKIDCONFIGURED", got)
	}
	if got := e.Config().Region; got != "eu-west-1" {
		t.Errorf("region = %q, want eu-west-1", got)
	}
	createTable(t, e.Client, "t", "")
	if !tableExists(t, other.Client, "t") {
		t.Error("table not created through the localhost URL")
	}
}

func TestStartWithEmbeddedIgnoresEndpointEnv(t *testing.T) {
	other := embedded(t)
	isolateAWSEnv(t)
	t.Setenv(EndpointEnv, other.URL)
	e := ForTest(t, func(o *Options) { o.Embedded = true })
	if !e.Embedded || e.URL == other.URL {
		t.Fatalf("Embedded = %v, URL = %s; want a new embedded emulator", e.Embedded, e.URL)
	}
	createTable(t, e.Client, "t", "")
	if tableExists(t, other.Client, "t") {
		t.Error("table went to the server named by the variable")
	}
	// The SDK lets the variable override a configured BaseEndpoint; the
	// embedded Config must not let it.
	if !tableExists(t, dynamodb.NewFromConfig(e.Config()), "t") {
		t.Error("client built from Config does not reach the embedded emulator")
	}
}

func TestStartRejectsAnEndpointEnvThatIsNotAnAbsoluteHTTPURL(t *testing.T) {
	isolateAWSEnv(t)
	for _, bad := range []string{"localhost:8000", "ftp://localhost:8000", "http://", "://x"} {
		t.Setenv(EndpointEnv, bad)
		if e, err := Start(context.Background()); err == nil {
			e.Close()
			t.Errorf("%s=%q: Start succeeded, want an error", EndpointEnv, bad)
		}
	}
}

func TestStartHonoursRegionOptionAndAWSRegion(t *testing.T) {
	isolateAWSEnv(t)
	t.Setenv("AWS_REGION", "ap-south-1")
	if got := start(t).Config().Region; got != "ap-south-1" {
		t.Errorf("region = %q, want AWS_REGION ap-south-1", got)
	}
	if got := start(t, func(o *Options) { o.Region = "sa-east-1" }).Config().Region; got != "sa-east-1" {
		t.Errorf("region = %q, want the option sa-east-1", got)
	}
}

func TestCloseStopsTheEmbeddedEmulatorAndIsIdempotent(t *testing.T) {
	isolateAWSEnv(t)
	e, err := Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	createTable(t, e.Client, "t", "")
	for i := range 3 {
		if err := e.Close(); err != nil {
			t.Errorf("Close #%d: %v", i+1, err)
		}
	}
	if resp, err := http.Post(e.URL, "application/x-amz-json-1.0", strings.NewReader("{}")); err == nil {
		resp.Body.Close()
		t.Error("server still answers after Close")
	}
}

func TestCloseOfAnExternalEndpointLeavesItsServerRunning(t *testing.T) {
	other := embedded(t)
	isolateAWSEnv(t)
	t.Setenv(EndpointEnv, other.URL)
	e := start(t)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	createTable(t, other.Client, "t", "")
	if !tableExists(t, e.Client, "t") {
		t.Error("external endpoint unreachable after Close")
	}
}

func TestNewClientReachesTheSameEndpointAndAppliesTheOptions(t *testing.T) {
	e := embedded(t)
	var calls atomic.Int32
	c := e.NewClient(func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("count", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				calls.Add(1)
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
		})
	})
	createTable(t, c, "t", "")
	if !tableExists(t, e.Client, "t") {
		t.Error("table created with NewClient is not visible to Client")
	}
	if calls.Load() != 1 {
		t.Errorf("middleware saw %d calls, want 1", calls.Load())
	}
}

func TestForTestClosesTheEndpointWhenTheTestEnds(t *testing.T) {
	var e *Endpoint
	t.Run("inner", func(t *testing.T) { e = embedded(t) })
	if resp, err := http.Post(e.URL, "application/x-amz-json-1.0", strings.NewReader("{}")); err == nil {
		resp.Body.Close()
		t.Error("endpoint still answers after its test ended")
	}
}

func TestTableNameIsPrefixedUniqueAndValid(t *testing.T) {
	valid := regexp.MustCompile(`^idemkey-test-[A-Za-z0-9_.-]+$`)
	seen := map[string]bool{}
	for _, prefix := range []string{"ledger", "", "a b/c:d", strings.Repeat("x", 300)} {
		for range 100 {
			name := TableName(prefix)
			if seen[name] {
				t.Fatalf("TableName(%q) repeated %s", prefix, name)
			}
			seen[name] = true
			if !valid.MatchString(name) || len(name) > 255 {
				t.Errorf("TableName(%q) = %q, not a valid prefixed table name", prefix, name)
			}
		}
	}
	if name := TableName("a b/c"); !strings.HasPrefix(name, "idemkey-test-a-b-c-") {
		t.Errorf("TableName(%q) = %q, want the cleaned prefix a-b-c", "a b/c", name)
	}
	if name := TableName(""); strings.Count(name, "-") != 3 {
		t.Errorf("TableName(\"\") = %q, want idemkey-test-<tag>-<n>", name)
	}
}
