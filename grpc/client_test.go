package grpc_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/idemkey/idemkey/client"
	idemgrpc "github.com/idemkey/idemkey/grpc"
	"github.com/idemkey/idemkey/grpc/internal/testpb"
	"github.com/idemkey/idemkey/internal/ddbtest"
)

// attempts records the key of every call the server receives, before the
// idempotency interceptor.
type attempts struct {
	mu     sync.Mutex
	keys   []string
	failed int // attempts answered with an error
}

func (a *attempts) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	a.mu.Lock()
	a.keys = append(a.keys, md.Get(idemgrpc.KeyMetadata)...)
	a.mu.Unlock()
	resp, err := next(ctx, req)
	if err != nil {
		a.mu.Lock()
		a.failed++
		a.mu.Unlock()
	}
	return resp, err
}

// refused returns how many attempts have been answered with an error.
func (a *attempts) refused() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.failed
}

func (a *attempts) seen() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.keys...)
}

const retryPolicy = `{"methodConfig":[{"name":[{"service":"idemkey.grpc.test.v1.Ledger"}],
  "retryPolicy":{"maxAttempts":3,"initialBackoff":"0.01s","maxBackoff":"0.05s","backoffMultiplier":2,
  "retryableStatusCodes":["UNAVAILABLE"]}}]}`

func TestGRPCRetryPolicyResendsTheInterceptorsKey(t *testing.T) {
	var seen attempts
	h := newHarness(t, func(s *setup) { s.outer = append(s.outer, seen.intercept) })
	h.faulty.Plan("PutItem", ddbtest.FailBefore) // the first attempt finds the store unavailable
	c := h.dial("alice", grpc.WithDefaultServiceConfig(retryPolicy), grpc.WithUnaryInterceptor(idemgrpc.UnaryClientInterceptor()))
	reply, err := c.Charge(context.Background(), &testpb.ChargeRequest{Account: "acc"})
	require.NoError(t, err)
	keys := seen.seen()
	require.Len(t, keys, 2, "gRPC retried once")
	assert.Equal(t, keys[0], keys[1], "the same key on both attempts")
	assert.Len(t, keys[0], 26)
	assert.EqualValues(t, 1, reply.Execution)
	assert.Equal(t, 1, h.effectsOf(keys[0]))
}

func TestClientGivesEachLogicalCallItsOwnKeyAndKeepsTheCallers(t *testing.T) {
	var seen attempts
	h := newHarness(t, func(s *setup) { s.outer = append(s.outer, seen.intercept) })
	c := h.dial("alice", grpc.WithUnaryInterceptor(idemgrpc.UnaryClientInterceptor(func(o *idemgrpc.ClientOptions) {
		o.Methods = []string{methodCharge}
	})))
	ctx := context.Background()
	req := &testpb.ChargeRequest{Account: "acc"}
	_, err := c.Charge(ctx, req)
	require.NoError(t, err)
	_, err = c.Charge(ctx, req)
	require.NoError(t, err)
	_, err = c.Charge(idemgrpc.WithKey(ctx, "order 7"), req)
	require.NoError(t, err)
	_, err = c.Charge(withKey(idemgrpc.WithKey(ctx, "ignored"), "from-md"), req)
	require.NoError(t, err)
	_, err = c.Lookup(ctx, req)
	require.NoError(t, err)
	keys := seen.seen()
	require.Len(t, keys, 4, "Lookup is not a selected method: no key")
	assert.NotEqual(t, keys[0], keys[1], "two logical calls, two keys")
	assert.Equal(t, `"order 7"`, keys[2], "the caller's key, as an sf-string")
	assert.Equal(t, "from-md", keys[3], "outgoing metadata wins")
	rec, err := h.store.Get(ctx, "alice", "order 7")
	require.NoError(t, err)
	assert.Equal(t, methodCharge, rec.Path)
}

func TestClientRetriesAnInFlightCallUntilItsFirstCopyCompletes(t *testing.T) {
	var seen attempts
	h := newHarness(t, func(s *setup) {
		s.outer = append(s.outer, seen.intercept)
		s.server = append(s.server, func(o *idemgrpc.Options) { o.Guard.RetryAfter = 20 * time.Millisecond })
	})
	started, release := h.blockNext()
	plain := h.dial("alice")
	done := make(chan answer)
	go func() { done <- h.charge(plain, "k1", &testpb.ChargeRequest{Account: "acc"}) }()
	<-started
	retrying := h.dial("alice", grpc.WithUnaryInterceptor(idemgrpc.UnaryClientInterceptor(func(o *idemgrpc.ClientOptions) {
		o.MaxAttempts = 100
	})))
	go func() {
		// Two attempts answered as in flight: an attempt that has only
		// arrived may still reach the guard after the release, and be
		// answered with the replay.
		for seen.refused() < 2 {
			time.Sleep(5 * time.Millisecond)
		}
		release()
	}()
	a := call(func(ctx context.Context, opts ...grpc.CallOption) (*testpb.ChargeReply, error) {
		return retrying.Charge(idemgrpc.WithKey(ctx, "k1"), &testpb.ChargeRequest{Account: "acc"}, opts...)
	})
	first := <-done
	require.NoError(t, first.err)
	require.NoError(t, a.err)
	assert.Equal(t, []string{"true"}, a.header.Get(idemgrpc.ReplayedMetadata))
	assert.Equal(t, first.reply.Id, a.reply.Id)
	assert.EqualValues(t, 1, h.svc.executed.Load())
	assert.GreaterOrEqual(t, len(seen.seen()), 4)
}

func TestClientRetriesOnlyWhatASameKeyRetryCanChange(t *testing.T) {
	var seen attempts
	h := newHarness(t, func(s *setup) { s.outer = append(s.outer, seen.intercept) })
	c := h.dial("alice", grpc.WithUnaryInterceptor(idemgrpc.UnaryClientInterceptor(func(o *idemgrpc.ClientOptions) {
		o.MaxAttempts = 5
		o.BaseDelay = time.Millisecond
	})))
	ctx := idemgrpc.WithKey(context.Background(), "k1")
	_, err := c.Charge(ctx, &testpb.ChargeRequest{Account: "acc"})
	require.NoError(t, err)
	_, err = c.Charge(ctx, &testpb.ChargeRequest{Account: "other"})
	assert.Equal(t, codes.FailedPrecondition, status.Code(err))
	assert.Len(t, seen.seen(), 2, "a reused key is not retried")

	h.svc.setBehaviour(func(ctx context.Context, n int64) (*testpb.ChargeReply, error) {
		return nil, status.Error(codes.Aborted, "the handler's own Aborted, without RetryInfo")
	})
	_, err = c.Charge(idemgrpc.WithKey(context.Background(), "k2"), &testpb.ChargeRequest{Account: "acc"})
	assert.Equal(t, codes.Aborted, status.Code(err))
	assert.Len(t, seen.seen(), 3, "Aborted without RetryInfo is not retried")

	h.svc.setBehaviour(func(ctx context.Context, n int64) (*testpb.ChargeReply, error) {
		if n < 5 {
			return nil, status.Error(codes.Unavailable, "processor down")
		}
		return &testpb.ChargeReply{Execution: n}, nil
	})
	r, err := c.Charge(idemgrpc.WithKey(context.Background(), "k3"), &testpb.ChargeRequest{Account: "acc"})
	require.NoError(t, err)
	assert.EqualValues(t, 5, r.Execution, "executions 3 and 4 answered Unavailable and released the key; the third attempt executed")
	assert.Len(t, seen.seen(), 6)
	assert.Equal(t, 1, h.effectsOf("k3"))
}

func TestClientStopsRetryingWhenTheWaitWouldPassTheDeadline(t *testing.T) {
	var seen attempts
	h := newHarness(t, func(s *setup) {
		s.outer = append(s.outer, seen.intercept)
		s.server = append(s.server, func(o *idemgrpc.Options) { o.Guard.RetryAfter = time.Hour })
	})
	started, release := h.blockNext()
	defer release()
	plain := h.dial("alice")
	go func() { _ = h.charge(plain, "k1", &testpb.ChargeRequest{Account: "acc"}) }()
	<-started
	c := h.dial("alice", grpc.WithUnaryInterceptor(idemgrpc.UnaryClientInterceptor(func(o *idemgrpc.ClientOptions) {
		o.MaxAttempts = 5
		o.MaxDelay = time.Minute
	})))
	ctx, cancel := context.WithTimeout(idemgrpc.WithKey(context.Background(), "k1"), 30*time.Second)
	defer cancel()
	_, err := c.Charge(ctx, &testpb.ChargeRequest{Account: "acc"})
	assert.Equal(t, codes.Aborted, status.Code(err))
	assert.NoError(t, ctx.Err(), "returned before the deadline, without waiting")
	assert.Len(t, seen.seen(), 2, "the first copy and one refused attempt")
}

func TestClientRefusesAKeyTheHTTPClientRefusesAndSendsNothing(t *testing.T) {
	var seen attempts
	h := newHarness(t, func(s *setup) { s.outer = append(s.outer, seen.intercept) })
	c := h.dial("alice", grpc.WithUnaryInterceptor(idemgrpc.UnaryClientInterceptor(func(o *idemgrpc.ClientOptions) {
		o.Methods = []string{methodCharge}
		o.MaxAttempts = 3
	})))
	ctx := context.Background()
	req := &testpb.ChargeRequest{Account: "acc"}
	for _, key := range []string{"", strings.Repeat("k", client.MaxKeyLength+1), "kéy", "tab\tkey"} {
		_, err := c.Charge(idemgrpc.WithKey(ctx, key), req)
		assert.ErrorIs(t, err, client.ErrInvalidKey, "%q", key)
		var ke *client.KeyError
		assert.ErrorAs(t, err, &ke, "%q", key)
	}
	generates := h.dial("alice", grpc.WithUnaryInterceptor(idemgrpc.UnaryClientInterceptor(func(o *idemgrpc.ClientOptions) {
		o.NewKey = func() string { return "" }
	})))
	_, err := generates.Charge(ctx, req)
	assert.ErrorIs(t, err, client.ErrInvalidKey, "a key of NewKey follows the same rule")
	assert.Empty(t, seen.seen(), "no attempt was sent")
	assert.Zero(t, seen.refused())

	_, err = c.Charge(idemgrpc.WithKey(ctx, strings.Repeat("k", client.MaxKeyLength)), req)
	require.NoError(t, err, "255 bytes is the longest key")
	_, err = c.Charge(withKey(idemgrpc.WithKey(ctx, ""), "from-md"), req)
	require.NoError(t, err, "the outgoing metadata's key wins, and is sent as it is")
	_, err = c.Lookup(idemgrpc.WithKey(ctx, ""), req)
	require.NoError(t, err, "a call that gets no key is not checked")
	assert.Equal(t, []string{strings.Repeat("k", client.MaxKeyLength), "from-md"}, seen.seen())
}
