package grpc_test

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/idemkey/idemkey/dynamostore"
	idemgrpc "github.com/idemkey/idemkey/grpc"
	"github.com/idemkey/idemkey/grpc/internal/testpb"
)

// Every status the interceptor answers in the handler's place carries an
// ErrorInfo (doc.go, # Errors). An answer that cannot be stored (here an
// inner interceptor answering no message) is answered by the interceptor.
func TestUnstorableAnswerIsInternalWithErrorInfo(t *testing.T) {
	h := newHarness(t)
	inner := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		return nil, nil // no message, no error
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(
		idemgrpc.UnaryServerInterceptor(h.store, func(o *idemgrpc.Options) {
			o.Scope = tenantScope
			o.Methods = []string{methodCharge}
		}), inner))
	testpb.RegisterLedgerServer(srv, h.svc)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithPerRPCCredentials(bearer("alice")))
	require.NoError(t, err)
	defer conn.Close()
	c := testpb.NewLedgerClient(conn)
	a := h.charge(c, "k1", &testpb.ChargeRequest{Account: "acc"})
	assert.Equal(t, codes.Internal, a.code(), "%v", a.err)
	assert.Equal(t, idemgrpc.ReasonInternal, a.reason(), "%v", a.err)
	_, err = h.store.Get(context.Background(), "alice", "k1")
	assert.ErrorIs(t, err, dynamostore.ErrNotFound, "the key is released")
}
