package grpc_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	idemgrpc "github.com/idemkey/idemkey/grpc"
	"github.com/idemkey/idemkey/grpc/internal/testpb"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/waitclock"
)

// waitingServer serves with Guard.WaitInFlight, each call's waits on
// sleep.
func waitingServer(t *testing.T, sleep waitclock.Sleep) *harness {
	return newHarness(t, func(s *setup) {
		s.server = append(s.server, func(o *idemgrpc.Options) { o.Guard.WaitInFlight = 30 * time.Second })
		s.outer = append(s.outer, func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
			return next(waitclock.With(ctx, sleep), req)
		})
	})
}

// TestDuplicateWhileInFlightWaitsAndIsAnsweredTheFirstsReply: with
// WaitInFlight, a duplicate call waits for the first and gets its reply.
func TestDuplicateWhileInFlightWaitsAndIsAnsweredTheFirstsReply(t *testing.T) {
	slept := make(chan struct{}, 1)
	h := waitingServer(t, waitclock.Woken(slept))
	c := h.dial("alice")
	started, release := h.blockNext()
	first, dup := make(chan answer, 1), make(chan answer, 1)
	go func() { first <- h.charge(c, "k1", &testpb.ChargeRequest{Account: "acc"}) }()
	ddbtest.Within(t, started)
	go func() { dup <- h.charge(c, "k1", &testpb.ChargeRequest{Account: "acc"}) }()
	ddbtest.Within(t, slept)
	release()
	a, d := ddbtest.Within(t, first), ddbtest.Within(t, dup)
	require.NoError(t, a.err)
	require.NoError(t, d.err)
	assert.Equal(t, a.reply.GetId(), d.reply.GetId())
	assert.Equal(t, a.reply.GetExecution(), d.reply.GetExecution())
	assert.EqualValues(t, 1, h.svc.executed.Load())
}

// TestWaitEndsBeforeTheCallsDeadline: a duplicate whose call deadline
// comes before the first completes is answered Aborted (IN_FLIGHT, with
// RetryInfo) before its deadline, not DeadlineExceeded.
func TestWaitEndsBeforeTheCallsDeadline(t *testing.T) {
	h := waitingServer(t, waitclock.Timer(time.Now))
	c := h.dial("alice")
	started, release := h.blockNext()
	defer release()
	go h.charge(c, "k1", &testpb.ChargeRequest{Account: "acc"})
	ddbtest.Within(t, started)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := c.Charge(withKey(ctx, "k1"), &testpb.ChargeRequest{Account: "acc"})
	a := answer{err: err}
	assert.Equal(t, codes.Aborted, a.code())
	assert.Equal(t, idemgrpc.ReasonInFlight, a.reason())
	_, ok := a.retryDelay()
	assert.True(t, ok)
}

// TestWaitedDuplicateMakesTheSameCallsAsHTTP: a first request and a
// duplicate that waits for it cost the same DynamoDB calls through the
// gRPC interceptor and through package handler, and both duplicates are
// answered with their first's response.
func TestWaitedDuplicateMakesTheSameCallsAsHTTP(t *testing.T) {
	grpcSlept, httpSlept := make(chan struct{}, 1), make(chan struct{}, 1)
	h := waitingServer(t, waitclock.Woken(grpcSlept))
	c := h.dial("alice")
	started, release := h.blockNext()
	h.calls.Reset()
	first, dup := make(chan answer, 1), make(chan answer, 1)
	go func() { first <- h.charge(c, "g1", &testpb.ChargeRequest{Account: "acc"}) }()
	ddbtest.Within(t, started)
	go func() { dup <- h.charge(c, "g1", &testpb.ChargeRequest{Account: "acc"}) }()
	ddbtest.Within(t, grpcSlept)
	release()
	a, d := ddbtest.Within(t, first), ddbtest.Within(t, dup)
	require.NoError(t, a.err)
	require.NoError(t, d.err)
	assert.Equal(t, a.reply.GetId(), d.reply.GetId())
	grpcCalls := h.calls.Total()
	assert.EqualValues(t, 1, h.svc.executed.Load(), "the gRPC duplicate did not execute")

	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	var n atomic.Int64
	mw := handler.New(h.store, func(o *handler.Options) {
		o.Scope = func(r *http.Request) (string, error) {
			return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), nil
		}
		o.Guard.WaitInFlight = 30 * time.Second
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			entered <- struct{}{}
			<-gate
		}
		_, _ = h.svc.charge(r.Context(), "web", 1) // stages the same effect
		w.WriteHeader(http.StatusCreated)
	}))
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mw.ServeHTTP(w, r.WithContext(waitclock.With(r.Context(), waitclock.Woken(httpSlept))))
	}))
	t.Cleanup(web.Close)
	h.calls.Reset()
	hfirst, hdup := make(chan int, 1), make(chan int, 1)
	go func() { hfirst <- post(t, web, "h1", `{}`) }()
	ddbtest.Within(t, entered)
	go func() { hdup <- post(t, web, "h1", `{}`) }()
	ddbtest.Within(t, httpSlept)
	close(gate)
	assert.Equal(t, 201, ddbtest.Within(t, hfirst))
	assert.Equal(t, 201, ddbtest.Within(t, hdup))
	assert.Equal(t, grpcCalls, h.calls.Total(), "gRPC and HTTP make the same calls")
	assert.Equal(t, 4, grpcCalls, "claim and commit, the duplicate's claim, and its one read")
	assert.EqualValues(t, 1, n.Load(), "the HTTP duplicate did not execute")
}
