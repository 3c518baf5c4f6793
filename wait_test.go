package idemkey_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/waitclock"
	"github.com/idemkey/idemkey/localstack"
)

// waitTable is one key table reached by two processes: each its own
// client (with its own GetItem count) and store.
type waitTable struct {
	t        testing.TB
	ep       *localstack.Endpoint
	table    string
	claimGet int // GetItem calls of a claim that finds the key in flight (the emulator's fallback read)
}

func newWaitTable(t testing.TB) *waitTable {
	t.Helper()
	ep := localstack.ForTest(t)
	w := &waitTable{t: t, ep: ep, table: localstack.TableName("wait")}
	require.NoError(t, dynamostore.EnsureTable(context.Background(), ep.Client, w.table, 0))
	ddbtest.DeleteOnCleanup(t, ep.Client, w.table)
	// What one claim of a key in flight reads on this backend: 0 where
	// DynamoDB returns the item with the failed condition, 1 where it
	// does not.
	calls := ddbtest.NewCounter()
	store := dynamostore.New(ep.NewClient(calls.Install), w.table)
	r := waitReq("s", "probe", "body")
	c, err := store.Claim(context.Background(), r)
	require.NoError(t, err)
	calls.Reset()
	again, err := store.Claim(context.Background(), r)
	require.NoError(t, err)
	require.Equal(t, dynamostore.InFlight, again.Result)
	w.claimGet = calls.Count("GetItem")
	require.NoError(t, store.Release(context.Background(), c))
	return w
}

// process returns a Guard of its own over the table, and its call count.
func (w *waitTable) process(optFns ...func(*idemkey.Options)) (*idemkey.Guard, *ddbtest.Counter) {
	calls := ddbtest.NewCounter()
	return idemkey.New(dynamostore.New(w.ep.NewClient(calls.Install), w.table), optFns...), calls
}

func waitReq(scope, key, body string) idemkey.Request {
	sum := sha256.Sum256([]byte(body))
	return idemkey.Request{Scope: scope, Key: key, Method: "POST", Path: "/pay", Fingerprint: sum[:]}
}

// testClock is a Guard clock that moves only when a wait sleeps.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) advanceTo(t time.Time) {
	c.mu.Lock()
	if t.After(c.t) {
		c.t = t
	}
	c.mu.Unlock()
}

// sleeper is a waitclock.Sleep that counts the sleeps of the waits under
// it and lets the test decide what each one does.
type sleeper struct {
	n  atomic.Int64
	do func(ctx context.Context, n int64, until time.Time, wake <-chan struct{})
}

// ctx returns ctx whose waits sleep with s. A sleep for another waiter's
// read returns when that read ends, uncounted.
func (s *sleeper) ctx(ctx context.Context) context.Context {
	return waitclock.With(ctx, func(ctx context.Context, until time.Time, wake <-chan struct{}, reading bool) {
		if reading {
			select {
			case <-wake:
			case <-ctx.Done():
			}
			return
		}
		s.do(ctx, s.n.Add(1), until, wake)
	})
}

// wokenOnly returns a sleeper on a clock that never moves: each sleep
// ends when its wait is woken, and all is closed by the n-th.
func wokenOnly(n int64) (all chan struct{}, s *sleeper) {
	all = make(chan struct{})
	return all, &sleeper{do: func(ctx context.Context, i int64, _ time.Time, wake <-chan struct{}) {
		if i == n {
			close(all)
		}
		select {
		case <-wake:
		case <-ctx.Done():
		}
	}}
}

// blocked runs fn's first copy under g until release is closed, and
// returns when its claim holds the key; done delivers its answer.
func blocked(t *testing.T, g *idemkey.Guard, r idemkey.Request, resp idemkey.Response, fail error) (release chan struct{}, done chan error) {
	release, done, claimed := make(chan struct{}), make(chan error, 1), make(chan struct{})
	go func() {
		_, err := g.Do(context.Background(), r, func(context.Context) (idemkey.Response, error) {
			close(claimed)
			<-release
			return resp, fail
		})
		done <- err
	}()
	select {
	case <-claimed:
	case err := <-done:
		t.Fatalf("the first copy did not run: %v", err)
	}
	return release, done
}

// bounded is the context of the waiting duplicates of a test: it ends
// with the test (a test whose wait never ends fails in within), and its
// deadline is beyond the waits' one minute bound.
func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// twoProcesses returns a table, the Guard of a process that runs first
// copies, and the Guard of another that waits up to a minute on clock,
// with its call count.
func twoProcesses(t *testing.T, optFns ...func(*idemkey.Options)) (w *waitTable, first, g *idemkey.Guard, calls *ddbtest.Counter, clock *testClock) {
	w = newWaitTable(t)
	first, _ = w.process()
	clock = &testClock{t: time.Now()}
	g, calls = w.process(append([]func(*idemkey.Options){func(o *idemkey.Options) { o.WaitInFlight = time.Minute; o.Now = clock.Now }}, optFns...)...)
	return w, first, g, calls, clock
}

type waited struct {
	res *idemkey.Result
	err error
}

// duplicates runs n copies of r under g at once, none of which must
// execute, and returns their answers.
func duplicates(ctx context.Context, g *idemkey.Guard, r idemkey.Request, n int, ran *atomic.Int64) chan waited {
	out := make(chan waited, n)
	for range n {
		go func() {
			res, err := g.Do(ctx, r, func(context.Context) (idemkey.Response, error) {
				ran.Add(1)
				return idemkey.Response{Status: 201, Body: []byte("the duplicate ran")}, nil
			})
			out <- waited{res, err}
		}()
	}
	return out
}

// TestWaitInFlightSixteenLocalDuplicatesShareOneReadAfterTheCompletion:
// sixteen duplicates waiting in the process that runs the first copy are
// woken by its commit and answered by one read, all with its response.
func TestWaitInFlightSixteenLocalDuplicatesShareOneReadAfterTheCompletion(t *testing.T) {
	w := newWaitTable(t)
	clock := &testClock{t: time.Now()}
	g, calls := w.process(func(o *idemkey.Options) { o.WaitInFlight = time.Minute; o.Now = clock.Now })
	r := waitReq("tenant-a", "k", "pay 10")
	release, done := blocked(t, g, r, idemkey.Response{Status: 201, Body: []byte("paid once")}, nil)

	// The clock stands still: a wait reads only when woken.
	allWaiting, s := wokenOnly(16)
	var ran atomic.Int64
	out := duplicates(s.ctx(bounded(t)), g, r, 16, &ran)
	ddbtest.Within(t, allWaiting)
	claimGets := calls.Count("GetItem")
	assert.Equal(t, 16*w.claimGet, claimGets, "no wait read before the completion")
	close(release)
	require.NoError(t, ddbtest.Within(t, done))
	for range 16 {
		a := ddbtest.Within(t, out)
		require.NoError(t, a.err)
		assert.True(t, a.res.Replayed)
		assert.Equal(t, "paid once", string(a.res.Response.Body))
	}
	assert.Zero(t, ran.Load(), "no duplicate executed")
	assert.Equal(t, 1, calls.Count("GetItem")-claimGets, "the sixteen waits read the record once, after the local commit")
}

// TestWaitInFlightReadsAtMostMaxWaitReadsThenAnswersInFlight: sixteen
// duplicates in another process than the first copy, which never
// completes within the wait, share MaxWaitReads reads, then get the
// in-flight answer.
func TestWaitInFlightReadsAtMostMaxWaitReadsThenAnswersInFlight(t *testing.T) {
	w, first, g, calls, clock := twoProcesses(t)
	r := waitReq("tenant-a", "k", "pay 10")
	release, done := blocked(t, first, r, idemkey.Response{Status: 201}, nil)

	allWaiting := make(chan struct{})
	s := &sleeper{do: func(ctx context.Context, n int64, until time.Time, _ <-chan struct{}) {
		if n == 16 {
			close(allWaiting)
		}
		select {
		case <-allWaiting:
		case <-ctx.Done():
		}
		clock.advanceTo(until)
	}}
	var ran atomic.Int64
	out := duplicates(s.ctx(bounded(t)), g, r, 16, &ran)
	for range 16 {
		a := ddbtest.Within(t, out)
		var inFlight *idemkey.InFlightError
		require.ErrorAs(t, a.err, &inFlight)
		assert.Positive(t, inFlight.RetryAfter)
	}
	assert.Zero(t, ran.Load())
	assert.Equal(t, idemkey.MaxWaitReads, calls.Count("GetItem")-16*w.claimGet,
		"sixteen waits of one key in one process read MaxWaitReads times in all")
	assert.Equal(t, 16, calls.Count("PutItem"), "one claim per duplicate, no other write")
	close(release)
	require.NoError(t, ddbtest.Within(t, done))
}

// TestWaitInFlightReplaysACompletionInAnotherProcess: the first copy
// completes in another process after the wait's second read; the third
// read finds its record and the waiter replays it; its Event tells the
// wait and counts the reads.
func TestWaitInFlightReplaysACompletionInAnotherProcess(t *testing.T) {
	events := make(chan idemkey.Event, 1)
	w, first, g, calls, clock := twoProcesses(t, func(o *idemkey.Options) {
		o.Observer = idemkey.ObserverFunc(func(_ context.Context, e idemkey.Event) { events <- e })
	})
	r := waitReq("tenant-a", "k", "pay 10")
	release, done := blocked(t, first, r, idemkey.Response{Status: 201, Body: []byte("paid in process 1")}, nil)

	s := &sleeper{do: func(_ context.Context, n int64, until time.Time, _ <-chan struct{}) {
		if n == 3 { // after two reads that found the key in flight
			close(release)
			assert.NoError(t, <-done)
		}
		clock.advanceTo(until)
	}}
	var ran atomic.Int64
	a := ddbtest.Within(t, duplicates(s.ctx(bounded(t)), g, r, 1, &ran))
	require.NoError(t, a.err)
	assert.True(t, a.res.Replayed)
	assert.True(t, a.res.Stored)
	assert.Equal(t, "paid in process 1", string(a.res.Response.Body))
	assert.Zero(t, ran.Load())
	assert.Equal(t, 3, calls.Count("GetItem")-w.claimGet)
	e := ddbtest.Within(t, events)
	assert.Equal(t, idemkey.OutcomeReplay, e.Outcome)
	assert.Positive(t, e.Waited)
	assert.Equal(t, 1+3, e.StoreCalls, "the claim and the wait's three reads")
}

// TestWaitInFlightAnswersInFlightWhenTheFirstCopyFails: the first copy
// fails and releases the key; the waiter does not execute in its place
// but gets the retryable in-flight answer.
func TestWaitInFlightAnswersInFlightWhenTheFirstCopyFails(t *testing.T) {
	w := newWaitTable(t)
	g, calls := w.process(func(o *idemkey.Options) { o.WaitInFlight = time.Minute; o.Now = (&testClock{t: time.Now()}).Now })
	r := waitReq("tenant-a", "k", "pay 10")
	boom := errors.New("card processor down")
	release, done := blocked(t, g, r, idemkey.Response{}, boom)
	waiting, s := wokenOnly(1)
	var ran atomic.Int64
	out := duplicates(s.ctx(bounded(t)), g, r, 1, &ran)
	ddbtest.Within(t, waiting)
	before := calls.Count("GetItem")
	close(release)
	assert.ErrorIs(t, ddbtest.Within(t, done), boom)
	a := ddbtest.Within(t, out)
	assert.ErrorIs(t, a.err, idemkey.ErrInFlight)
	assert.Zero(t, ran.Load(), "the waiter did not execute in the failed copy's place")
	assert.Equal(t, 1, calls.Count("GetItem")-before, "the release woke the wait, which read once")

	// The client's retry claims the key and executes.
	res, err := g.Do(context.Background(), r, ok("the retry"))
	require.NoError(t, err)
	assert.False(t, res.Replayed)
}

// TestWaitInFlightNeverReplaysAnotherRequestsResponse: while a waiter
// waits, the first copy fails and another request (another body) takes
// the key and completes; the waiter gets ErrMismatch, not its response.
func TestWaitInFlightNeverReplaysAnotherRequestsResponse(t *testing.T) {
	_, first, g, _, clock := twoProcesses(t)
	r := waitReq("tenant-a", "k", "pay 10")
	release, done := blocked(t, first, r, idemkey.Response{}, errors.New("failed"))
	s := &sleeper{do: func(_ context.Context, n int64, until time.Time, _ <-chan struct{}) {
		if n == 2 { // after one read that found the key in flight
			close(release)
			<-done
			_, err := first.Do(context.Background(), waitReq("tenant-a", "k", "pay 99"), ok("paid 99"))
			assert.NoError(t, err)
		}
		clock.advanceTo(until)
	}}
	var ran atomic.Int64
	a := ddbtest.Within(t, duplicates(s.ctx(bounded(t)), g, r, 1, &ran))
	assert.ErrorIs(t, a.err, idemkey.ErrMismatch)
	assert.Nil(t, a.res)
	assert.Zero(t, ran.Load())
}

// TestWaitInFlightNeverSharesAWaitAcrossScopes: two tenants' duplicates
// of one key wait in one process; each is answered with its own tenant's
// response.
func TestWaitInFlightNeverSharesAWaitAcrossScopes(t *testing.T) {
	w := newWaitTable(t)
	g, _ := w.process(func(o *idemkey.Options) { o.WaitInFlight = time.Minute; o.Now = (&testClock{t: time.Now()}).Now })
	ra, rb := waitReq("tenant-a", "k", "pay 10"), waitReq("tenant-b", "k", "pay 10")
	releaseA, doneA := blocked(t, g, ra, idemkey.Response{Status: 201, Body: []byte("tenant a's")}, nil)
	releaseB, doneB := blocked(t, g, rb, idemkey.Response{Status: 201, Body: []byte("tenant b's")}, nil)
	waiting, s := wokenOnly(2)
	var ran atomic.Int64
	outA := duplicates(s.ctx(bounded(t)), g, ra, 1, &ran)
	outB := duplicates(s.ctx(bounded(t)), g, rb, 1, &ran)
	ddbtest.Within(t, waiting)
	close(releaseA)
	require.NoError(t, ddbtest.Within(t, doneA))
	a := ddbtest.Within(t, outA)
	require.NoError(t, a.err)
	assert.Equal(t, "tenant a's", string(a.res.Response.Body))
	select {
	case b := <-outB:
		t.Fatalf("tenant b's waiter answered before its own first copy completed: %+v", b)
	default:
	}
	close(releaseB)
	require.NoError(t, ddbtest.Within(t, doneB))
	b := ddbtest.Within(t, outB)
	require.NoError(t, b.err)
	assert.Equal(t, "tenant b's", string(b.res.Response.Body))
	assert.Zero(t, ran.Load())
}

// TestWaitInFlightEndsBeforeTheContextsDeadline: a request whose context
// ends within WaitDeadlineMargin does not wait at all.
func TestWaitInFlightEndsBeforeTheContextsDeadline(t *testing.T) {
	w := newWaitTable(t)
	g, calls := w.process(func(o *idemkey.Options) { o.WaitInFlight = time.Minute })
	r := waitReq("tenant-a", "k", "pay 10")
	release, done := blocked(t, g, r, idemkey.Response{Status: 201}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), idemkey.WaitDeadlineMargin-50*time.Millisecond)
	defer cancel()
	before := calls.Count("GetItem")
	s := &sleeper{do: func(ctx context.Context, _ int64, _ time.Time, _ <-chan struct{}) { <-ctx.Done() }}
	var ran atomic.Int64
	a := ddbtest.Within(t, duplicates(s.ctx(ctx), g, r, 1, &ran))
	assert.ErrorIs(t, a.err, idemkey.ErrInFlight)
	assert.Zero(t, s.n.Load(), "no wait")
	assert.Equal(t, w.claimGet, calls.Count("GetItem")-before, "no wait read")
	close(release)
	require.NoError(t, ddbtest.Within(t, done))
}

// TestWaitInFlightIsRefusedWhenNegativeOrLongerThanTheLease: New refuses
// a bound that is a mistake or that would outlast the lock it waits for.
func TestWaitInFlightIsRefusedWhenNegativeOrLongerThanTheLease(t *testing.T) {
	store := dynamostore.New(dynamodb.New(dynamodb.Options{Region: "us-east-1"}), "t", func(o *dynamostore.Options) { o.Lease = time.Minute })
	assert.PanicsWithValue(t, "idemkey: New: negative Options.WaitInFlight (-1s): zero waits not at all, a positive bound waits up to it", func() {
		idemkey.New(store, func(o *idemkey.Options) { o.WaitInFlight = -time.Second })
	})
	assert.PanicsWithValue(t, "idemkey: New: Options.WaitInFlight 1m0.001s is longer than the store's Lease 1m0s: a wait beyond the lease outlasts the lock it waits for; lower WaitInFlight", func() {
		idemkey.New(store, func(o *idemkey.Options) { o.WaitInFlight = time.Minute + time.Millisecond })
	})
	assert.NotPanics(t, func() { idemkey.New(store, func(o *idemkey.Options) { o.WaitInFlight = time.Minute }) })
}
