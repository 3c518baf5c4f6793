package grpc_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/idemkey/idemkey/dynamostore"
	idemgrpc "github.com/idemkey/idemkey/grpc"
	"github.com/idemkey/idemkey/grpc/internal/testpb"
	"github.com/idemkey/idemkey/internal/ddbtest"
)

func TestFirstCallExecutesAndCommitsItsStagedEffectWithTheKey(t *testing.T) {
	h := newHarness(t)
	a := h.charge(h.dial("alice"), "k1", &testpb.ChargeRequest{Account: "acc", Cents: 5})
	require.NoError(t, a.err)
	assert.EqualValues(t, 1, a.reply.Execution)
	assert.Equal(t, []string{"1"}, a.header.Get("x-execution"))
	assert.Equal(t, []string{"\x00\xff"}, a.header.Get("x-bin"))
	assert.Equal(t, []string{"t1"}, a.trailer.Get("x-trailer"))
	assert.Empty(t, a.header.Get(idemgrpc.ReplayedMetadata))
	assert.Equal(t, 1, h.effectsOf("k1"), "the staged effect is committed")

	rec, err := h.store.Get(context.Background(), "alice", "k1")
	require.NoError(t, err)
	assert.Equal(t, dynamostore.StateCompleted, rec.State)
	assert.Equal(t, idemgrpc.Method, rec.Method)
	assert.Equal(t, methodCharge, rec.Path)
	assert.Equal(t, 200, rec.Response.Status)
	assert.Equal(t, "application/vnd.idemkey.grpc-answer+proto", rec.Response.Header.Get("Content-Type"))
}

func TestRetryReplaysMessageHeaderAndTrailerWithTheMarker(t *testing.T) {
	h := newHarness(t)
	c := h.dial("alice")
	req := &testpb.ChargeRequest{Account: "acc", Cents: 5, Labels: map[string]string{"a": "1", "b": "2", "c": "3"}}
	first := h.charge(c, "k1", req)
	require.NoError(t, first.err)
	again := h.charge(c, "k1", &testpb.ChargeRequest{Account: "acc", Cents: 5, Labels: map[string]string{"c": "3", "b": "2", "a": "1"}})
	require.NoError(t, again.err)
	assert.True(t, proto.Equal(first.reply, again.reply), "the stored message: %v", again.reply)
	assert.Equal(t, []string{"true"}, again.header.Get(idemgrpc.ReplayedMetadata))
	assert.Equal(t, []string{"1"}, again.header.Get("x-execution"))
	assert.Equal(t, []string{"\x00\xff"}, again.header.Get("x-bin"))
	assert.Equal(t, []string{"t1"}, again.trailer.Get("x-trailer"))
	assert.EqualValues(t, 1, h.svc.executed.Load(), "the retry did not execute")
	assert.Equal(t, 1, h.effectsOf("k1"))
}

func TestDifferentRequestWithTheSameKeyIsFailedPrecondition(t *testing.T) {
	h := newHarness(t)
	c := h.dial("alice")
	require.NoError(t, h.charge(c, "k1", &testpb.ChargeRequest{Account: "acc", Cents: 5}).err)
	a := h.charge(c, "k1", &testpb.ChargeRequest{Account: "acc", Cents: 6})
	assert.Equal(t, codes.FailedPrecondition, a.code())
	assert.Equal(t, idemgrpc.ReasonKeyReused, a.reason())
	_, hasRetry := a.retryDelay()
	assert.False(t, hasRetry, "no RetryInfo: a retry meets the same refusal")
	// An explicit default of a field with presence is another request.
	note := ""
	a = h.charge(c, "k1", &testpb.ChargeRequest{Account: "acc", Cents: 5, Note: &note})
	assert.Equal(t, codes.FailedPrecondition, a.code())
	assert.EqualValues(t, 1, h.svc.executed.Load())
}

func TestDuplicateWhileInFlightIsAbortedWithRetryInfo(t *testing.T) {
	h := newHarness(t, func(s *setup) {
		s.server = append(s.server, func(o *idemgrpc.Options) { o.Guard.RetryAfter = 3 * time.Second })
	})
	c := h.dial("alice")
	started, release := h.blockNext()
	done := make(chan answer)
	go func() { done <- h.charge(c, "k1", &testpb.ChargeRequest{Account: "acc"}) }()
	<-started
	a := h.charge(c, "k1", &testpb.ChargeRequest{Account: "acc"})
	release()
	require.NoError(t, (<-done).err)
	assert.Equal(t, codes.Aborted, a.code())
	assert.Equal(t, idemgrpc.ReasonInFlight, a.reason())
	d, ok := a.retryDelay()
	assert.True(t, ok)
	assert.Equal(t, 3*time.Second, d)
	assert.EqualValues(t, 1, h.svc.executed.Load())
}

func TestConcurrentCallsExecuteOncePerKey(t *testing.T) {
	h := newHarness(t)
	c := h.dial("alice")
	const workers, keys = 16, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers*keys)
	for w := range workers {
		wg.Go(func() {
			for i := range keys {
				key := fmt.Sprintf("k%03d", (i+w*7)%keys)
				a := h.charge(c, key, &testpb.ChargeRequest{Account: key, Cents: 1})
				if a.err != nil && a.code() != codes.Aborted {
					errs <- a.err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("unexpected error: %v", err)
	}
	assert.EqualValues(t, keys, h.svc.executed.Load(), "one execution per key")
	effects := h.effectsByKey()
	for i := range keys {
		key := fmt.Sprintf("k%03d", i)
		if n := len(effects[key]); n != 1 {
			t.Errorf("key %s: %d effects", key, n)
		}
	}
}

func TestStoreUnavailableIsUnavailableWithRetryInfoAndTheHandlerDoesNotRun(t *testing.T) {
	h := newHarness(t)
	h.faulty.Plan("PutItem", ddbtest.FailBefore)
	a := h.charge(h.dial("alice"), "k1", &testpb.ChargeRequest{Account: "acc"})
	assert.Equal(t, codes.Unavailable, a.code(), "%v", a.err)
	assert.Equal(t, idemgrpc.ReasonUnavailable, a.reason())
	_, ok := a.retryDelay()
	assert.True(t, ok)
	assert.Zero(t, h.svc.executed.Load(), "fail closed")
}

func TestPermanentStoreFaultIsInternalWithItsClassAndNoRetryInfo(t *testing.T) {
	h := newHarness(t)
	h.svc.setBehaviour(func(ctx context.Context, n int64) (*testpb.ChargeReply, error) {
		return &testpb.ChargeReply{Execution: n}, nil
	})
	h.effects = "no-such-table-" + h.effects
	h.svc.effects = h.effects
	a := h.charge(h.dial("alice"), "k1", &testpb.ChargeRequest{Account: "acc"})
	assert.Equal(t, codes.Internal, a.code(), "%v", a.err)
	assert.Equal(t, "MISSING_TABLE", a.reason())
	_, ok := a.retryDelay()
	assert.False(t, ok)
}

func TestNonFinalCodesReleaseTheKeyAndFinalOnesAreReplayed(t *testing.T) {
	h := newHarness(t)
	c := h.dial("alice")
	h.svc.setBehaviour(func(ctx context.Context, n int64) (*testpb.ChargeReply, error) {
		if n == 1 {
			return nil, status.Error(codes.Unavailable, "processor down")
		}
		st, _ := status.New(codes.NotFound, "no such account").WithDetails(&testpb.ChargeReply{Account: "detail"})
		_ = grpc.SetTrailer(ctx, map[string][]string{"x-why": {"gone"}})
		return nil, st.Err()
	})
	req := &testpb.ChargeRequest{Account: "acc"}
	a := h.charge(c, "k1", req)
	assert.Equal(t, codes.Unavailable, a.code())
	assert.Zero(t, h.effectsOf("k1"), "staged effects discarded")

	a = h.charge(c, "k1", req)
	assert.Equal(t, codes.NotFound, a.code(), "the released key executes again")
	replay := h.charge(c, "k1", req)
	assert.Equal(t, codes.NotFound, replay.code())
	assert.Equal(t, "no such account", status.Convert(replay.err).Message())
	require.Len(t, status.Convert(replay.err).Details(), 1)
	assert.Equal(t, "detail", status.Convert(replay.err).Details()[0].(*testpb.ChargeReply).Account)
	assert.Equal(t, []string{"true"}, replay.header.Get(idemgrpc.ReplayedMetadata))
	assert.Equal(t, []string{"gone"}, replay.trailer.Get("x-why"))
	assert.EqualValues(t, 2, h.svc.executed.Load())
	assert.Equal(t, 1, h.effectsOf("k1"), "a final status commits its staged effects")
}

func TestFinalCodesOptionDecidesWhatIsStored(t *testing.T) {
	h := newHarness(t, func(s *setup) {
		s.server = append(s.server, func(o *idemgrpc.Options) { o.FinalCodes = []codes.Code{codes.ResourceExhausted} })
	})
	c := h.dial("alice")
	h.svc.setBehaviour(func(ctx context.Context, n int64) (*testpb.ChargeReply, error) {
		if n == 1 {
			return nil, status.Error(codes.NotFound, "not final here")
		}
		return nil, status.Error(codes.ResourceExhausted, "quota")
	})
	req := &testpb.ChargeRequest{Account: "acc"}
	assert.Equal(t, codes.NotFound, h.charge(c, "k1", req).code())
	assert.Equal(t, codes.ResourceExhausted, h.charge(c, "k1", req).code())
	r := h.charge(c, "k1", req)
	assert.Equal(t, codes.ResourceExhausted, r.code())
	assert.Equal(t, []string{"true"}, r.header.Get(idemgrpc.ReplayedMetadata))
	assert.EqualValues(t, 2, h.svc.executed.Load())
}

func TestPanicReleasesTheKeyAndIsReRaised(t *testing.T) {
	recovered := 0
	recovery := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if p := recover(); p != nil {
				recovered++
				err = status.Errorf(codes.Internal, "panic: %v", p)
			}
		}()
		return next(ctx, req)
	}
	h := newHarness(t, func(s *setup) { s.outer = append(s.outer, recovery) })
	c := h.dial("alice")
	h.svc.setBehaviour(func(ctx context.Context, n int64) (*testpb.ChargeReply, error) {
		if n == 1 {
			panic("boom")
		}
		return &testpb.ChargeReply{Execution: n}, nil
	})
	req := &testpb.ChargeRequest{Account: "acc"}
	assert.Equal(t, codes.Internal, h.charge(c, "k1", req).code())
	assert.Equal(t, 1, recovered, "the panic reached the outer interceptor")
	a := h.charge(c, "k1", req)
	require.NoError(t, a.err)
	assert.EqualValues(t, 2, a.reply.Execution, "the key was released")
	assert.Equal(t, 1, h.effectsOf("k1"))
}

func TestTenantsNeverShareKeysAndACallWithoutScopeIsRefused(t *testing.T) {
	h := newHarness(t)
	req := &testpb.ChargeRequest{Account: "acc"}
	a := h.charge(h.dial("alice"), "k1", req)
	b := h.charge(h.dial("bob"), "k1", req)
	require.NoError(t, a.err)
	require.NoError(t, b.err)
	assert.EqualValues(t, 1, a.reply.Execution)
	assert.EqualValues(t, 2, b.reply.Execution, "bob's key is his own")
	assert.Empty(t, b.header.Get(idemgrpc.ReplayedMetadata))

	anon := h.charge(h.dial(""), "k1", req)
	assert.Equal(t, codes.Unauthenticated, anon.code())
	assert.Equal(t, idemgrpc.ReasonUnauthorized, anon.reason())
	assert.EqualValues(t, 2, h.svc.executed.Load())
}

func TestMissingAndMalformedKeysAreInvalidArgument(t *testing.T) {
	h := newHarness(t)
	c := h.dial("alice")
	req := &testpb.ChargeRequest{Account: "acc"}
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		reason string
	}{
		{"missing", context.Background(), idemgrpc.ReasonMissingKey},
		{"malformed", withKey(context.Background(), `"unterminated`), idemgrpc.ReasonInvalidKey},
		{"repeated", withKey(withKey(context.Background(), "a"), "b"), idemgrpc.ReasonInvalidKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Charge(tc.ctx, req)
			assert.Equal(t, codes.InvalidArgument, status.Code(err))
			assert.Equal(t, tc.reason, answer{err: err}.reason())
		})
	}
	assert.Zero(t, h.svc.executed.Load())
}

func TestOptionalKeyLetsAKeylessCallPassUnguardedWithATx(t *testing.T) {
	h := newHarness(t, func(s *setup) {
		s.server = append(s.server, func(o *idemgrpc.Options) { o.Optional = true })
	})
	c := h.dial("alice")
	req := &testpb.ChargeRequest{Account: "acc"}
	for range 2 {
		require.NoError(t, h.charge(c, "", req).err)
	}
	assert.EqualValues(t, 2, h.svc.executed.Load(), "nothing remembers a keyless call")
	assert.Equal(t, 2, h.effectsOf(""), "its staged writes are committed")
}

func TestUnguardedMethodPassesThroughAndCommitsItsStagedWrites(t *testing.T) {
	h := newHarness(t)
	c := h.dial("")
	r1, err := c.Lookup(withKey(context.Background(), "k1"), &testpb.ChargeRequest{Account: "acc"})
	require.NoError(t, err)
	r2, err := c.Lookup(withKey(context.Background(), "k1"), &testpb.ChargeRequest{Account: "acc"})
	require.NoError(t, err)
	assert.NotEqual(t, r1.Execution, r2.Execution)
	assert.Equal(t, 2, h.effectsOf("k1"))
	assert.Equal(t, 0, h.calls.Count("PutItem"), "no key record")

	h.svc.setBehaviour(func(ctx context.Context, n int64) (*testpb.ChargeReply, error) {
		return nil, status.Error(codes.Internal, "failed")
	})
	_, err = c.Lookup(withKey(context.Background(), "k2"), &testpb.ChargeRequest{Account: "acc"})
	assert.Equal(t, codes.Internal, status.Code(err))
	assert.Zero(t, h.effectsOf("k2"), "a non-final code discards the staged writes")
}

func TestKeyFromMessageFieldIsLeftOutOfTheFingerprint(t *testing.T) {
	h := newHarness(t)
	c := h.dial("alice")
	sent := timestamppb.New(time.Unix(1_800_000_000, 0))
	keyed := func(ctx context.Context, key string, first *timestamppb.Timestamp) answer {
		return call(func(cctx context.Context, opts ...grpc.CallOption) (*testpb.ChargeReply, error) {
			req := &testpb.KeyedChargeRequest{Account: "acc", Cents: 3}
			if key != "" || first != nil {
				req.IdempotencyKey = &testpb.IdempotencyKey{Key: key, FirstSent: first}
			}
			if md, ok := metadataOf(ctx); ok {
				cctx = withKey(cctx, md)
			}
			return c.ChargeKeyed(cctx, req, opts...)
		})
	}
	first := keyed(context.Background(), "order-1", sent)
	require.NoError(t, first.err)
	again := keyed(context.Background(), "order-1", sent)
	require.NoError(t, again.err)
	assert.Equal(t, []string{"true"}, again.header.Get(idemgrpc.ReplayedMetadata))
	assert.Equal(t, first.reply.Execution, again.reply.Execution)

	other := keyed(context.Background(), "order-2", sent)
	require.NoError(t, other.err)
	assert.NotEqual(t, first.reply.Execution, other.reply.Execution, "another key, another operation")

	moved := keyed(context.Background(), "order-1", timestamppb.New(time.Unix(1_800_000_001, 0)))
	assert.Equal(t, codes.FailedPrecondition, moved.code(), "first_sent differs: AEP-155 asks to refuse it")

	both := keyed(withMetadataKey(context.Background(), "other"), "order-1", sent)
	assert.Equal(t, codes.InvalidArgument, both.code(), "two different keys")
	same := keyed(withMetadataKey(context.Background(), "order-1"), "order-1", sent)
	require.NoError(t, same.err)

	none := keyed(context.Background(), "", nil)
	assert.Equal(t, codes.InvalidArgument, none.code())
	viaMD := keyed(withMetadataKey(context.Background(), "order-3"), "", nil)
	require.NoError(t, viaMD.err, "an unset field takes the metadata's key")

	byID := call(func(ctx context.Context, opts ...grpc.CallOption) (*testpb.ChargeReply, error) {
		return c.ChargeByRequestID(ctx, &testpb.StringKeyedRequest{Account: "acc", RequestId: "req 1"}, opts...)
	})
	require.NoError(t, byID.err)
	byID2 := call(func(ctx context.Context, opts ...grpc.CallOption) (*testpb.ChargeReply, error) {
		return c.ChargeByRequestID(ctx, &testpb.StringKeyedRequest{Account: "acc", RequestId: "req 1"}, opts...)
	})
	require.NoError(t, byID2.err)
	assert.Equal(t, byID.reply.Execution, byID2.reply.Execution)
	rec, err := h.store.Get(context.Background(), "alice", "req 1")
	require.NoError(t, err)
	assert.Equal(t, methodByReqID, rec.Path)
}

type metadataKey struct{}

func withMetadataKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, metadataKey{}, key)
}

func metadataOf(ctx context.Context) (string, bool) {
	k, ok := ctx.Value(metadataKey{}).(string)
	return k, ok
}

func TestGuardedStreamingMethodIsRefused(t *testing.T) {
	assert.PanicsWithValue(t, "grpc: guarded method "+methodWatch+" is a streaming method: a stream cannot be replayed", func() {
		idemgrpc.UnaryServerInterceptor(idleStore(), func(o *idemgrpc.Options) {
			o.SingleCaller = true
			o.Methods = []string{methodWatch}
		})
	})
	watch := func(o *idemgrpc.Options) { o.Guarded = func(m string) bool { return m == methodWatch } }
	assert.PanicsWithValue(t, "grpc: Options.Guarded selects "+methodWatch+", a streaming method: a stream cannot be replayed; make Guarded return false for it", func() {
		idemgrpc.UnaryServerInterceptor(idleStore(), func(o *idemgrpc.Options) { o.SingleCaller = true }, watch)
	})
	// What the unary interceptor cannot tell (a service outside the
	// registry), the stream interceptor refuses when the stream arrives.
	h := newHarness(t, func(s *setup) { s.stream = append(s.stream, watch) })
	stream, err := h.dial("alice").Watch(context.Background(), &testpb.ChargeRequest{Account: "acc"})
	require.NoError(t, err)
	_, err = stream.Recv()
	assert.Equal(t, codes.FailedPrecondition, status.Code(err))
	assert.Equal(t, idemgrpc.ReasonStreaming, answer{err: err}.reason())
	assert.Zero(t, h.svc.executed.Load())
}

func TestConstructionRefusesMissingScopeAndUnresolvableKeyFields(t *testing.T) {
	store := idleStore()
	for name, fn := range map[string]func(*idemgrpc.Options){
		"no scope":        func(o *idemgrpc.Options) {},
		"both":            func(o *idemgrpc.Options) { o.SingleCaller = true; o.Scope = tenantScope },
		"unknown service": func(o *idemgrpc.Options) { o.SingleCaller = true; o.KeyFields = map[string]string{"/no.Such/M": "k"} },
		"unknown field":   func(o *idemgrpc.Options) { o.SingleCaller = true; o.KeyFields = map[string]string{methodKeyed: "nope"} },
		"wrong kind": func(o *idemgrpc.Options) {
			o.SingleCaller = true
			o.KeyFields = map[string]string{methodKeyed: "cents"}
		},
		"not a method": func(o *idemgrpc.Options) { o.SingleCaller = true; o.Methods = []string{"Charge"} },
	} {
		assert.Panics(t, func() { idemgrpc.UnaryServerInterceptor(store, fn) }, name)
	}
	assert.Panics(t, func() { idemgrpc.UnaryServerInterceptor(nil, func(o *idemgrpc.Options) { o.SingleCaller = true }) })
}

func TestLeaseFollowsTheCallDeadline(t *testing.T) {
	h := newHarness(t)
	c := h.dial("alice")
	started, release := h.blockNext()
	done := make(chan error)
	go func() {
		ctx, cancel := context.WithTimeout(withKey(context.Background(), "k1"), 10*time.Minute)
		defer cancel()
		_, err := c.Charge(ctx, &testpb.ChargeRequest{Account: "acc"})
		done <- err
	}()
	<-started
	rec, err := h.store.Get(context.Background(), "alice", "k1")
	release()
	require.NoError(t, <-done)
	require.NoError(t, err)
	lease := time.Until(rec.LockExpires)
	assert.Greater(t, lease, 9*time.Minute, "the store's own lease is one minute")
	assert.LessOrEqual(t, lease, 10*time.Minute+idemgrpc.DefaultLeaseMargin)
}
