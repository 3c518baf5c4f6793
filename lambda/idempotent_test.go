package lambda_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	idemlambda "github.com/idemkey/idemkey/lambda"
)

type order struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
	// Attempt changes between deliveries of one order.
	Attempt int `json:"attempt"`
}

type receipt struct {
	OrderID   string `json:"order_id"`
	Amount    int    `json:"amount"`
	Execution int64  `json:"execution"`
}

// orders is a typed function that stages one effect per execution. An
// order whose attempt is negative waits for release after signalling
// entered (the attempt is not part of the fingerprint byID uses); one
// whose amount is negative fails.
type orders struct {
	env      *env
	executed atomic.Int64
	entered  chan string
	release  chan struct{}
}

var errRefused = errors.New("refused: negative amount")

func newOrders(e *env) *orders {
	return &orders{env: e, entered: make(chan string, 4), release: make(chan struct{})}
}

func (o *orders) handle(ctx context.Context, in order) (receipt, error) {
	if in.Attempt < 0 {
		o.entered <- in.ID
		<-o.release
	}
	n := o.executed.Add(1)
	if err := o.env.stage(ctx, fmt.Sprintf("%s#%d", in.ID, n), in.ID); err != nil {
		return receipt{}, err
	}
	if in.Amount < 0 {
		return receipt{}, errRefused
	}
	return receipt{OrderID: in.ID, Amount: in.Amount, Execution: n}, nil
}

// ordersName is the name byID gives the function.
const ordersName = "orders"

// ordersScope is the scope of byID's records: the function's, for its one
// caller.
var ordersScope = idemlambda.FunctionScope(ordersName, "")

// byID names the function "orders", with one caller; it keys orders by id
// and fingerprints them without the attempt.
func byID(e *env) func(*idemlambda.FuncOptions[order]) {
	return func(o *idemlambda.FuncOptions[order]) {
		o.Name = ordersName
		o.SingleCaller = true
		o.Key = func(in order) (string, error) { return in.ID, nil }
		o.Fingerprint = func(in order) ([]byte, error) {
			return []byte(fmt.Sprintf(`{"id":%q,"amount":%d}`, in.ID, in.Amount)), nil
		}
		o.Now = e.clock.Now
	}
}

func TestIdempotentRunsOnceThenReplaysTheTypedOutput(t *testing.T) {
	e := newEnv(t)
	o := newOrders(e)
	fn := idemlambda.Idempotent(e.store, o.handle, byID(e))
	ctx := context.Background()

	first, err := fn(ctx, order{ID: "o-1", Amount: 1250, Attempt: 1})
	require.NoError(t, err)
	assert.Equal(t, receipt{OrderID: "o-1", Amount: 1250, Execution: 1}, first)

	again, err := fn(ctx, order{ID: "o-1", Amount: 1250, Attempt: 2})
	require.NoError(t, err)
	assert.Equal(t, first, again)
	assert.Equal(t, int64(1), o.executed.Load())
	assert.Equal(t, 1, e.effectsFor("o-1"))

	rec, err := e.store.Get(ctx, ordersScope, "o-1")
	require.NoError(t, err)
	assert.Equal(t, idemlambda.InvokeMethod, rec.Method)
	assert.Equal(t, ordersName, rec.Path, "the record's path is the function's name")
	assert.JSONEq(t, `{"order_id":"o-1","amount":1250,"execution":1}`, string(rec.Response.Body))
}

// A key that is not valid UTF-8 (a raw hash, say) cannot be a DynamoDB
// string: the SDK would replace its invalid bytes, and two such keys would
// share one record. It is refused, and nothing runs.
func TestIdempotentRefusesAKeyThatIsNotUTF8(t *testing.T) {
	e := newEnv(t)
	o := newOrders(e)
	fn := idemlambda.Idempotent(e.store, o.handle, byID(e))
	ctx := context.Background()
	for _, id := range []string{"order-\xff", "order-\xfe"} {
		out, err := fn(ctx, order{ID: id, Amount: 10})
		var ke *idemlambda.KeyError
		require.ErrorAs(t, err, &ke, "key %q", id)
		assert.ErrorIs(t, err, dynamostore.ErrInvalidRequest)
		assert.Zero(t, out)
	}
	assert.Zero(t, o.executed.Load(), "nothing ran")
}

func TestIdempotentDefaultFingerprintIsTheCanonicalJSONOfTheInput(t *testing.T) {
	e := newEnv(t)
	o := newOrders(e)
	fn := idemlambda.Idempotent(e.store, func(ctx context.Context, in map[string]any) (string, error) {
		o.executed.Add(1)
		return "done", nil
	}, func(f *idemlambda.FuncOptions[map[string]any]) {
		f.Name, f.SingleCaller = "maps", true
		f.Key = func(in map[string]any) (string, error) { return fmt.Sprint(in["id"]), nil }
	})
	ctx := context.Background()
	_, err := fn(ctx, map[string]any{"id": "m-1", "amount": 1.0, "tags": []any{"a"}})
	require.NoError(t, err)
	out, err := fn(ctx, map[string]any{"tags": []any{"a"}, "amount": 1, "id": "m-1"})
	require.NoError(t, err)
	assert.Equal(t, "done", out)
	assert.Equal(t, int64(1), o.executed.Load())
	_, err = fn(ctx, map[string]any{"id": "m-1", "amount": 2, "tags": []any{"a"}})
	assert.ErrorIs(t, err, idemkey.ErrMismatch)
}

func TestIdempotentRefusesAKeyReusedForAnotherInput(t *testing.T) {
	e := newEnv(t)
	o := newOrders(e)
	fn := idemlambda.Idempotent(e.store, o.handle, byID(e))
	ctx := context.Background()
	_, err := fn(ctx, order{ID: "o-2", Amount: 10})
	require.NoError(t, err)
	out, err := fn(ctx, order{ID: "o-2", Amount: 11})
	assert.ErrorIs(t, err, idemkey.ErrMismatch)
	assert.Zero(t, out)
	assert.Equal(t, int64(1), o.executed.Load())
}

func TestIdempotentDuplicateWhileInFlightFails(t *testing.T) {
	e := newEnv(t)
	o := newOrders(e)
	fn := idemlambda.Idempotent(e.store, o.handle, byID(e))
	ctx := context.Background()
	done := make(chan error, 1)
	go func() { _, err := fn(ctx, order{ID: "o-3", Amount: 1, Attempt: -1}); done <- err }()
	await(t, o.entered, done)

	_, err := fn(ctx, order{ID: "o-3", Amount: 1})
	assert.ErrorIs(t, err, idemkey.ErrInFlight)
	var inFlight *idemkey.InFlightError
	assert.True(t, errors.As(err, &inFlight))

	close(o.release)
	require.NoError(t, <-done)
	assert.Equal(t, int64(1), o.executed.Load())
}

func TestIdempotentFunctionErrorReleasesTheKey(t *testing.T) {
	e := newEnv(t)
	o := newOrders(e)
	fn := idemlambda.Idempotent(e.store, o.handle, byID(e))
	ctx := context.Background()

	_, err := fn(ctx, order{ID: "o-4", Amount: -1})
	assert.Same(t, errRefused, err, "the function's error is returned as is")
	_, err = e.store.Get(ctx, ordersScope, "o-4")
	assert.ErrorIs(t, err, dynamostore.ErrNotFound, "the key is released")
	assert.Equal(t, 0, e.effectsFor("o-4"), "nothing staged is written")

	_, err = fn(ctx, order{ID: "o-4", Amount: -1})
	assert.Same(t, errRefused, err, "a retry runs the function again")
	assert.Equal(t, int64(2), o.executed.Load())
}

func TestIdempotentPanicReleasesTheKeyAndIsReraised(t *testing.T) {
	e := newEnv(t)
	fn := idemlambda.Idempotent(e.store, func(context.Context, order) (receipt, error) { panic("boom") }, byID(e))
	assert.PanicsWithValue(t, "boom", func() { _, _ = fn(context.Background(), order{ID: "o-5"}) })
	_, err := e.store.Get(context.Background(), ordersScope, "o-5")
	assert.ErrorIs(t, err, dynamostore.ErrNotFound)
}

// TestIdempotentLeaseFollowsTheDeadline reads the record of a claim in
// flight: its lock expires at the deadline plus the margin, by the store's
// clock, which the wrapper shares.
func TestIdempotentLeaseFollowsTheDeadline(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name     string
		margin   time.Duration
		deadline time.Duration // from the clock's now; 0: none
		want     time.Duration // lock expiry from the clock's now
	}{
		{"default margin", 0, 30 * time.Second, 30*time.Second + idemlambda.DefaultLeaseMargin},
		{"configured margin", 1500 * time.Millisecond, 14 * time.Minute, 14*time.Minute + 1500*time.Millisecond},
		{"no deadline: the store's lease", 0, 0, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOrders(e)
			fn := idemlambda.Idempotent(e.store, o.handle, byID(e), func(f *idemlambda.FuncOptions[order]) { f.LeaseMargin = tc.margin })
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, e.clock.Now().Add(tc.deadline))
				defer cancel()
			}
			id := "lease-" + tc.name
			done := make(chan error, 1)
			go func() { _, err := fn(ctx, order{ID: id, Attempt: -1}); done <- err }()
			await(t, o.entered, done)
			rec, err := e.store.Get(context.Background(), ordersScope, id)
			require.NoError(t, err)
			want := e.clock.Now().Add(tc.want)
			assert.True(t, want.Equal(rec.LockExpires), "lock expires %v, want %v", rec.LockExpires, want)
			close(o.release)
			require.NoError(t, <-done)
		})
	}
}

// TestTimedOutInvocationFreesItsKeyAfterDeadlineAndMargin: an invocation
// that never returns (Lambda stopped it at its deadline) holds its key
// until the deadline plus the margin, and no longer; if it ever resumes,
// it commits nothing.
func TestTimedOutInvocationFreesItsKeyAfterDeadlineAndMargin(t *testing.T) {
	e := newEnv(t)
	o := newOrders(e)
	fn := idemlambda.Idempotent(e.store, o.handle, byID(e))
	deadline := e.clock.Now().Add(10 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	stuck := make(chan error, 1)
	go func() { _, err := fn(ctx, order{ID: "o-timeout", Amount: 5, Attempt: -1}); stuck <- err }()
	await(t, o.entered, stuck) // the first invocation holds the key and gets no further

	e.clock.Advance(10*time.Second + idemlambda.DefaultLeaseMargin - time.Millisecond)
	_, err := fn(context.Background(), order{ID: "o-timeout", Amount: 5})
	assert.ErrorIs(t, err, idemkey.ErrInFlight, "until deadline + margin the key is held")

	e.clock.Advance(2 * time.Millisecond)
	out, err := fn(context.Background(), order{ID: "o-timeout", Amount: 5})
	require.NoError(t, err, "after deadline + margin the retry takes the key over")
	assert.Equal(t, int64(1), out.Execution)

	close(o.release)
	assert.ErrorIs(t, <-stuck, idemkey.ErrLockLost, "the stale invocation commits nothing")
	assert.Equal(t, 1, e.effectsFor("o-timeout"))
	replay, err := fn(context.Background(), order{ID: "o-timeout", Amount: 5})
	require.NoError(t, err)
	assert.Equal(t, out, replay)
}

func TestIdempotentOutputOfAnotherTypeDoesNotDecode(t *testing.T) {
	e := newEnv(t)
	o := newOrders(e)
	ctx := context.Background()
	_, err := idemlambda.Idempotent(e.store, o.handle, byID(e))(ctx, order{ID: "o-6", Amount: 1})
	require.NoError(t, err)
	asNumber := idemlambda.Idempotent(e.store, func(context.Context, order) (int, error) { return 0, nil }, byID(e))
	_, err = asNumber(ctx, order{ID: "o-6", Amount: 1})
	assert.ErrorIs(t, err, idemlambda.ErrOutputUndecodable)
}

func TestIdempotentWithoutAKeyCallsNothing(t *testing.T) {
	e := newEnv(t)
	o := newOrders(e)
	fn := idemlambda.Idempotent(e.store, o.handle, byID(e), func(f *idemlambda.FuncOptions[order]) {
		f.Key = func(in order) (string, error) {
			if in.Amount == 0 {
				return "", errors.New("no amount")
			}
			return "", nil
		}
	})
	e.calls.Reset()
	_, err := fn(context.Background(), order{ID: "o-7"})
	assert.ErrorIs(t, err, idemlambda.ErrNoKey)
	_, err = fn(context.Background(), order{ID: "o-7", Amount: 1})
	assert.ErrorIs(t, err, idemlambda.ErrNoKey)
	assert.Equal(t, 0, e.calls.Total())
	assert.Equal(t, int64(0), o.executed.Load())
}

func TestIdempotentScopesSeparateKeys(t *testing.T) {
	e := newEnv(t)
	o := newOrders(e)
	fn := idemlambda.Idempotent(e.store, o.handle, byID(e), func(f *idemlambda.FuncOptions[order]) {
		f.SingleCaller = false // callers told apart by the scope below
		f.Scope = func(_ context.Context, in order) (string, error) { return fmt.Sprint("tenant-", in.Attempt), nil }
	})
	ctx := context.Background()
	a, err := fn(ctx, order{ID: "o-8", Amount: 1, Attempt: 1})
	require.NoError(t, err)
	b, err := fn(ctx, order{ID: "o-8", Amount: 1, Attempt: 2})
	require.NoError(t, err)
	assert.NotEqual(t, a.Execution, b.Execution)
	_, err = e.store.Get(ctx, idemlambda.FunctionScope(ordersName, "tenant-2"), "o-8")
	assert.NoError(t, err)
}

func TestIdempotentRefusesIncompleteConfiguration(t *testing.T) {
	e := newEnv(t)
	o := newOrders(e)
	assert.Panics(t, func() { idemlambda.Idempotent[order, receipt](e.store, o.handle) }, "no Key")
	assert.Panics(t, func() { idemlambda.Idempotent(nil, o.handle, byID(e)) })
	assert.Panics(t, func() { idemlambda.Idempotent[order, receipt](e.store, nil, byID(e)) })
	assert.PanicsWithValue(t, "lambda: FuncOptions sets both Scope and SingleCaller", func() {
		idemlambda.Idempotent(e.store, o.handle, byID(e), func(f *idemlambda.FuncOptions[order]) { f.Scope = shop })
	}, "a scope and the single-caller statement contradict each other")
}

func TestIdempotentOutputTooLargeToStoreIsNotRunAgain(t *testing.T) {
	e := newEnv(t)
	small := dynamostore.New(e.client, e.keys, func(o *dynamostore.Options) { o.MaxItemBytes = 2048 })
	runs := 0
	big := make([]byte, 8000)
	_, _ = rand.Read(big) // incompressible
	fn := idemlambda.Idempotent(small, func(context.Context, order) ([]byte, error) { runs++; return big, nil }, byID(e))
	ctx := context.Background()
	out, err := fn(ctx, order{ID: "o-big"})
	require.NoError(t, err)
	assert.Equal(t, big, out, "the first invocation returns its output")
	_, err = fn(ctx, order{ID: "o-big"})
	assert.ErrorIs(t, err, idemlambda.ErrOutputOmitted)
	assert.Equal(t, 1, runs)
}
