// Command runtimeapi serves a local AWS Lambda Runtime API (package
// lambdatest) and, when given one, runs a function's bootstrap against it,
// so that a Lambda function can be run on a laptop and invoked with curl.
//
// Usage:
//
//	runtimeapi [-addr 127.0.0.1:9001] [-function function] [-timeout 3s] [bootstrap [arg...]]
//
// It serves Lambda's Invoke API on the same address: POST an event to
// http://ADDR/2015-03-31/functions/FUNCTION/invocations and the response
// body is the function's answer (with X-Amz-Function-Error: Unhandled
// after a function error). Each invocation's deadline is -timeout after
// the function receives it.
//
// The bootstrap runs with the command's environment plus
// AWS_LAMBDA_RUNTIME_API, AWS_LAMBDA_FUNCTION_NAME,
// AWS_LAMBDA_FUNCTION_VERSION and AWS_LAMBDA_FUNCTION_MEMORY_SIZE. When it
// exits, as an aws-lambda-go function does after a panic or an answer past
// its deadline, it is started again, as Lambda starts a new execution
// environment, unless it exited within a second of its start three times
// in a row: the command then exits with its status. Without a bootstrap, start one
// yourself with AWS_LAMBDA_RUNTIME_API=ADDR.
//
// Once it accepts connections it prints "listening on ADDR" as one line on
// stdout. It stops on SIGINT or SIGTERM (and stops the bootstrap), exiting
// with status 0; 1 when it cannot listen or the bootstrap cannot start; 2
// on bad flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/idemkey/idemkey/lambda/lambdatest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// A bootstrap that exits within minUptime of its start maxEarlyExits times
// in a row is not started again.
const (
	minUptime     = time.Second
	maxEarlyExits = 3
)

// run is the command with its arguments and output streams, until ctx
// ends; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("runtimeapi", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o lambdatest.Options
	fs.StringVar(&o.Addr, "addr", "127.0.0.1:9001", "TCP `address` to listen on (port 0 picks a free port)")
	fs.StringVar(&o.FunctionName, "function", lambdatest.DefaultFunctionName, "the function's `name`, in its environment and in the Invoke API's path")
	fs.DurationVar(&o.Timeout, "timeout", lambdatest.DefaultTimeout, "the function's timeout: each invocation's deadline is this long after the function receives it")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if o.Timeout <= 0 {
		fmt.Fprintln(stderr, "runtimeapi: -timeout must be positive")
		return 2
	}
	rt, err := lambdatest.Start(func(opts *lambdatest.Options) { *opts = o })
	if err != nil {
		fmt.Fprintln(stderr, "runtimeapi:", err)
		return 1
	}
	defer rt.Close()
	fmt.Fprintln(stdout, "listening on "+rt.Addr())
	fmt.Fprintf(stderr, "runtimeapi: invoke with: curl -s http://%s/2015-03-31/functions/%s/invocations -d @event.json\n", rt.Addr(), o.FunctionName)
	if fs.NArg() == 0 {
		<-ctx.Done()
		return 0
	}
	for early := 0; ; {
		started := time.Now()
		cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
		cmd.Env = append(os.Environ(), rt.Env()...)
		cmd.Stdout, cmd.Stderr = stdout, stderr
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(stderr, "runtimeapi:", err)
			return 1
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case <-ctx.Done():
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(2 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
			return 0
		case err := <-exited:
			if ctx.Err() != nil {
				return 0 // stopped with the command, by the same signal
			}
			early++
			if time.Since(started) >= minUptime {
				early = 0
			}
			if early == maxEarlyExits {
				fmt.Fprintf(stderr, "runtimeapi: the bootstrap exited at its start %d times in a row (%v)\n", early, err)
				if code := cmd.ProcessState.ExitCode(); code > 0 {
					return code
				}
				return 1
			}
			fmt.Fprintf(stderr, "runtimeapi: the bootstrap exited (%v); starting a new one\n", err)
		}
	}
}
