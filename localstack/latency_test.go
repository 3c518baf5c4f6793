package localstack

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingClient counts the requests it is asked to send and sends them
// with the default transport.
type countingClient struct{ sent atomic.Int64 }

func (c *countingClient) Do(req *http.Request) (*http.Response, error) {
	c.sent.Add(1)
	return http.DefaultTransport.RoundTrip(req)
}

func TestLatencyDelaysAreSeededAndWithinJitter(t *testing.T) {
	lat := Latency{Base: 4 * time.Millisecond, Jitter: time.Millisecond, Seed: 7}
	a, b := newLatencyClient(nil, lat), newLatencyClient(nil, lat)
	other := newLatencyClient(nil, Latency{Base: lat.Base, Jitter: lat.Jitter, Seed: 8})
	var sum time.Duration
	differs := false
	const n = 10_000
	for range n {
		d := a.draw()
		require.Equal(t, d, b.draw(), "one seed, one sequence")
		if other.draw() != d {
			differs = true
		}
		require.GreaterOrEqual(t, d, 3*time.Millisecond)
		require.LessOrEqual(t, d, 5*time.Millisecond)
		sum += d
	}
	assert.True(t, differs, "another seed gives another sequence")
	assert.InDelta(t, float64(lat.Base), float64(sum/n), float64(50*time.Microsecond), "the mean is Base")

	zero := newLatencyClient(nil, Latency{Base: 0, Jitter: time.Second, Seed: 1})
	for range 100 {
		assert.GreaterOrEqual(t, zero.draw(), time.Duration(0), "never negative")
	}
}

func TestLatencyCallWhoseContextHasEndedIsNeverSent(t *testing.T) {
	next := &countingClient{}
	c := newLatencyClient(next, Latency{Base: time.Hour, Seed: 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:1/", nil)
	require.NoError(t, err)
	_, err = c.Do(req)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, int64(0), next.sent.Load(), "the request never left the client")
}

func TestLatencyHoldsAnAnswerForWhatRemainsOfTheDrawnDuration(t *testing.T) {
	const d = 4 * time.Millisecond
	assert.Equal(t, 3*time.Millisecond, holdFor(d, time.Millisecond, 0), "the endpoint's time counts toward the call")
	assert.Equal(t, 2*time.Millisecond, holdFor(d, time.Millisecond, time.Millisecond), "shortened by the mean lateness")
	assert.LessOrEqual(t, holdFor(d, 5*time.Millisecond, 0), time.Duration(0), "a slower endpoint is not held on top")

	// A call to an endpoint that answers at once takes the drawn duration
	// (a lower bound: a loaded machine only makes it longer), less at
	// most the lateness estimate.
	const base = 30 * time.Millisecond
	c := newLatencyClient(instantClient{}, Latency{Base: base, Seed: 1})
	req, err := http.NewRequest(http.MethodPost, "http://in-process/", nil)
	require.NoError(t, err)
	for range 3 {
		start := time.Now()
		resp, err := c.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.GreaterOrEqual(t, time.Since(start), base-maxLateness)
	}
}

// instantClient answers every request at once with an empty 200.
type instantClient struct{}

func (instantClient) Do(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
}

func TestLatencyOptionDelaysEveryCallOfTheEndpointsClients(t *testing.T) {
	next := &countingClient{}
	e := embedded(t, func(o *Options) {
		o.HTTPClient = next
		o.Latency = &Latency{Base: time.Hour, Seed: 1}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := e.Client.ListTables(ctx, &dynamodb.ListTablesInput{}, func(o *dynamodb.Options) {
		o.RetryMaxAttempts = 1
	})
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "the call waits out the latency: %v", err)
	assert.Equal(t, int64(1), next.sent.Load(), "sent at once through HTTPClient, its answer held")

	// Without a context deadline the same kind of client reaches the
	// emulator: a short latency, and the call succeeds through HTTPClient.
	fast := embedded(t, func(o *Options) {
		o.HTTPClient = next
		o.Latency = &Latency{Base: time.Microsecond, Seed: 1}
	})
	_, err = fast.Client.ListTables(context.Background(), &dynamodb.ListTablesInput{Limit: aws.Int32(1)})
	require.NoError(t, err)
	assert.Equal(t, int64(2), next.sent.Load(), "one more call, sent once through HTTPClient")
}

// The latency of an external endpoint's clients wraps the HTTP client the
// configuration resolved, so the certificates AWS_CA_BUNDLE names reach
// the transport that sends; a client without a transport to configure
// would make loading the configuration fail.
func TestLatencyOnAnExternalEndpointKeepsTheCABundlesCertificates(t *testing.T) {
	other := embedded(t)
	isolateAWSEnv(t)
	tls := httptest.NewTLSServer(http.NotFoundHandler())
	tls.Close()
	bundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tls.Certificate().Raw})
	path := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(path, bundle, 0o600))
	t.Setenv("AWS_CA_BUNDLE", path)
	t.Setenv(EndpointEnv, other.URL)

	e := ForTest(t, func(o *Options) { o.Latency = &Latency{Base: time.Microsecond, Seed: 1} })
	require.False(t, e.Embedded)
	lc, ok := e.Config().HTTPClient.(*latencyClient)
	require.True(t, ok, "the configuration's client is the latency's, got %T", e.Config().HTTPClient)
	bc, ok := lc.next.(*awshttp.BuildableClient)
	require.True(t, ok, "behind the latency, the SDK's client, got %T", lc.next)
	want := x509.NewCertPool()
	require.True(t, want.AppendCertsFromPEM(bundle))
	got := bc.GetTransport().TLSClientConfig
	require.NotNil(t, got)
	assert.True(t, want.Equal(got.RootCAs), "the sending transport trusts the bundle's certificate")

	createTable(t, e.Client, "t", "")
	assert.True(t, tableExists(t, other.Client, "t"), "the delayed client reaches the endpoint")
}

func TestStartRefusesANegativeLatency(t *testing.T) {
	_, err := Start(context.Background(), func(o *Options) { o.Embedded, o.Latency = true, &Latency{Base: -time.Millisecond} })
	if err == nil || !strings.Contains(err.Error(), "non-negative Base and Jitter") {
		t.Fatalf("Start = %v, want the refusal of a negative Base", err)
	}
}
