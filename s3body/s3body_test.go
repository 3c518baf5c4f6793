package s3body_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/s3test"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/s3body"
	"github.com/idemkey/idemkey/txn"
)

// counting wraps the real S3 client: it counts calls by operation and can
// fail PutObject with a planned error.
type counting struct {
	*s3.Client
	mu      sync.Mutex
	calls   map[string]int
	failPut error
	read    int64 // bytes read from GetObject bodies
}

func (c *counting) count(op string) {
	c.mu.Lock()
	c.calls[op]++
	c.mu.Unlock()
}

func (c *counting) n(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[op]
}

func (c *counting) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.calls {
		n += v
	}
	return n
}

func (c *counting) reset() {
	c.mu.Lock()
	c.calls = map[string]int{}
	c.read = 0
	c.mu.Unlock()
}

func (c *counting) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	c.count("PutObject")
	if c.failPut != nil {
		return nil, c.failPut
	}
	return c.Client.PutObject(ctx, in, o...)
}

func (c *counting) GetObject(ctx context.Context, in *s3.GetObjectInput, o ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	c.count("GetObject")
	out, err := c.Client.GetObject(ctx, in, o...)
	if err == nil {
		out.Body = &countingBody{ReadCloser: out.Body, c: c}
	}
	return out, err
}

func (c *counting) DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, o ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	c.count("DeleteObject")
	return c.Client.DeleteObject(ctx, in, o...)
}

type countingBody struct {
	io.ReadCloser
	c *counting
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.c.mu.Lock()
	b.c.read += int64(n)
	b.c.mu.Unlock()
	return n, err
}

// env is one test's DynamoDB endpoint and tables, S3 bucket and clock.
type env struct {
	ddb     *dynamodb.Client
	table   string
	effects string
	raw     *s3.Client
	bucket  string
	s3      *counting
	bodies  *s3body.Store
	clock   *ddbtest.Clock
}

func newEnv(t *testing.T) *env { return newBenchEnv(t) }

func newBenchEnv(t testing.TB) *env {
	t.Helper()
	ep := localstack.ForTest(t)
	e := &env{ddb: ep.Client, table: localstack.TableName("bodies"), effects: localstack.TableName("effects"),
		clock: ddbtest.NewClock(time.Unix(1_800_000_000, 0))}
	require.NoError(t, dynamostore.EnsureTable(context.Background(), ep.Client, e.table, 0))
	ddbtest.DeleteOnCleanup(t, ep.Client, e.table)
	ddbtest.CreateTable(t, ep.Client, e.effects, "id")
	e.raw, e.bucket = s3test.ForTest(t)
	e.s3 = &counting{Client: e.raw, calls: map[string]int{}}
	e.bodies = s3body.New(e.s3, e.bucket)
	return e
}

func (e *env) store(optFns ...func(*dynamostore.Options)) *dynamostore.Store {
	return dynamostore.New(e.ddb, e.table, append([]func(*dynamostore.Options){func(o *dynamostore.Options) {
		o.Now, o.Bodies = e.clock.Now, e.bodies
	}}, optFns...)...)
}

// serve returns a guarded handler that answers every POST with body and
// stages one effect item, and the count of its executions.
func (e *env) serve(store *dynamostore.Store, body []byte, stage func(*txn.Tx)) (http.Handler, *int) {
	runs := new(int)
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*runs++
		tx, _ := txn.FromContext(r.Context())
		if stage != nil {
			stage(tx)
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(body)
	})
	return handler.New(store, func(o *handler.Options) { o.Guard.Now, o.Scope = e.clock.Now, bearer })(app), runs
}

func (e *env) stageEffect(id string) func(*txn.Tx) {
	return func(tx *txn.Tx) {
		tx.Put(ddbtypes.Put{TableName: &e.effects, Item: map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: id}}})
	}
}

func (e *env) effectExists(t *testing.T, id string) bool {
	out, err := e.ddb.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: &e.effects, ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: id}}})
	require.NoError(t, err)
	return len(out.Item) > 0
}

// bearer is the caller: the request's Authorization header (a test only).
func bearer(r *http.Request) (string, error) { return r.Header.Get("Authorization"), nil }

func post(h http.Handler, key string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/pay", strings.NewReader(`{"amount":1}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Idempotency-Key", key)
	r.Header.Set("Authorization", "Bearer tenant-a")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func randomBody(t *testing.T, n int) []byte {
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}

func problemType(t *testing.T, w *httptest.ResponseRecorder) string {
	var p struct{ Type string }
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &p), w.Body.String())
	return p.Type[strings.LastIndex(p.Type, "#problem-")+len("#problem-"):]
}

func (e *env) onlyObject(t *testing.T) string {
	keys := s3test.Keys(t, e.raw, e.bucket)
	require.Len(t, keys, 1)
	require.True(t, strings.HasPrefix(keys[0], s3body.DefaultPrefix), keys[0])
	return keys[0]
}

func (e *env) overwrite(t *testing.T, key string, body []byte) {
	_, err := e.raw.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &e.bucket, Key: &key, Body: bytes.NewReader(body)})
	require.NoError(t, err)
}

func TestLargeResponseIsStoredInS3AndReplayedByteIdentical(t *testing.T) {
	e := newEnv(t)
	body := randomBody(t, 1<<20)
	h, runs := e.serve(e.store(), body, e.stageEffect("a"))

	first := post(h, "k1")
	require.Equal(t, http.StatusOK, first.Code, first.Body.String())
	assert.Equal(t, 1, e.s3.n("PutObject"), "one PUT per large response, before the commit")
	assert.Equal(t, 0, e.s3.n("GetObject"))
	e.onlyObject(t)

	e.s3.reset()
	replay := post(h, "k1")
	require.Equal(t, http.StatusOK, replay.Code, replay.Body.String())
	assert.Equal(t, "true", replay.Header().Get(handler.ReplayedHeader))
	assert.Empty(t, replay.Header().Get(handler.BodyOmittedHeader))
	assert.Equal(t, "application/octet-stream", replay.Header().Get("Content-Type"))
	assert.True(t, bytes.Equal(body, replay.Body.Bytes()), "the replay's body is the first response's, byte for byte")
	assert.Equal(t, 1, *runs)
	assert.Equal(t, map[string]int{"GetObject": 1}, e.s3.calls, "one GET per replay, nothing else")
}

func TestSmallResponseStaysInTheRecord(t *testing.T) {
	e := newEnv(t)
	h, _ := e.serve(e.store(), []byte(`{"ok":true}`), nil)
	require.Equal(t, http.StatusOK, post(h, "k").Code)
	require.Equal(t, http.StatusOK, post(h, "k").Code)
	assert.Empty(t, e.s3.calls, "a body under BodyAbove costs no S3 call")
}

func TestCorruptObjectAnswersReplayCorruptNeverTheWrongBody(t *testing.T) {
	for name, corrupt := range map[string]func([]byte) []byte{
		"same size": func(b []byte) []byte { c := bytes.Clone(b); c[len(c)/2] ^= 1; return c },
		"truncated": func(b []byte) []byte { return b[:len(b)-1] },
		"longer":    func(b []byte) []byte { return append(bytes.Clone(b), 'x') },
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			body := randomBody(t, 256<<10)
			h, runs := e.serve(e.store(), body, nil)
			require.Equal(t, http.StatusOK, post(h, "k").Code)
			wrong := corrupt(body)
			e.overwrite(t, e.onlyObject(t), wrong)

			w := post(h, "k")
			assert.Equal(t, http.StatusInternalServerError, w.Code)
			assert.Equal(t, "replay-corrupt", problemType(t, w))
			assert.NotContains(t, w.Body.String(), string(wrong[:64]))
			assert.Empty(t, w.Header().Get(handler.ReplayedHeader))
			assert.Equal(t, 1, *runs, "a corrupt replay does not execute again")
			assert.LessOrEqual(t, e.s3.read, int64(len(body))+1, "the reader reads at most the declared size and one byte")
		})
	}
}

func TestMissingObjectAnswersReplayCorrupt(t *testing.T) {
	e := newEnv(t)
	h, runs := e.serve(e.store(), randomBody(t, 100<<10), nil)
	require.Equal(t, http.StatusOK, post(h, "k").Code)
	key := e.onlyObject(t)
	_, err := e.raw.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: &e.bucket, Key: &key})
	require.NoError(t, err)

	w := post(h, "k")
	assert.Equal(t, http.StatusInternalServerError, w.Code)
	assert.Equal(t, "replay-corrupt", problemType(t, w))
	assert.Equal(t, 1, *runs)
	_, err = e.store().Get(context.Background(), "Bearer tenant-a", "k")
	assert.ErrorIs(t, err, dynamostore.ErrReplayCorrupt)
	assert.ErrorIs(t, err, dynamostore.ErrCorruptRecord)
}

func TestS3OutageFailsTheRequestRetryableAndCommitsNoEffect(t *testing.T) {
	e := newEnv(t)
	e.s3.failPut = &smithy.GenericAPIError{Code: "SlowDown", Message: "injected", Fault: smithy.FaultServer}
	h, runs := e.serve(e.store(), randomBody(t, 1<<20), e.stageEffect("outage"))

	w := post(h, "k")
	assert.Equal(t, http.StatusServiceUnavailable, w.Code, w.Body.String())
	assert.Equal(t, "store-unavailable", problemType(t, w))
	assert.NotEmpty(t, w.Header().Get("Retry-After"))
	assert.False(t, e.effectExists(t, "outage"), "no effect is committed without its body")
	assert.Equal(t, 1, e.s3.n("PutObject"))

	e.s3.failPut = nil
	w = post(h, "k")
	assert.Equal(t, http.StatusOK, w.Code, "the key was released: the retry executes")
	assert.Empty(t, w.Header().Get(handler.ReplayedHeader))
	assert.Equal(t, 2, *runs)
	assert.True(t, e.effectExists(t, "outage"))
}

func TestS3AccessDeniedIsPermanentAndNamesItsClass(t *testing.T) {
	e := newEnv(t)
	e.s3.failPut = &smithy.GenericAPIError{Code: "AccessDenied", Message: "injected", Fault: smithy.FaultClient}
	h, _ := e.serve(e.store(), randomBody(t, 1<<20), e.stageEffect("denied"))
	w := post(h, "k")
	assert.Equal(t, http.StatusInternalServerError, w.Code)
	assert.Equal(t, "access-denied", problemType(t, w))
	assert.Empty(t, w.Header().Get("Retry-After"))
	assert.False(t, e.effectExists(t, "denied"))
}

func TestMissingBucketIsPermanentAndNamesItsClass(t *testing.T) {
	e := newEnv(t)
	store := dynamostore.New(e.ddb, e.table, func(o *dynamostore.Options) {
		o.Bodies = s3body.New(e.raw, e.bucket+"-absent")
	})
	h, _ := e.serve(store, randomBody(t, 1<<20), e.stageEffect("nobucket"))
	w := post(h, "k")
	assert.Equal(t, http.StatusInternalServerError, w.Code, w.Body.String())
	assert.Equal(t, "missing-bucket", problemType(t, w))
	assert.False(t, e.effectExists(t, "nobucket"))
}

func TestFailedCommitDeletesItsObject(t *testing.T) {
	e := newEnv(t)
	cond := func(tx *txn.Tx) {
		tx.Put(ddbtypes.Put{TableName: &e.effects, ConditionExpression: aws.String("attribute_not_exists(id)"),
			Item: map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: "taken"}}})
	}
	_, err := e.ddb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: &e.effects,
		Item: map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: "taken"}}})
	require.NoError(t, err)
	h, _ := e.serve(e.store(), randomBody(t, 1<<20), cond)

	w := post(h, "k")
	assert.Equal(t, http.StatusConflict, w.Code, w.Body.String())
	assert.Equal(t, "effect-condition-failed", problemType(t, w))
	assert.Equal(t, 1, e.s3.n("PutObject"))
	assert.Equal(t, 1, e.s3.n("DeleteObject"), "the object of a commit DynamoDB refused is deleted")
	assert.Empty(t, s3test.Keys(t, e.raw, e.bucket))
}

func TestLostLockDeletesItsObject(t *testing.T) {
	e := newEnv(t)
	store := e.store()
	ctx := context.Background()
	fp := sha256.Sum256([]byte("r"))
	req := dynamostore.Request{Scope: "s", Key: "k", Method: "POST", Path: "/", Fingerprint: fp[:]}
	c, err := store.Claim(ctx, req)
	require.NoError(t, err)
	e.clock.Advance(dynamostore.DefaultLease + time.Second)
	_, err = store.Claim(ctx, req) // takes the expired lock over
	require.NoError(t, err)

	_, err = store.Commit(ctx, c, dynamostore.Response{Status: 200, Body: randomBody(t, 1<<20)}, nil)
	require.ErrorIs(t, err, dynamostore.ErrLockLost)
	assert.Equal(t, map[string]int{"PutObject": 1, "DeleteObject": 1}, e.s3.calls)
	assert.Empty(t, s3test.Keys(t, e.raw, e.bucket))
}

func TestSweeperDeletesTheObjectOfAnEvictedRecordAndCountsIt(t *testing.T) {
	e := newEnv(t)
	h, _ := e.serve(e.store(), randomBody(t, 1<<20), nil)
	require.Equal(t, http.StatusOK, post(h, "k").Code)
	require.Equal(t, http.StatusOK, post(h, "other").Code)
	require.Len(t, s3test.Keys(t, e.raw, e.bucket), 2)
	e.clock.Advance(dynamostore.DefaultRetention + dynamostore.DefaultLease + time.Minute)
	e.s3.reset()

	sw := dynamostore.NewSweeper(e.ddb, e.table, func(o *dynamostore.SweepOptions) { o.Now, o.Bodies = e.clock.Now, e.bodies })
	rep, err := sw.Sweep(context.Background(), "")
	require.NoError(t, err)
	assert.Equal(t, int64(2), rep.Evicted)
	assert.Equal(t, int64(2), rep.BodiesDeleted)
	assert.Equal(t, map[string]int{"DeleteObject": 2}, e.s3.calls)
	assert.Empty(t, s3test.Keys(t, e.raw, e.bucket))
	js, err := json.Marshal(rep)
	require.NoError(t, err)
	assert.Contains(t, string(js), `"bodiesDeleted":2`)
}

func TestTwoTenantsWithOneKeyAndBodyGetTwoObjects(t *testing.T) {
	e := newEnv(t)
	body := randomBody(t, 200<<10)
	h, _ := e.serve(e.store(), body, nil)
	require.Equal(t, http.StatusOK, post(h, "k").Code)
	r := httptest.NewRequest(http.MethodPost, "/pay", strings.NewReader(`{"amount":1}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Idempotency-Key", "k")
	r.Header.Set("Authorization", "Bearer tenant-b")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	require.Equal(t, http.StatusOK, w.Code)
	keys := s3test.Keys(t, e.raw, e.bucket)
	require.Len(t, keys, 2, "one object per record, never shared")
	assert.NotEqual(t, keys[0][:len(s3body.DefaultPrefix)+32], keys[1][:len(s3body.DefaultPrefix)+32])
}

func TestReaderRefusesABodyOverItsLimit(t *testing.T) {
	e := newEnv(t)
	h, _ := e.serve(e.store(), randomBody(t, 1<<20+1), nil)
	require.Equal(t, http.StatusOK, post(h, "k").Code)
	e.s3.reset()

	reader := e.store(func(o *dynamostore.Options) { o.MaxBodyBytes = 1 << 20 })
	_, err := reader.Get(context.Background(), "Bearer tenant-a", "k")
	assert.ErrorIs(t, err, dynamostore.ErrReplayCorrupt)
	assert.Equal(t, 0, e.s3.n("GetObject"), "a body over the reader's limit is not fetched")
}

func TestWriterStoresABodyOverItsLimitAsOmitted(t *testing.T) {
	e := newEnv(t)
	h, _ := e.serve(e.store(func(o *dynamostore.Options) { o.MaxBodyBytes = 1 << 20 }), randomBody(t, 1<<20+1), nil)
	require.Equal(t, http.StatusOK, post(h, "k").Code)
	w := post(h, "k")
	assert.Equal(t, "1048577", w.Header().Get(handler.BodyOmittedHeader))
	assert.Equal(t, 0, e.s3.n("PutObject"))
}

func TestOneTripStoresTheBodyBeforeItsWrite(t *testing.T) {
	e := newEnv(t)
	body := randomBody(t, 1<<20)
	store := e.store()
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body) })
	h := handler.New(store, func(o *handler.Options) {
		o.Guard.Now, o.Guard.Mode, o.Scope = e.clock.Now, idemkey.OneTrip, bearer
	})(app)
	require.Equal(t, http.StatusOK, post(h, "k").Code)
	assert.Equal(t, 1, e.s3.n("PutObject"))
	w := post(h, "k")
	assert.Equal(t, "true", w.Header().Get(handler.ReplayedHeader))
	assert.True(t, bytes.Equal(body, w.Body.Bytes()))
	// The second run's CommitFirst found the first's record: its own object
	// was deleted, the first's stays.
	assert.Equal(t, 2, e.s3.n("PutObject"))
	assert.Equal(t, 1, e.s3.n("DeleteObject"))
	assert.Len(t, s3test.Keys(t, e.raw, e.bucket), 1)
}

func TestConstructionRefusesUnsafeBodyOptions(t *testing.T) {
	e := newEnv(t)
	assert.PanicsWithValue(t, "s3body: New needs an S3 client and a bucket name", func() { s3body.New(e.raw, "") })
	assert.Panics(t, func() { e.store(func(o *dynamostore.Options) { o.BodyAbove = 400 * 1024 }) })
	assert.Panics(t, func() { e.store(func(o *dynamostore.Options) { o.MaxBodyBytes = dynamostore.MaxBodyBytes + 1 }) })
	assert.NotPanics(t, func() {
		dynamostore.New(e.ddb, e.table, func(o *dynamostore.Options) { o.MaxItemBytes = 2048 })
	}, "without Bodies the body options have no effect")
	assert.NotPanics(t, func() { e.store(func(o *dynamostore.Options) { o.MaxItemBytes = 2048 }) }, "the default BodyAbove fits a small budget")
}

// BenchmarkLargeReplay measures a replay of a stored 1 MiB and 16 MiB
// response through the HTTP middleware and prints, per size, the S3 calls
// per replay and the milliseconds per MiB replayed.
func BenchmarkLargeReplay(b *testing.B) {
	for _, mib := range []int{1, 16} {
		b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) {
			e := newBenchEnv(b)
			body := make([]byte, mib<<20)
			_, _ = rand.Read(body)
			h, _ := e.serve(e.store(), body, nil)
			if w := post(h, "k"); w.Code != http.StatusOK {
				b.Fatalf("first: %d %s", w.Code, w.Body)
			}
			e.s3.reset()
			b.SetBytes(int64(len(body)))
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				if w := post(h, "k"); w.Code != http.StatusOK || w.Body.Len() != len(body) {
					b.Fatalf("replay: %d", w.Code)
				}
			}
			elapsed := time.Since(start)
			b.StopTimer()
			calls := float64(e.s3.total()) / float64(b.N)
			msPerMiB := float64(elapsed.Microseconds()) / 1000 / float64(b.N) / float64(mib)
			b.ReportMetric(calls, "s3_calls/op")
			fmt.Printf("large_replay size=%dMiB s3_calls=%.0f replay_ms_per_mib=%.2f\n", mib, calls, msPerMiB)
		})
	}
}

func TestTheCacheKeepsNoBodyFromTheBodyStore(t *testing.T) {
	e := newEnv(t)
	body := randomBody(t, 1<<20)
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body) })
	cache := idemkey.NewCache(16, time.Hour)
	h := handler.New(e.store(), func(o *handler.Options) { o.Guard.Now, o.Guard.Cache, o.Scope = e.clock.Now, cache, bearer })(app)
	require.Equal(t, http.StatusOK, post(h, "k").Code)
	for range 2 {
		w := post(h, "k")
		require.Equal(t, "true", w.Header().Get(handler.ReplayedHeader))
		require.True(t, bytes.Equal(body, w.Body.Bytes()))
	}
	assert.Equal(t, 0, cache.Len(), "a 1 MiB body is not held in memory")
	assert.Equal(t, 2, e.s3.n("GetObject"), "each replay reads it from S3")
}
