package grpc_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	idemgrpc "github.com/idemkey/idemkey/grpc"
	"github.com/idemkey/idemkey/grpc/internal/testpb"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/txn"
)

// httpFrontDoor serves the harness's store through package handler, with
// the same scope rule (the bearer token) and the same kind of effect.
func (h *harness) httpFrontDoor(inner func(w http.ResponseWriter, r *http.Request)) *httptest.Server {
	mw := handler.New(h.store, func(o *handler.Options) {
		o.Scope = func(r *http.Request) (string, error) {
			return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), nil
		}
	})
	srv := httptest.NewServer(mw(http.HandlerFunc(inner)))
	h.t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, srv *httptest.Server, key, body string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/charge", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer alice")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(handler.HeaderName, key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

func TestDynamoDBCallsPerOutcomeAreTheSameAsHTTP(t *testing.T) {
	h := newHarness(t)
	c := h.dial("alice")
	var fail, block atomic.Bool
	gate := make(chan struct{})
	started := make(chan struct{}, 1)
	web := h.httpFrontDoor(func(w http.ResponseWriter, r *http.Request) {
		if block.Load() {
			started <- struct{}{}
			<-gate
		}
		if _, ok := txn.FromContext(r.Context()); !ok {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		_, _ = h.svc.charge(r.Context(), "web", 1) // stages the same effect
		if fail.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
	})
	count := func(send func()) int {
		h.calls.Reset()
		send()
		return h.calls.Total()
	}
	req := &testpb.ChargeRequest{Account: "acc"}
	type outcome struct{ grpc, http int }
	got := map[string]outcome{}

	got["first"] = outcome{
		count(func() { require.NoError(t, h.charge(c, "g1", req).err) }),
		count(func() { require.Equal(t, 201, post(t, web, "h1", `{}`)) }),
	}
	got["replay"] = outcome{
		count(func() { require.NoError(t, h.charge(c, "g1", req).err) }),
		count(func() { require.Equal(t, 201, post(t, web, "h1", `{}`)) }),
	}
	got["key reused"] = outcome{
		count(func() {
			require.Equal(t, codes.FailedPrecondition, h.charge(c, "g1", &testpb.ChargeRequest{Account: "other"}).code())
		}),
		count(func() { require.Equal(t, 422, post(t, web, "h1", `{"a":1}`)) }),
	}

	fail.Store(true)
	h.svc.setBehaviour(func(ctx context.Context, n int64) (*testpb.ChargeReply, error) {
		return nil, status.Error(codes.Unavailable, "down")
	})
	got["released"] = outcome{
		count(func() { require.Equal(t, codes.Unavailable, h.charge(c, "g2", req).code()) }),
		count(func() { require.Equal(t, 503, post(t, web, "h2", `{}`)) }),
	}
	fail.Store(false)

	gstarted, release := h.blockNext()
	done := make(chan answer)
	go func() { done <- h.charge(c, "g3", req) }()
	<-gstarted
	grpcInFlight := count(func() { require.Equal(t, codes.Aborted, h.charge(c, "g3", req).code()) })
	release()
	require.NoError(t, (<-done).err)
	block.Store(true)
	hdone := make(chan int)
	go func() { hdone <- post(t, web, "h3", `{}`) }()
	<-started
	httpInFlight := count(func() { require.Equal(t, 409, post(t, web, "h3", `{}`)) })
	close(gate)
	require.Equal(t, 201, <-hdone)
	got["in flight"] = outcome{grpcInFlight, httpInFlight}

	want := map[string]int{"first": 2, "replay": 1, "key reused": 1, "in flight": 1, "released": 2}
	for name, o := range got {
		assert.Equal(t, o.http, o.grpc, "%s: gRPC and HTTP make the same calls", name)
		assert.Equal(t, want[name], o.grpc, "%s", name)
	}
	fmt.Printf("grpc calls first=%d replay=%d in_flight=%d key_reused=%d released=%d\n",
		got["first"].grpc, got["replay"].grpc, got["in flight"].grpc, got["key reused"].grpc, got["released"].grpc)
}

func TestKeyOfAnHTTPRequestIsAKeyReusedForAGRPCCall(t *testing.T) {
	h := newHarness(t)
	web := h.httpFrontDoor(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.idemkey.grpc-answer+proto") // even one that claims to be a gRPC answer
		w.WriteHeader(200)
		_, _ = w.Write([]byte("not an envelope"))
	})
	require.Equal(t, 200, post(t, web, "shared", `{}`))
	a := h.charge(h.dial("alice"), "shared", &testpb.ChargeRequest{Account: "acc"})
	assert.Equal(t, codes.FailedPrecondition, a.code())
	assert.Equal(t, idemgrpc.ReasonKeyReused, a.reason())
	assert.Zero(t, h.svc.executed.Load())

	// And the other way round.
	require.NoError(t, h.charge(h.dial("alice"), "g", &testpb.ChargeRequest{Account: "acc"}).err)
	assert.Equal(t, 422, post(t, web, "g", `{}`))
}

func TestOverLoopbackTCPTheRetryIsReplayed(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	h := newHarness(t, func(s *setup) { s.serveOn = lis })
	c := h.dialTarget(lis.Addr().String(), "alice")
	first := h.charge(c, "tcp-1", &testpb.ChargeRequest{Account: "acc", Cents: 9})
	require.NoError(t, first.err)
	again := h.charge(c, "tcp-1", &testpb.ChargeRequest{Account: "acc", Cents: 9})
	require.NoError(t, again.err)
	assert.Equal(t, first.reply.Id, again.reply.Id)
	assert.Equal(t, []string{"true"}, again.header.Get(idemgrpc.ReplayedMetadata))
	assert.Equal(t, []string{"t1"}, again.trailer.Get("x-trailer"))
	assert.Equal(t, 1, h.effectsOf("tcp-1"))
}
