// Command payments-grpc serves the payments API of examples/payments over
// gRPC (service idemkey.examples.payments.v1.Payments), guarded by
// idemkey's gRPC interceptor, on the embedded DynamoDB emulator (or the
// DynamoDB of AWS_ENDPOINT_URL_DYNAMODB):
//
//	go run ./examples/payments-grpc            # serves on 127.0.0.1:9090
//	go run ./examples/payments-grpc -demo      # creates one payment twice with one key, prints both answers
//
// CreatePayment is guarded: a call carries an "idempotency-key" metadata
// value, and its retries get the stored answer, with
// "idempotent-replayed: true" in their header. The caller is the bearer
// token of the "authorization" metadata; as in examples/payments, its
// owner (and idempotency scope) is paymentsapi.OwnerOf(token), and the
// tables and the Payment type are that example's. The generated code in
// paymentspb comes from scripts/protoc.sh.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/examples/payments-grpc/paymentspb"
	"github.com/idemkey/idemkey/examples/payments/paymentsapi"
	idemgrpc "github.com/idemkey/idemkey/grpc"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/txn"
)

const createMethod = "/idemkey.examples.payments.v1.Payments/CreatePayment"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		log.Fatal(err)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("payments-grpc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9090", "listen address")
	demo := fs.Bool("demo", false, "serve on a free loopback port, create one payment twice with one key, print both answers and exit")
	keyTable := fs.String("key-table", "idemkey-keys", "the key table, created if missing")
	paymentTable := fs.String("payment-table", "payments", "the payments table, created if missing")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ep, err := localstack.Start(ctx)
	if err != nil {
		return err
	}
	defer ep.Close()
	cfg := paymentsapi.Config{KeyTable: *keyTable, PaymentTable: *paymentTable}
	if err := paymentsapi.EnsureTables(ctx, ep.Client, cfg); err != nil {
		return err
	}
	if *demo {
		*addr = "127.0.0.1:0"
	}
	lis, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := newServer(ep.Client, cfg)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	if *demo {
		return runDemo(ctx, lis.Addr().String(), stdout)
	}
	fmt.Fprintf(stdout, "payments-grpc: serving %s on %s\n", "idemkey.examples.payments.v1.Payments", lis.Addr())
	<-ctx.Done()
	return nil
}

// newServer returns the gRPC server: authentication, then idemkey, then
// the service.
func newServer(client *dynamodb.Client, cfg paymentsapi.Config) *grpc.Server {
	store := dynamostore.New(client, cfg.KeyTable)
	guarded := func(o *idemgrpc.Options) {
		o.Methods = []string{createMethod}
		o.Scope = func(ctx context.Context) (string, error) { return ownerFrom(ctx), nil }
	}
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(authenticate, idemgrpc.UnaryServerInterceptor(store, guarded)),
		grpc.StreamInterceptor(idemgrpc.StreamServerInterceptor(guarded)))
	paymentspb.RegisterPaymentsServer(srv, &payments{client: client, table: cfg.PaymentTable})
	return srv
}

type ownerKey struct{}

func ownerFrom(ctx context.Context) string { s, _ := ctx.Value(ownerKey{}).(string); return s }

// authenticate requires "authorization: Bearer <token>" and puts the
// token's owner in the context.
func authenticate(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	var token string
	ok := false
	if v := md.Get("authorization"); len(v) == 1 {
		token, ok = strings.CutPrefix(v[0], "Bearer ")
	}
	if token = strings.TrimSpace(token); !ok || token == "" {
		return nil, status.Error(codes.Unauthenticated, `send "authorization: Bearer <token>" metadata`)
	}
	return next(context.WithValue(ctx, ownerKey{}, paymentsapi.OwnerOf(token)), req)
}

type payments struct {
	paymentspb.UnimplementedPaymentsServer
	client *dynamodb.Client
	table  string
}

var currencyCode = regexp.MustCompile(`^[A-Z]{3}$`)

// CreatePayment validates the payment and stages its write on the call's
// transaction; idemkey commits it with the key record. InvalidArgument is
// a final answer: stored, and replayed to a retry.
func (s *payments) CreatePayment(ctx context.Context, in *paymentspb.CreatePaymentRequest) (*paymentspb.Payment, error) {
	if in.Amount <= 0 || !currencyCode.MatchString(in.Currency) {
		return nil, status.Error(codes.InvalidArgument, "send a positive amount in minor units and an ISO 4217 currency code")
	}
	tx, ok := txn.FromContext(ctx)
	if !ok {
		return nil, status.Error(codes.Internal, "payments must be created through idemkey")
	}
	p, put := paymentsapi.NewPayment(paymentsapi.Payment{Amount: in.Amount, Currency: in.Currency}, ownerFrom(ctx), s.table, time.Now())
	tx.Put(put)
	return &paymentspb.Payment{Id: p.ID, Amount: p.Amount, Currency: p.Currency}, nil
}

// ListPayments lists the caller's payments, oldest first.
func (s *payments) ListPayments(ctx context.Context, _ *paymentspb.ListPaymentsRequest) (*paymentspb.ListPaymentsResponse, error) {
	list, err := paymentsapi.ListPayments(ctx, s.client, s.table, ownerFrom(ctx))
	if err != nil {
		return nil, status.Error(codes.Unavailable, "payments cannot be read right now")
	}
	out := &paymentspb.ListPaymentsResponse{}
	for _, p := range list {
		out.Payments = append(out.Payments, &paymentspb.Payment{Id: p.ID, Amount: p.Amount, Currency: p.Currency})
	}
	return out, nil
}

// runDemo calls CreatePayment twice with one key, as a client whose first
// answer was lost would, then lists the caller's payments.
func runDemo(ctx context.Context, addr string, stdout io.Writer) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(idemgrpc.UnaryClientInterceptor(func(o *idemgrpc.ClientOptions) {
			o.Methods = []string{createMethod}
			o.MaxAttempts = 3
		})))
	if err != nil {
		return err
	}
	defer conn.Close()
	c := paymentspb.NewPaymentsClient(conn)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer alice")
	// A new operation at every run, even on a kept table (or after the
	// HTTP session's order-42, which has another body).
	ctx = idemgrpc.WithKey(ctx, "demo-"+rand.Text())
	var ids []string
	for i := range 2 {
		var header metadata.MD
		p, err := c.CreatePayment(ctx, &paymentspb.CreatePaymentRequest{Amount: 1250, Currency: "EUR"}, grpc.Header(&header))
		if err != nil {
			return err
		}
		replayed := strings.Join(header.Get(idemgrpc.ReplayedMetadata), "")
		if replayed == "" {
			replayed = "false"
		}
		ids = append(ids, p.Id)
		fmt.Fprintf(stdout, "call %d: amount=%d currency=%s replayed=%s\n", i+1, p.Amount, p.Currency, replayed)
	}
	list, err := c.ListPayments(ctx, &paymentspb.ListPaymentsRequest{})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "same payment: %v; payments of alice: %d\n", ids[0] == ids[1], len(list.Payments))
	return nil
}
