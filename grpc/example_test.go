package grpc_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/idemkey/idemkey/dynamostore"
	idemgrpc "github.com/idemkey/idemkey/grpc"
	"github.com/idemkey/idemkey/grpc/internal/testpb"
	"github.com/idemkey/idemkey/localstack"
)

// exampleLedger answers Charge with the number of its execution.
type exampleLedger struct {
	testpb.UnimplementedLedgerServer
	executions atomic.Int64
}

func (l *exampleLedger) Charge(ctx context.Context, r *testpb.ChargeRequest) (*testpb.ChargeReply, error) {
	n := l.executions.Add(1)
	// Staged writes go on txn.FromContext(ctx); they commit with the key.
	return &testpb.ChargeReply{Id: fmt.Sprintf("ch_%d", n), Account: r.Account, Cents: r.Cents}, nil
}

// serveExample starts a Ledger server guarded by idemkey on an in-memory
// listener and returns a connection to it with the client interceptor.
func serveExample(ctx context.Context, client *dynamodb.Client, table string, clientOpts ...func(*idemgrpc.ClientOptions)) (*grpc.ClientConn, func()) {
	store := dynamostore.New(client, table)
	srv := grpc.NewServer(
		grpc.UnaryInterceptor(idemgrpc.UnaryServerInterceptor(store, func(o *idemgrpc.Options) {
			o.Methods = []string{"/idemkey.grpc.test.v1.Ledger/Charge"}
			// The scope is the authenticated caller; here, a token in the metadata.
			o.Scope = func(ctx context.Context) (string, error) {
				md, _ := metadata.FromIncomingContext(ctx)
				if v := md.Get("authorization"); len(v) == 1 {
					return strings.TrimPrefix(v[0], "Bearer "), nil
				}
				return "", errors.New("no token")
			}
		})),
		grpc.StreamInterceptor(idemgrpc.StreamServerInterceptor()))
	testpb.RegisterLedgerServer(srv, &exampleLedger{})
	lis := bufconn.Listen(1 << 20)
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///ledger",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithUnaryInterceptor(idemgrpc.UnaryClientInterceptor(clientOpts...)))
	if err != nil {
		log.Fatal(err)
	}
	return conn, func() { _ = conn.Close(); srv.Stop() }
}

// The server interceptor guards Charge; the client's key, kept across a
// retry, makes the retry a replay with the first answer.
func ExampleUnaryServerInterceptor() {
	ctx := context.Background()
	ep, err := localstack.Start(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer ep.Close()
	table := localstack.TableName("keys")
	if err := dynamostore.EnsureTable(ctx, ep.Client, table, 0); err != nil {
		log.Fatal(err)
	}
	defer ep.Client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &table})
	conn, stop := serveExample(ctx, ep.Client, table)
	defer stop()

	ledger := testpb.NewLedgerClient(conn)
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer alice")
	ctx = idemgrpc.WithKey(ctx, "order-42") // one key for the logical call and its retries
	for range 2 {
		var header metadata.MD
		reply, err := ledger.Charge(ctx, &testpb.ChargeRequest{Account: "acc-1", Cents: 1250}, grpc.Header(&header))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(reply.Id, "replayed:", header.Get(idemgrpc.ReplayedMetadata))
	}
	// A new request under the same key is refused.
	_, err = ledger.Charge(ctx, &testpb.ChargeRequest{Account: "acc-1", Cents: 9999})
	fmt.Println(status.Code(err))
	// Output:
	// ch_1 replayed: []
	// ch_1 replayed: [true]
	// FailedPrecondition
}

// A bounded retry loop over the key: Unavailable and Aborted-with-RetryInfo
// are retried with the same key, within the call's deadline.
func ExampleUnaryClientInterceptor() {
	ctx := context.Background()
	ep, err := localstack.Start(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer ep.Close()
	table := localstack.TableName("keys")
	if err := dynamostore.EnsureTable(ctx, ep.Client, table, 0); err != nil {
		log.Fatal(err)
	}
	defer ep.Client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &table})
	conn, stop := serveExample(ctx, ep.Client, table, func(o *idemgrpc.ClientOptions) {
		o.Methods = []string{"/idemkey.grpc.test.v1.Ledger/Charge"} // the guarded methods
		o.MaxAttempts = 4
		o.MaxDelay = 2 * time.Second
	})
	defer stop()

	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer bob"), 10*time.Second)
	defer cancel()
	reply, err := testpb.NewLedgerClient(conn).Charge(ctx, &testpb.ChargeRequest{Account: "acc-2", Cents: 5})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(reply.Id)
	// Output:
	// ch_1
}
