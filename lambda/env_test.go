package lambda_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/txn"
)

// env is a key table and an effects table on a real DynamoDB endpoint,
// with a store over the key table whose calls are counted.
type env struct {
	t       *testing.T
	ep      *localstack.Endpoint
	calls   *ddbtest.Counter
	client  *dynamodb.Client
	store   *dynamostore.Store
	clock   *ddbtest.Clock
	keys    string
	effects string
}

// newEnv creates the tables. The store's clock stands an hour ahead of
// the wall clock, so that deadlines set relative to it lie in the future
// for the contexts that carry them.
func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, ep: localstack.ForTest(t), calls: ddbtest.NewCounter(),
		clock: ddbtest.NewClock(time.Now().Add(time.Hour).Truncate(time.Millisecond))}
	e.client = e.ep.NewClient(e.calls.Install)
	e.keys, e.effects = localstack.TableName("lambda-keys"), localstack.TableName("lambda-effects")
	require.NoError(t, dynamostore.EnsureTable(context.Background(), e.ep.Client, e.keys, 0))
	ddbtest.DeleteOnCleanup(t, e.ep.Client, e.keys)
	ddbtest.CreateTable(t, e.ep.Client, e.effects, "id")
	e.store = dynamostore.New(e.client, e.keys, func(o *dynamostore.Options) {
		o.Now = e.clock.Now
		o.Lease = time.Minute
		o.Retention = time.Hour
	})
	return e
}

// stage stages one effect item with id on the Tx in ctx.
func (e *env) stage(ctx context.Context, id, key string) error {
	tx, ok := txn.FromContext(ctx)
	if !ok {
		return fmt.Errorf("no txn.Tx in the context")
	}
	tx.Put(types.Put{TableName: &e.effects, Item: map[string]types.AttributeValue{
		"id":  &types.AttributeValueMemberS{Value: id},
		"key": &types.AttributeValueMemberS{Value: key},
	}})
	return nil
}

// effectsFor counts the effect items written for key.
func (e *env) effectsFor(key string) int {
	e.t.Helper()
	return ddbtest.CountItems(e.t, e.ep.Client, e.effects, "key", key)
}

// payments is a payments-like inner handler: it stages one effect per
// execution and answers 201 with what it saw of the request as JSON. A
// request whose key starts with "block-" waits for release after
// signalling entered, so a test can hold it in flight; one whose key
// starts with "bin-" gets a PNG body instead.
type payments struct {
	env      *env
	executed atomic.Int64
	entered  chan string
	release  chan struct{}
	once     sync.Once
}

func newPayments(e *env) *payments {
	return &payments{env: e, entered: make(chan string, 16), release: make(chan struct{})}
}

// seen is what the inner handler reports of the request it served.
type seen struct {
	Execution int64    `json:"execution"`
	Method    string   `json:"method"`
	Path      string   `json:"path"`
	Query     string   `json:"query"`
	Host      string   `json:"host"`
	Body      string   `json:"body"`
	Cookie    string   `json:"cookie"`
	Multi     []string `json:"multi"`
}

func (p *payments) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get(handler.HeaderName)
	if strings.HasPrefix(key, "block-") {
		p.entered <- key
		<-p.release
	}
	n := p.executed.Add(1)
	body, _ := io.ReadAll(r.Body)
	if err := p.env.stage(r.Context(), fmt.Sprintf("%s#%d", key, n), key); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if strings.HasPrefix(key, "bin-") {
		w.Header().Set("Content-Type", "image/png")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(append([]byte("\x89PNG\r\n\x1a\n"), byte(n), 0xff, 0x00))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", fmt.Sprintf("/payments/%d", n))
	w.Header().Add("Set-Cookie", "a=1; Path=/")
	w.Header().Add("Set-Cookie", "b=2; Expires=Wed, 21 Oct 2026 07:28:00 GMT")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(seen{
		Execution: n, Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Host: r.Host,
		Body: string(body), Cookie: r.Header.Get("Cookie"), Multi: r.Header.Values("X-Multi"),
	})
}

// unblock releases every request held in flight.
func (p *payments) unblock() { p.once.Do(func() { close(p.release) }) }

// await waits until a held call signals entered. A call that finishes
// without entering fails the test instead of hanging it.
func await[T any](t *testing.T, entered <-chan string, done <-chan T) {
	t.Helper()
	select {
	case <-entered:
	case v := <-done:
		t.Fatalf("the call finished without reaching the handler: %v", v)
	}
}

// sample reads a sample event from testdata.
func sample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := readSample(name)
	require.NoError(t, err)
	return b
}

func readSample(name string) ([]byte, error) { return os.ReadFile(filepath.Join("testdata", name)) }

func TestSamplesAreTheModulesOwn(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/aws/aws-lambda-go").Output()
	require.NoError(t, err, "locating the aws-lambda-go module")
	dir := filepath.Join(strings.TrimSpace(string(out)), "events", "testdata")
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		want, err := os.ReadFile(filepath.Join(dir, filepath.Base(f)))
		require.NoError(t, err)
		assert.Equal(t, string(want), string(sample(t, filepath.Base(f))), f)
	}
}
