package grpc_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/idemkey/idemkey/client"
	idemgrpc "github.com/idemkey/idemkey/grpc"
	"github.com/idemkey/idemkey/grpc/internal/testpb"
	"github.com/idemkey/idemkey/internal/ddbtest"
)

// TestUnkeyedCommitOfUnknownOutcomeIsNotRetriedByTheClientInterceptor is
// an unguarded method behind the package's retrying client interceptor:
// its write lands, DynamoDB's answer is lost, and the call must not be
// sent again.
func TestUnkeyedCommitOfUnknownOutcomeIsNotRetriedByTheClientInterceptor(t *testing.T) {
	var seen attempts
	h := newHarness(t, func(s *setup) { s.outer = append(s.outer, seen.intercept) })
	h.faulty.Plan("TransactWriteItems", ddbtest.FailAfter)
	c := h.dial("alice", grpc.WithUnaryInterceptor(idemgrpc.UnaryClientInterceptor(func(o *idemgrpc.ClientOptions) {
		o.MaxAttempts, o.BaseDelay = 3, time.Millisecond
	})))
	a := call(func(ctx context.Context, opts ...grpc.CallOption) (*testpb.ChargeReply, error) {
		return c.Lookup(ctx, &testpb.ChargeRequest{Account: "acc"}, opts...)
	})
	keys := seen.seen()
	require.Len(t, keys, 1, "one attempt: a retry could write twice")
	assert.EqualValues(t, 1, h.svc.executed.Load())
	assert.Equal(t, 1, h.effectsOf(keys[0]), "the write landed once")
	assert.Equal(t, codes.Internal, a.code())
	assert.Equal(t, idemgrpc.ReasonOutcomeUnknown, a.reason())
	_, hinted := a.retryDelay()
	assert.False(t, hinted, "no RetryInfo")
}

func TestUnkeyedCommitThatTheStoreRefusedIsUnavailableAndRetried(t *testing.T) {
	var seen attempts
	h := newHarness(t, func(s *setup) { s.outer = append(s.outer, seen.intercept) })
	h.faulty.Plan("TransactWriteItems", ddbtest.Conflict, ddbtest.Conflict, ddbtest.Conflict, ddbtest.Conflict)
	c := h.dial("alice", grpc.WithUnaryInterceptor(idemgrpc.UnaryClientInterceptor(func(o *idemgrpc.ClientOptions) {
		o.MaxAttempts, o.MaxDelay = 2, time.Millisecond
	})))
	_, err := c.Lookup(context.Background(), &testpb.ChargeRequest{Account: "acc"})
	require.NoError(t, err, "nothing was written the first time: the retry is the one execution")
	keys := seen.seen()
	require.Len(t, keys, 2)
	assert.EqualValues(t, 2, h.svc.executed.Load())
	assert.Equal(t, 1, h.effectsOf(keys[0]))
}

func TestClientInterceptorCallsAMethodKeyedByAMessageField(t *testing.T) {
	var seen attempts
	h := newHarness(t, func(s *setup) { s.outer = append(s.outer, seen.intercept) })
	keyFields := map[string]string{methodKeyed: "idempotency_key", methodByReqID: "request_id"}
	c := h.dial("alice", grpc.WithUnaryInterceptor(idemgrpc.UnaryClientInterceptor(func(o *idemgrpc.ClientOptions) {
		o.KeyFields = keyFields
	})))
	byID := func(ctx context.Context, id string) answer {
		return call(func(cctx context.Context, opts ...grpc.CallOption) (*testpb.ChargeReply, error) {
			if k, ok := client.KeyFromContext(ctx); ok {
				cctx = idemgrpc.WithKey(cctx, k)
			}
			return c.ChargeByRequestID(cctx, &testpb.StringKeyedRequest{Account: "acc", RequestId: id}, opts...)
		})
	}
	first := byID(context.Background(), "req-1")
	require.NoError(t, first.err)
	again := byID(context.Background(), "req-1")
	require.NoError(t, again.err)
	assert.Equal(t, []string{"true"}, again.header.Get(idemgrpc.ReplayedMetadata), "the message's key: a replay")
	assert.Equal(t, first.reply.Execution, again.reply.Execution)
	assert.Empty(t, seen.seen(), "no metadata key beside the message's")

	same := byID(idemgrpc.WithKey(context.Background(), "req-1"), "req-1")
	require.NoError(t, same.err)
	var ke *client.KeyError
	other := byID(idemgrpc.WithKey(context.Background(), "other"), "req-1")
	require.ErrorAs(t, other.err, &ke, "two keys for one call: refused before sending")
	assert.True(t, errors.Is(other.err, client.ErrInvalidKey))

	// An empty field: the interceptor's key, in the metadata, as for any call.
	empty := byID(context.Background(), "")
	require.NoError(t, empty.err)
	require.Len(t, seen.seen(), 1)

	// The AEP-155 message field too.
	keyed := call(func(ctx context.Context, opts ...grpc.CallOption) (*testpb.ChargeReply, error) {
		return c.ChargeKeyed(ctx, &testpb.KeyedChargeRequest{Account: "acc", Cents: 1, IdempotencyKey: &testpb.IdempotencyKey{Key: "order-1"}}, opts...)
	})
	require.NoError(t, keyed.err)
	rec, err := h.store.Get(context.Background(), "alice", "order-1")
	require.NoError(t, err)
	assert.Equal(t, methodKeyed, rec.Path)

	// Without KeyFields, the server says what to do.
	plain := h.dial("alice", grpc.WithUnaryInterceptor(idemgrpc.UnaryClientInterceptor()))
	_, err = plain.ChargeByRequestID(context.Background(), &testpb.StringKeyedRequest{Account: "acc", RequestId: "req-2"})
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
	assert.Contains(t, status.Convert(err).Message(), "ClientOptions.KeyFields")

	assert.Panics(t, func() {
		idemgrpc.UnaryClientInterceptor(func(o *idemgrpc.ClientOptions) { o.KeyFields = map[string]string{methodByReqID: "nope"} })
	})
}

func TestConstructionRefusesGuardedMethodsThatCouldNeverBeGuarded(t *testing.T) {
	for name, tc := range map[string]struct {
		opt  func(*idemgrpc.Options)
		want string
	}{
		"misspelt method": {func(o *idemgrpc.Options) { o.Methods = []string{"/idemkey.grpc.test.v1.Ledger/Charg"} },
			"service idemkey.grpc.test.v1.Ledger has no method Charg"},
		"misspelt service": {func(o *idemgrpc.Options) { o.Methods = []string{"/idemkey.grpc.test.v1.Ledgr/Charge"} },
			"service idemkey.grpc.test.v1.Ledgr of \"/idemkey.grpc.test.v1.Ledgr/Charge\" is not registered"},
		"streaming by Guarded": {func(o *idemgrpc.Options) {
			o.Guarded = func(m string) bool { return strings.HasPrefix(m, "/idemkey.grpc.test.v1.Ledger/") }
		},
			"a streaming method"},
		"a refusal as final": {func(o *idemgrpc.Options) { o.FinalCodes = []codes.Code{codes.NotFound, codes.PermissionDenied} },
			"Options.FinalCodes lists PermissionDenied, which is never stored"},
	} {
		func() {
			defer func() {
				msg, _ := recover().(string)
				assert.Contains(t, msg, tc.want, name)
			}()
			idemgrpc.UnaryServerInterceptor(idleStore(), func(o *idemgrpc.Options) { o.SingleCaller = true }, tc.opt)
			t.Errorf("%s: no panic", name)
		}()
	}
}

func TestRefusalsOfTheCallerAreNotStoredAndARetryExecutes(t *testing.T) {
	for _, code := range []codes.Code{codes.Unauthenticated, codes.PermissionDenied} {
		h := newHarness(t)
		c := h.dial("alice")
		h.svc.setBehaviour(func(ctx context.Context, n int64) (*testpb.ChargeReply, error) {
			if n == 1 {
				return nil, status.Error(code, "token lacks the payments scope")
			}
			return &testpb.ChargeReply{Execution: n}, nil
		})
		req := &testpb.ChargeRequest{Account: "acc"}
		assert.Equal(t, code, h.charge(c, "k1", req).code())
		assert.Zero(t, h.effectsOf("k1"), "%v: its staged writes are discarded", code)
		retry := h.charge(c, "k1", req)
		require.NoError(t, retry.err, "%v: the key was released", code)
		assert.EqualValues(t, 2, retry.reply.Execution)
		assert.Empty(t, retry.header.Get(idemgrpc.ReplayedMetadata))
	}
}

func TestDefaultLeaseIsCappedAndTheHandlerEndsBeforeIt(t *testing.T) {
	h := newHarness(t)
	c := h.dial("alice")
	var handlerDeadline time.Time
	started, gate := make(chan struct{}), make(chan struct{})
	h.svc.setBehaviour(func(ctx context.Context, n int64) (*testpb.ChargeReply, error) {
		handlerDeadline, _ = ctx.Deadline()
		close(started)
		<-gate
		return &testpb.ChargeReply{Execution: n}, nil
	})
	done := make(chan error)
	before := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(withKey(context.Background(), "k1"), 48*time.Hour)
		defer cancel()
		_, err := c.Charge(ctx, &testpb.ChargeRequest{Account: "acc"})
		done <- err
	}()
	<-started
	rec, err := h.store.Get(context.Background(), "alice", "k1")
	close(gate)
	require.NoError(t, <-done)
	require.NoError(t, err)
	after := time.Now()
	assert.False(t, rec.LockExpires.After(after.Add(idemgrpc.DefaultMaxLease)), "a two-day deadline holds the key for at most DefaultMaxLease")
	assert.True(t, rec.LockExpires.After(before.Add(idemgrpc.DefaultMaxLease-time.Minute)), "and for about that long (the store's own lease is a minute)")
	require.False(t, handlerDeadline.IsZero())
	assert.True(t, handlerDeadline.Before(rec.LockExpires.Add(-idemgrpc.DefaultLeaseMargin+time.Second)),
		"the handler's context ends a margin before the lease: nobody reclaims the key under a live handler")
}
