package lambda_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/waitclock"
	idemlambda "github.com/idemkey/idemkey/lambda"
)

// waitHalfAMinute waits up to 30 s (the env's lease is a minute) for a
// record in flight.
func waitHalfAMinute(o *idemlambda.FuncOptions[events.SQSMessage]) {
	o.Guard.WaitInFlight = 30 * time.Second
}

// TestSQSBatchRecordWaitsForItsCopyInFlightElsewhere: with WaitInFlight, a
// record in flight in another execution environment waits for it instead
// of failing the batch, and is not executed again.
func TestSQSBatchRecordWaitsForItsCopyInFlightElsewhere(t *testing.T) {
	e := newEnv(t)
	c := newConsumer(e)
	// Two execution environments: two Guards over one table.
	envA := idemlambda.SQSBatch(e.store, c.handle, ordersQueue, waitHalfAMinute)
	envB := idemlambda.SQSBatch(e.store, c.handle, ordersQueue, waitHalfAMinute)
	first := make(chan events.SQSEventResponse, 1)
	go func() { resp, _ := envA(context.Background(), batchOf(t, 1, "", "block-1")); first <- resp }()
	await(t, c.entered, first)

	slept := make(chan struct{}, 1)
	ctx := waitclock.With(context.Background(), waitclock.Notify(slept, waitclock.Timer(time.Now)))
	second := make(chan events.SQSEventResponse, 1)
	go func() { resp, _ := envB(ctx, batchOf(t, 2, "", "block-1", "m5")); second <- resp }()
	ddbtest.Within(t, slept) // block-1 of the second batch waits
	close(c.release)
	assert.Empty(t, failures(ddbtest.Within(t, first)))
	assert.Empty(t, failures(ddbtest.Within(t, second)), "the waiting record succeeded with its copy")
	assert.Equal(t, 1, c.runsOf("block-1"))
	assert.Equal(t, 1, c.runsOf("m5"))
	assert.Equal(t, 1, e.effectsFor("block-1"))
}

// TestIdempotentWaitEndsBeforeTheInvocationsDeadline: a duplicate
// invocation waits at most until WaitDeadlineMargin before its deadline,
// then fails with an *InFlightError while the invocation still has time
// to answer.
func TestIdempotentWaitEndsBeforeTheInvocationsDeadline(t *testing.T) {
	e := newEnv(t)
	entered, release := make(chan string, 1), make(chan struct{})
	var runs atomic.Int64
	charge := idemlambda.Idempotent(e.store, func(ctx context.Context, in chargeIn) (string, error) {
		if runs.Add(1) == 1 {
			entered <- in.ID
			<-release
		}
		return "charged " + in.ID, nil
	}, func(o *idemlambda.FuncOptions[chargeIn]) {
		o.Name, o.SingleCaller = "charges", true
		o.Key = func(in chargeIn) (string, error) { return in.ID, nil }
		o.Guard.WaitInFlight = 30 * time.Second
	})
	first := make(chan string, 1)
	go func() { out, _ := charge(context.Background(), chargeIn{ID: "c1"}); first <- out }()
	await(t, entered, first)

	ctx, cancel := context.WithTimeout(context.Background(), idemkey.WaitDeadlineMargin+300*time.Millisecond)
	defer cancel()
	_, err := charge(ctx, chargeIn{ID: "c1"})
	var inFlight *idemlambda.InFlightError
	require.ErrorAs(t, err, &inFlight)
	assert.NoError(t, ctx.Err(), "the wait ended before the invocation's deadline")

	// A duplicate with time to wait gets the first invocation's result.
	slept := make(chan struct{}, 1)
	wctx := waitclock.With(context.Background(), waitclock.Notify(slept, waitclock.Timer(time.Now)))
	dup := make(chan string, 1)
	go func() {
		out, err := charge(wctx, chargeIn{ID: "c1"})
		assert.NoError(t, err)
		dup <- out
	}()
	ddbtest.Within(t, slept)
	close(release)
	assert.Equal(t, "charged c1", ddbtest.Within(t, first))
	assert.Equal(t, "charged c1", ddbtest.Within(t, dup))
	assert.Equal(t, int64(1), runs.Load())
}

type chargeIn struct{ ID string }

// TestWaitingDuplicateAnswersAlikeBehindAPIGatewayAndNetHTTP: with
// WaitInFlight, a duplicate sent while its first request runs waits and
// answers the first's response as a replay, the same behind net/http and
// behind the REST front door.
func TestWaitingDuplicateAnswersAlikeBehindAPIGatewayAndNetHTTP(t *testing.T) {
	e := newEnv(t)
	build := func(scope string, slept chan struct{}) (http.Handler, chan struct{}, chan struct{}) {
		var n atomic.Int64
		entered, release := make(chan struct{}, 1), make(chan struct{})
		inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 1 {
				entered <- struct{}{}
				<-release
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"execution":%d}`, n.Load())
		})
		mw := handler.New(e.store, func(o *handler.Options) {
			o.Scope = func(*http.Request) (string, error) { return scope, nil }
			o.Guard.WaitInFlight = 30 * time.Second
		})(inner)
		// Every request's waits tell the test that they began.
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mw.ServeHTTP(w, r.WithContext(waitclock.With(r.Context(), waitclock.Woken(slept))))
		}), entered, release
	}
	netSlept, lamSlept := make(chan struct{}, 1), make(chan struct{}, 1)
	netH, netEntered, netRelease := build("net", netSlept)
	srv := httptest.NewServer(netH)
	t.Cleanup(srv.Close)
	lamH, lamEntered, lamRelease := build("lambda", lamSlept)
	// A failed test lets the first requests end (cleanups run last first).
	t.Cleanup(func() {
		for _, r := range []chan struct{}{netRelease, lamRelease} {
			select {
			case <-r:
			default:
				close(r)
			}
		}
	})
	raw := sample(t, "apigw-request.json")
	body := `{}`
	viaNet := func() reply {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/hello/world?name=me", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(handler.HeaderName, "slow")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
	}
	viaLambda := func() reply {
		return invokeV1(t, context.Background(), lamH, raw, call{key: "slow", body: &body})
	}
	waitedFor := func(send func() reply, entered, slept, release chan struct{}) (dup, first reply) {
		firstDone, dupDone := make(chan reply, 1), make(chan reply, 1)
		go func() { firstDone <- send() }()
		ddbtest.Within(t, entered)
		go func() { dupDone <- send() }()
		ddbtest.Within(t, slept)
		close(release)
		return ddbtest.Within(t, dupDone), ddbtest.Within(t, firstDone)
	}
	netDup, netFirst := waitedFor(viaNet, netEntered, netSlept, netRelease)
	lamDup, lamFirst := waitedFor(viaLambda, lamEntered, lamSlept, lamRelease)
	for _, side := range []struct {
		name       string
		dup, first reply
	}{{"net/http", netDup, netFirst}, {"lambda", lamDup, lamFirst}} {
		assert.Equal(t, http.StatusCreated, side.dup.status, side.name)
		assert.Equal(t, side.first.body, side.dup.body, side.name)
		assert.Equal(t, []string{"true"}, side.dup.header.Values(handler.ReplayedHeader), side.name)
	}
	assert.Equal(t, netDup.status, lamDup.status)
	assert.Equal(t, netDup.body, lamDup.body)
	for _, name := range []string{"Content-Type", handler.ReplayedHeader, "Retry-After"} {
		assert.Equal(t, netDup.header.Values(name), lamDup.header.Values(name), name)
	}
}
