package grpc_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	idemgrpc "github.com/idemkey/idemkey/grpc"
	"github.com/idemkey/idemkey/grpc/internal/testpb"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/txn"
)

// ledger is the test service: Charge and its keyed variants stage one
// effect item per execution and answer with the execution's number, a
// header and a trailer. behave, when set, replaces the answer.
type ledger struct {
	testpb.UnimplementedLedgerServer
	effects  string
	executed atomic.Int64
	behave   atomic.Pointer[func(ctx context.Context, n int64) (*testpb.ChargeReply, error)]
}

func (l *ledger) setBehaviour(f func(ctx context.Context, n int64) (*testpb.ChargeReply, error)) {
	l.behave.Store(&f)
}

func (l *ledger) charge(ctx context.Context, account string, cents int64) (*testpb.ChargeReply, error) {
	n := l.executed.Add(1)
	tx, ok := txn.FromContext(ctx)
	if !ok {
		return nil, status.Error(codes.Internal, "no tx")
	}
	md, _ := metadata.FromIncomingContext(ctx)
	key := strings.Join(md.Get(idemgrpc.KeyMetadata), ",")
	tx.Put(types.Put{TableName: &l.effects, Item: map[string]types.AttributeValue{
		"id":  &types.AttributeValueMemberS{Value: fmt.Sprintf("%s#%d", account, n)},
		"key": &types.AttributeValueMemberS{Value: key},
	}})
	if f := l.behave.Load(); f != nil {
		return (*f)(ctx, n)
	}
	_ = grpc.SetHeader(ctx, metadata.Pairs("x-execution", fmt.Sprint(n), "x-bin", "\x00\xff"))
	_ = grpc.SetTrailer(ctx, metadata.Pairs("x-trailer", "t"+fmt.Sprint(n)))
	return &testpb.ChargeReply{Id: fmt.Sprintf("ch_%d", n), Execution: n, Account: account, Cents: cents}, nil
}

func (l *ledger) Charge(ctx context.Context, r *testpb.ChargeRequest) (*testpb.ChargeReply, error) {
	return l.charge(ctx, r.Account, r.Cents)
}
func (l *ledger) ChargeKeyed(ctx context.Context, r *testpb.KeyedChargeRequest) (*testpb.ChargeReply, error) {
	return l.charge(ctx, r.Account, r.Cents)
}
func (l *ledger) ChargeByRequestID(ctx context.Context, r *testpb.StringKeyedRequest) (*testpb.ChargeReply, error) {
	return l.charge(ctx, r.Account, 1)
}
func (l *ledger) Lookup(ctx context.Context, r *testpb.ChargeRequest) (*testpb.ChargeReply, error) {
	return l.charge(ctx, r.Account, r.Cents)
}
func (l *ledger) Watch(r *testpb.ChargeRequest, s grpc.ServerStreamingServer[testpb.ChargeReply]) error {
	l.executed.Add(1)
	return s.Send(&testpb.ChargeReply{Account: r.Account})
}

const (
	methodCharge  = "/idemkey.grpc.test.v1.Ledger/Charge"
	methodKeyed   = "/idemkey.grpc.test.v1.Ledger/ChargeKeyed"
	methodByReqID = "/idemkey.grpc.test.v1.Ledger/ChargeByRequestID"
	methodLookup  = "/idemkey.grpc.test.v1.Ledger/Lookup"
	methodWatch   = "/idemkey.grpc.test.v1.Ledger/Watch"
)

// tenantScope is the tests' Scope: the bearer token of the call's
// "authorization" metadata, which per-RPC credentials put there.
func tenantScope(ctx context.Context) (string, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	v := md.Get("authorization")
	if len(v) != 1 || !strings.HasPrefix(v[0], "Bearer ") {
		return "", errors.New("no bearer token")
	}
	return strings.TrimPrefix(v[0], "Bearer "), nil
}

// bearer is per-RPC credentials carrying a tenant's token.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}
func (bearer) RequireTransportSecurity() bool { return false }

type harness struct {
	t       *testing.T
	ep      *localstack.Endpoint
	calls   *ddbtest.Counter
	faulty  *ddbtest.Faulty
	store   *dynamostore.Store
	keys    string
	effects string
	svc     *ledger
	lis     *bufconn.Listener
}

// setup is harness configuration applied before the server starts.
type setup struct {
	server  []func(*idemgrpc.Options)
	stream  []func(*idemgrpc.Options)      // the stream interceptor's alone, after server's
	store   func(h *harness) idemkey.Store // replaces the harness's store when set
	outer   []grpc.UnaryServerInterceptor
	serveOn net.Listener
}

func newHarness(t *testing.T, optFns ...func(*setup)) *harness {
	t.Helper()
	h := &harness{t: t, ep: localstack.ForTest(t), calls: ddbtest.NewCounter()}
	h.faulty = ddbtest.NewFaulty(h.ep.NewClient(h.calls.Install))
	h.keys, h.effects = localstack.TableName("keys"), localstack.TableName("effects")
	require.NoError(t, dynamostore.EnsureTable(context.Background(), h.ep.Client, h.keys, 0))
	ddbtest.DeleteOnCleanup(t, h.ep.Client, h.keys)
	ddbtest.CreateTable(t, h.ep.Client, h.effects, "id")
	h.store = dynamostore.New(h.faulty, h.keys, func(o *dynamostore.Options) {
		o.Lease = time.Minute
		o.Retention = time.Hour
	})
	var s setup
	for _, fn := range optFns {
		fn(&s)
	}
	store := idemkey.Store(h.store)
	if s.store != nil {
		store = s.store(h)
	}
	h.svc = &ledger{effects: h.effects}
	opts := append([]func(*idemgrpc.Options){func(o *idemgrpc.Options) {
		o.Scope = tenantScope
		o.Methods = []string{methodCharge}
		o.KeyFields = map[string]string{methodKeyed: "idempotency_key", methodByReqID: "request_id"}
	}}, s.server...)
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(append(s.outer, idemgrpc.UnaryServerInterceptor(store, opts...))...),
		grpc.ChainStreamInterceptor(idemgrpc.StreamServerInterceptor(append(opts, s.stream...)...)))
	testpb.RegisterLedgerServer(srv, h.svc)
	lis := s.serveOn
	if lis == nil {
		h.lis = bufconn.Listen(1 << 20)
		lis = h.lis
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return h
}

// dial returns a client of the harness's server for tenant, with extra
// dial options (interceptors, service config).
func (h *harness) dial(tenant string, opts ...grpc.DialOption) testpb.LedgerClient {
	h.t.Helper()
	return h.dialTarget("passthrough:///bufnet", tenant, opts...)
}

// dialTarget is dial to another target (a TCP address).
func (h *harness) dialTarget(target, tenant string, opts ...grpc.DialOption) testpb.LedgerClient {
	h.t.Helper()
	base := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if tenant != "" {
		base = append(base, grpc.WithPerRPCCredentials(bearer(tenant)))
	}
	if h.lis != nil {
		base = append(base, grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return h.lis.DialContext(ctx) }))
	}
	conn, err := grpc.NewClient(target, append(base, opts...)...)
	require.NoError(h.t, err)
	h.t.Cleanup(func() { _ = conn.Close() })
	return testpb.NewLedgerClient(conn)
}

// answer is one call's outcome.
type answer struct {
	reply   *testpb.ChargeReply
	err     error
	header  metadata.MD
	trailer metadata.MD
}

func (a answer) code() codes.Code { return status.Code(a.err) }

// reason returns the ErrorInfo reason of the call's status, "" without one.
func (a answer) reason() string {
	for _, d := range status.Convert(a.err).Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			return ei.Reason
		}
	}
	return ""
}

// retryDelay returns the RetryInfo delay of the call's status and whether
// it has one.
func (a answer) retryDelay() (time.Duration, bool) {
	for _, d := range status.Convert(a.err).Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration(), true
		}
	}
	return 0, false
}

func withKey(ctx context.Context, key string) context.Context {
	if key == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, idemgrpc.KeyMetadata, key)
}

// charge calls Charge with key in the metadata.
func (h *harness) charge(c testpb.LedgerClient, key string, req *testpb.ChargeRequest) answer {
	h.t.Helper()
	return call(func(ctx context.Context, opts ...grpc.CallOption) (*testpb.ChargeReply, error) {
		return c.Charge(withKey(ctx, key), req, opts...)
	})
}

func call(f func(ctx context.Context, opts ...grpc.CallOption) (*testpb.ChargeReply, error)) answer {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var a answer
	a.reply, a.err = f(ctx, grpc.Header(&a.header), grpc.Trailer(&a.trailer))
	return a
}

// effectsOf counts the effect items staged under key.
func (h *harness) effectsOf(key string) int {
	h.t.Helper()
	return ddbtest.CountItems(h.t, h.ep.Client, h.effects, "key", key)
}

// blockNext makes the next executions wait for release; started is
// closed when the first of them begins.
func (h *harness) blockNext() (started chan struct{}, release func()) {
	started, gate := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h.svc.setBehaviour(func(ctx context.Context, n int64) (*testpb.ChargeReply, error) {
		once.Do(func() { close(started) })
		<-gate
		return &testpb.ChargeReply{Id: fmt.Sprintf("ch_%d", n), Execution: n}, nil
	})
	return started, func() { close(gate) }
}

// idleStore is a store whose client is never contacted: for construction
// tests.
func idleStore() *dynamostore.Store {
	return dynamostore.New(dynamodb.New(dynamodb.Options{Region: "us-east-1"}), "keys")
}
