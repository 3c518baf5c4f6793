// Command emulator serves idemkey's embedded DynamoDB emulator (see package
// localstack) on a TCP address until it
// receives SIGINT or SIGTERM, then shuts down gracefully: it stops accepting
// connections and waits up to 10 seconds for requests in flight.
//
// Usage:
//
//	go run ./localstack/cmd/emulator [-addr 127.0.0.1:8000]
//
// Once it accepts connections it logs its URL to stderr and prints
// "listening on http://ADDR" as one line on stdout, so that scripts can wait
// for that line and then set AWS_ENDPOINT_URL_DYNAMODB=http://ADDR. With
// port 0 the kernel picks the port and the line names it. It exits
// with status 0 after a graceful shutdown, 1 when it cannot listen or serve,
// and 2 on bad flags.
//
// The emulator keeps all data in memory and checks no credentials: serve it
// on loopback only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/idemkey/idemkey/localstack"
)

const shutdownTimeout = 10 * time.Second

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command with its arguments and output streams; it returns the
// exit status.
func run(args []string, stdout, stderr io.Writer) int {
	logger := log.New(stderr, "emulator: ", log.LstdFlags)
	fs := flag.NewFlagSet("emulator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8000", "TCP `address` to listen on (port 0 picks a free port)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "emulator: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		logger.Print(err)
		return 1
	}
	srv := &http.Server{
		Handler:           localstack.NewHandler(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          logger,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	url := "http://" + ln.Addr().String()
	logger.Printf("serving DynamoDB at %s (set %s=%s)", url, localstack.EndpointEnv, url)
	fmt.Fprintf(stdout, "listening on %s\n", url)

	select {
	case err := <-served:
		logger.Print(err)
		return 1
	case <-ctx.Done():
	}
	stop() // a second signal now kills the process
	logger.Print("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Printf("shutdown: %v", err)
		return 1
	}
	return 0
}
