package localstack

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// EndpointEnv selects an external endpoint. It is the SDK's own variable,
// so it steers the clients code under test builds itself too.
const EndpointEnv = "AWS_ENDPOINT_URL_DYNAMODB"

// DefaultRegion is the region used when neither Options.Region, AWS_REGION
// nor (for external endpoints) the shared configuration names one.
const DefaultRegion = "us-east-1"

// The static credentials of the embedded emulator, and of a loopback
// external endpoint when none are configured.
const (
	LocalAccessKeyID     = "local"
	LocalSecretAccessKey = "local"
)

const shutdownTimeout = time.Second

// Endpoint is a DynamoDB endpoint and a client configured for it.
type Endpoint struct {
	Client   *dynamodb.Client // built from Config
	URL      string           // such as "http://127.0.0.1:41234"
	Embedded bool             // the emulator served by this process, not EndpointEnv's

	cfg aws.Config

	server    *http.Server // nil for external endpoints
	served    chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// Start returns a DynamoDB endpoint and a client for it; the caller must
// call Close.
//
// When EndpointEnv is set and Options.Embedded is not, the endpoint is that
// URL, configured by LoadConfig (so a loopback URL without configured
// credentials gets LocalAccessKeyID and LocalSecretAccessKey, and its
// clients send one request at a time), with Options.Region and
// Options.HTTPClient applied. Start checks only that the URL is an absolute
// http or https URL; it does not contact the endpoint.
//
// Otherwise Start serves a new embedded emulator (see NewHandler) on a
// random port of 127.0.0.1, with the static local credentials and the region from
// Options.Region, AWS_REGION or DefaultRegion; no shared AWS configuration
// is read. The SDK's retry settings are left at their defaults.
func Start(ctx context.Context, optFns ...func(*Options)) (*Endpoint, error) {
	o := resolveOptions(optFns)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if l := o.Latency; l != nil && (l.Base < 0 || l.Jitter < 0) {
		return nil, fmt.Errorf("localstack: Options.Latency needs a non-negative Base and Jitter, not %v and %v", l.Base, l.Jitter)
	}
	if raw := os.Getenv(EndpointEnv); raw != "" && !o.Embedded {
		return startExternal(ctx, raw, o)
	}
	return startEmbedded(o)
}

func startEmbedded(o Options) (*Endpoint, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("localstack: listening for the embedded emulator: %w", err)
	}
	h := NewHandler(func(p *Options) { *p = o })
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	e := &Endpoint{
		URL:      "http://" + ln.Addr().String(),
		Embedded: true,
		server:   srv,
		served:   make(chan struct{}),
	}
	go func() {
		defer close(e.served)
		_ = srv.Serve(ln) // returns http.ErrServerClosed after Close
	}()

	e.cfg = aws.Config{
		Region:       cmp.Or(o.Region, os.Getenv("AWS_REGION"), DefaultRegion),
		Credentials:  credentials.NewStaticCredentialsProvider(LocalAccessKeyID, LocalSecretAccessKey, ""),
		BaseEndpoint: aws.String(e.URL),
	}
	base := o.HTTPClient
	if o.InProcess {
		base = handlerClient{h: h}
	}
	e.cfg.HTTPClient = o.clientFor(base)
	e.Client = e.NewClient()
	return e, nil
}

func startExternal(ctx context.Context, raw string, o Options) (*Endpoint, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("localstack: %s=%q is not an absolute http or https URL", EndpointEnv, raw)
	}
	var loadOpts []func(*config.LoadOptions) error
	if o.Region != "" {
		loadOpts = append(loadOpts, config.WithRegion(o.Region))
	}
	if o.HTTPClient != nil {
		loadOpts = append(loadOpts, config.WithHTTPClient(o.HTTPClient))
	}
	cfg, err := LoadConfig(ctx, raw, loadOpts...)
	if err != nil {
		return nil, err
	}
	// Wrapping the resolved client keeps what loading gave its transport
	// (AWS_CA_BUNDLE's certificates).
	cfg.HTTPClient = o.clientFor(cfg.HTTPClient)
	e := &Endpoint{URL: raw, cfg: cfg}
	e.Client = e.NewClient()
	return e, nil
}

func hasCredentials(ctx context.Context, cfg aws.Config) bool {
	if cfg.Credentials == nil {
		return false
	}
	creds, err := cfg.Credentials.Retrieve(ctx)
	return err == nil && creds.HasKeys()
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Close stops the embedded emulator, waiting up to a second for requests in
// flight; its tables are lost. For an external endpoint it does nothing.
// Every call after the first returns the first's result.
func (e *Endpoint) Close() error {
	e.closeOnce.Do(func() {
		if e.server == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if err := e.server.Shutdown(ctx); err != nil {
			// An idle spare connection of the SDK counts as active for
			// 5 seconds: close what is left.
			e.closeErr = e.server.Close()
		}
		<-e.served
	})
	return e.closeErr
}

// NewClient returns a new DynamoDB client for the endpoint, built from
// Config with BaseEndpoint set to URL, and then optFns applied (for example
// to add middleware to APIOptions or to change the retryer).
func (e *Endpoint) NewClient(optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	pin := func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(e.URL) }
	return dynamodb.NewFromConfig(e.cfg, append([]func(*dynamodb.Options){pin}, optFns...)...)
}

// Config returns a copy of the aws.Config the endpoint's clients are built
// from. Its BaseEndpoint is URL, so it is meant for DynamoDB clients only:
// dynamodb.NewFromConfig(e.Config()) reaches the same endpoint as Client.
func (e *Endpoint) Config() aws.Config {
	return e.cfg.Copy()
}

// ForTest starts an endpoint as Start does and closes it with tb.Cleanup,
// failing tb when Start fails; it logs which endpoint it uses. Tables on an
// external endpoint outlive the test: name them with TableName and delete
// them.
func ForTest(tb testing.TB, optFns ...func(*Options)) *Endpoint {
	tb.Helper()
	e, err := Start(tb.Context(), optFns...)
	if err != nil {
		tb.Fatalf("localstack.Start: %v", err)
	}
	tb.Cleanup(func() {
		if err := e.Close(); err != nil {
			tb.Errorf("localstack: closing the endpoint: %v", err)
		}
	})
	kind := "external"
	if e.Embedded {
		kind = "embedded"
	}
	tb.Logf("localstack: using the %s DynamoDB endpoint %s", kind, e.URL)
	return e
}

// TablePrefix begins every name TableName returns.
const TablePrefix = "idemkey-test-"

var (
	processTag   = newProcessTag()
	tableCounter atomic.Uint64
)

func newProcessTag() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // never fails
	return hex.EncodeToString(b)
}

// TableName returns a table name unique in this process and very unlikely
// in another: "idemkey-test-<prefix>-<8 hex digits random per
// process>-<counter>", such as "idemkey-test-ledger-3f9a1c2e-7". Characters
// DynamoDB does not allow in table names become '-', an empty prefix is
// left out, and a long one is cut to keep the name within 255 characters.
func TableName(prefix string) string {
	suffix := fmt.Sprintf("%s-%d", processTag, tableCounter.Add(1))
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			return r
		}
		return '-'
	}, prefix)
	if room := 255 - len(TablePrefix) - len(suffix) - 1; len(clean) > room {
		clean = clean[:room]
	}
	if clean == "" {
		return TablePrefix + suffix
	}
	return TablePrefix + clean + "-" + suffix
}
