// Command payments is idemkey's example: a payments API whose POST is safe
// to retry. Each payment is written in the same DynamoDB transaction as its
// idempotency key record.
//
//	go run ./examples/payments [-addr 127.0.0.1:8080] [-ttl 24h] [-lease 5m] [-latency 0]
//
// With AWS_ENDPOINT_URL_DYNAMODB set it uses that endpoint; otherwise it
// starts the embedded DynamoDB emulator (data lives as long as the process).
//
//	POST /payments        Authorization: Bearer <token>, Idempotency-Key: <key>
//	                      {"amount": 1250, "currency": "EUR", "description": "..."}
//	GET  /payments/{id}   the caller's payment, 404 otherwise
//	GET  /payments        {"payments": [...], "count": N}
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/idemkey/idemkey/examples/payments/paymentsapi"
	"github.com/idemkey/idemkey/localstack"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "payments:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("payments", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	ttl := fs.Duration("ttl", 24*time.Hour, "retention of idempotency keys")
	lease := fs.Duration("lease", 5*time.Minute, "lock lease: how long an unfinished request holds its key")
	latency := fs.Duration("latency", 0, "simulated payment-processor latency inside the handler")
	keyTable := fs.String("key-table", "idemkey-keys", "DynamoDB table of idempotency keys")
	paymentTable := fs.String("payment-table", "payments", "DynamoDB table of payments")
	unguarded := fs.Bool("unguarded", false, "serve POST /payments WITHOUT idemkey (load-test baseline only: retries pay twice)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *ttl <= 0 || *lease <= 0:
		return fmt.Errorf("-ttl and -lease must be positive (got %v and %v)", *ttl, *lease)
	case *ttl < *lease:
		return fmt.Errorf("-ttl (%v) must be at least -lease (%v): a key must not expire while its request still runs", *ttl, *lease)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	ep, err := localstack.Start(ctx)
	if err != nil {
		return fmt.Errorf("DynamoDB endpoint: %w", err)
	}
	defer ep.Close()
	cfg := paymentsapi.Config{KeyTable: *keyTable, PaymentTable: *paymentTable, Retention: *ttl, Lease: *lease, Latency: *latency, Unguarded: *unguarded}
	if err := paymentsapi.EnsureTables(ctx, ep.Client, cfg); err != nil {
		return fmt.Errorf("creating tables: %w", err)
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: paymentsapi.NewHandler(ep.Client, cfg), ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
	where := "embedded emulator"
	if !ep.Embedded {
		where = ep.URL
	}
	fmt.Fprintf(stdout, "payments listening on http://%s (DynamoDB: %s)\n", ln.Addr(), where)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
