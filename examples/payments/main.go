// Command payments is idemkey's example: a payments API whose POST is safe
// to retry. Each payment is written in the same DynamoDB transaction as its
// idempotency key record.
//
//	go run ./examples/payments [-addr 127.0.0.1:8080] [-ttl 24h] [-lease 5m] [-latency 0]
//		[-key-table idemkey-keys] [-payment-table payments] [-single-table] [-otel] [-unguarded]
//
// With AWS_ENDPOINT_URL_DYNAMODB set it uses that endpoint; otherwise it
// starts the embedded DynamoDB emulator (data lives as long as the process:
// a restart begins with empty tables). It creates both tables if missing.
// With -single-table the key records live in the payments table, next to
// the payments (paymentsapi.SingleTableSchema), and -key-table is unused.
// With -otel it writes OpenTelemetry to stdout: a JSON span per guarded
// request and per DynamoDB call, and idemkey's metrics every 15 seconds
// and at exit.
// -h lists the flags and exits 0; a negative or zero -ttl or -lease, a
// negative -latency, or a -ttl shorter than -lease is refused before
// anything starts.
//
//	POST /payments        Authorization: Bearer <token>, Idempotency-Key: <key>
//	                      {"amount": 1250, "currency": "EUR", "description": "..."}
//	GET  /payments/{id}   the caller's payment, 404 otherwise
//	GET  /payments        {"payments": [...], "count": N}, oldest first
//
// The API's own errors are problem documents with type URIs under
// https://example.com/payments/problems/ (package paymentsapi lists them);
// idemkey's answers (a key reused, a request in flight) keep idemkey's.
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
	err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "payments:", err)
		os.Exit(1)
	}
}

// errUsage is returned for flags that do not parse; the flag package has
// printed why.
var errUsage = errors.New("invalid flags")

const usageText = `Usage: payments [flags]

A payments API whose POST /payments is safe to retry: each payment is
written in the same DynamoDB transaction as its idempotency key.

DynamoDB: the endpoint in AWS_ENDPOINT_URL_DYNAMODB when it is set
(DynamoDB Local, LocalStack, moto or AWS, with the SDK's usual credentials
and region; dummy credentials for a loopback URL when none are set).
Otherwise an embedded in-memory emulator: its data is lost when the
process exits. Both tables are created if missing.

Flags:
`

// flagSet returns the command's flags, which set s.
func flagSet(s *settings, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("payments", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText)
		fs.PrintDefaults()
	}
	fs.StringVar(&s.addr, "addr", "127.0.0.1:8080", "listen address")
	fs.DurationVar(&s.api.Retention, "ttl", 24*time.Hour, "retention of idempotency keys: a retry later than this executes again")
	fs.DurationVar(&s.api.Lease, "lease", 5*time.Minute, "lock lease: how long an unfinished request holds its key")
	fs.DurationVar(&s.api.Latency, "latency", 0, "simulated payment-processor latency inside the handler")
	fs.StringVar(&s.api.KeyTable, "key-table", "idemkey-keys", "DynamoDB table of idempotency keys")
	fs.StringVar(&s.api.PaymentTable, "payment-table", "payments", "DynamoDB table of payments")
	fs.BoolVar(&s.api.SingleTable, "single-table", false, "keep the idempotency keys in the payments table, under the prefix \"idemkey#\", instead of -key-table")
	fs.BoolVar(&s.otel, "otel", false, "write OpenTelemetry to stdout: a JSON span per guarded request (and its DynamoDB calls), idemkey's metrics every 15s and at exit")
	fs.BoolVar(&s.api.Unguarded, "unguarded", false, "serve POST /payments WITHOUT idemkey (load-test baseline only: retries pay twice)")
	return fs
}

// settings are the command line's choices.
type settings struct {
	addr string
	otel bool
	api  paymentsapi.Config
}

// parseFlags parses args. It returns flag.ErrHelp for -h, errUsage for
// flags that do not parse (after printing the usage to stderr), and an
// error naming the flag for values that cannot be used.
func parseFlags(args []string, stderr io.Writer) (settings, error) {
	var s settings
	fs := flagSet(&s, stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return s, err
		}
		return s, errUsage
	}
	switch {
	case fs.NArg() > 0:
		return s, fmt.Errorf("unexpected arguments %q: every setting is a flag (see -h)", fs.Args())
	case s.api.Retention <= 0:
		return s, fmt.Errorf("-ttl must be positive (got %v)", s.api.Retention)
	case s.api.Lease <= 0:
		return s, fmt.Errorf("-lease must be positive (got %v)", s.api.Lease)
	case s.api.Latency < 0:
		return s, fmt.Errorf("-latency must not be negative (got %v)", s.api.Latency)
	case s.api.Retention < s.api.Lease:
		return s, fmt.Errorf("-ttl (%v) must be at least -lease (%v): a key must not expire while its request still runs", s.api.Retention, s.api.Lease)
	}
	return s, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	s, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	// The embedded emulator runs in this process: its clients call it
	// without a socket (an external endpoint is reached over the network).
	ep, err := localstack.Start(ctx, func(o *localstack.Options) { o.InProcess = true })
	if err != nil {
		return fmt.Errorf("DynamoDB endpoint: %w", err)
	}
	defer ep.Close()
	if err := paymentsapi.EnsureTables(ctx, ep.Client, s.api); err != nil {
		return fmt.Errorf("creating tables: %w", err)
	}

	client := ep.Client
	if s.otel {
		tel, err := newTelemetry(stdout, 15*time.Second)
		if err != nil {
			return err
		}
		defer tel.shutdown(context.WithoutCancel(ctx))
		client, s.api.Observer = ep.NewClient(tel.client), tel.observer
	}

	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: paymentsapi.NewHandler(client, s.api), ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
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
