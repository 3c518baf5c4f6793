// Package lambdatest serves a local AWS Lambda Runtime API, so that a
// Lambda function's own bootstrap binary can be tested on a laptop or in
// CI, exactly as Lambda runs it: the bootstrap polls for invocations,
// aws-lambda-go sets each invocation's deadline and context from the
// Lambda-Runtime-* headers, and the function's response or error (with the
// errorType Lambda would report) comes back to the test.
//
// A test starts a Runtime, starts the bootstrap with the Runtime's
// environment (Env: AWS_LAMBDA_RUNTIME_API and the function's name), and
// invokes it:
//
//	rt, err := lambdatest.Start()
//	...
//	cmd := exec.Command("./bootstrap")
//	cmd.Env = append(os.Environ(), rt.Env()...)
//	err = cmd.Start()
//	...
//	res, err := rt.Invoke(ctx, event) // res.Payload, or res.Error
//
// The Runtime also answers Lambda's Invoke API on
// POST /2015-03-31/functions/{name}/invocations, so a function it serves
// can be invoked with curl (the event is the request body; the answer is
// the response body, with X-Amz-Function-Error: Unhandled after a
// function error, as Lambda answers).
//
// What it is not: it does not start, restart or stop the function's
// process (a test does: as Lambda, it should kill a process whose
// invocation outlived its deadline), it runs one invocation at a time per
// polling process, it implements no extensions, telemetry or response
// streaming, and it checks no credentials: serve it on loopback only.
//
// The Runtime API is documented at
// https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html.
package lambdatest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// DefaultTimeout is a function's timeout when Options.Timeout is not set:
// 3 seconds, Lambda's default.
const DefaultTimeout = 3 * time.Second

// DefaultFunctionName names the function when Options.FunctionName is not
// set.
const DefaultFunctionName = "function"

// Options configure a Runtime. The zero value of each field selects its
// default.
type Options struct {
	// Addr is the TCP address to listen on (default "127.0.0.1:0": a free
	// port on loopback, which Addr reports).
	Addr string
	// FunctionName is the function's name, in the environment (Env) and
	// in the invoked function ARN of each invocation (default
	// DefaultFunctionName).
	FunctionName string
	// Timeout is the function's timeout: each invocation's deadline is this
	// long after the function receives it (default DefaultTimeout).
	Timeout time.Duration
}

// FunctionError is what a function reported instead of a response: the
// document its runtime posts to the Runtime API. For a function built with
// aws-lambda-go, Type is the name of the error's type (without package or
// pointer), or of the panic value's type.
type FunctionError struct {
	Message    string          `json:"errorMessage"`
	Type       string          `json:"errorType"`
	StackTrace json.RawMessage `json:"stackTrace,omitempty"`
}

func (e *FunctionError) Error() string {
	return "lambdatest: function error " + e.Type + ": " + e.Message
}

// Result is the function's answer to one invocation: Payload after a
// response, Error after a function error; exactly one is set.
type Result struct {
	Payload []byte
	Error   *FunctionError
}

// ErrTimeout reports an invocation that the function did not answer
// before its deadline. Lambda would now stop the function's process; the
// test should kill it.
var ErrTimeout = errors.New("lambdatest: task timed out")

// ErrClosed reports an invocation on a Runtime that is closed.
var ErrClosed = errors.New("lambdatest: runtime closed")

type invocation struct {
	id      string
	payload []byte
	// taken is closed when the function receives the invocation, deadline
	// set just before.
	taken    chan struct{}
	deadline time.Time
	done     chan Result
}

// Runtime is a local Lambda Runtime API. Its methods are safe for
// concurrent use.
type Runtime struct {
	opts   Options
	addr   string
	srv    *http.Server
	queue  chan *invocation
	closed chan struct{}
	once   sync.Once

	mu      sync.Mutex
	pending map[string]*invocation // taken, not yet answered
	queued  map[*invocation]bool   // not yet taken
	seq     int
}

// Start serves a Runtime API until Close.
func Start(optFns ...func(*Options)) (*Runtime, error) {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.FunctionName == "" {
		o.FunctionName = DefaultFunctionName
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("lambdatest: %w", err)
	}
	rt := &Runtime{
		opts: o, addr: ln.Addr().String(),
		queue: make(chan *invocation, 64), closed: make(chan struct{}),
		pending: map[string]*invocation{}, queued: map[*invocation]bool{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", rt.next)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", rt.answer(false))
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", rt.answer(true))
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
	})
	mux.HandleFunc("POST /2015-03-31/functions/{name}/invocations", rt.invokeAPI)
	rt.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = rt.srv.Serve(ln) }()
	return rt, nil
}

// Addr returns the host:port the Runtime serves on: the value of
// AWS_LAMBDA_RUNTIME_API for the function.
func (rt *Runtime) Addr() string { return rt.addr }

// Env returns the environment variables Lambda gives a function that a
// bootstrap started against this Runtime needs, as "NAME=value":
// AWS_LAMBDA_RUNTIME_API, AWS_LAMBDA_FUNCTION_NAME,
// AWS_LAMBDA_FUNCTION_VERSION ($LATEST) and
// AWS_LAMBDA_FUNCTION_MEMORY_SIZE (128). Append them to the process's own
// (the AWS region, credentials and the function's configuration).
func (rt *Runtime) Env() []string {
	return []string{
		"AWS_LAMBDA_RUNTIME_API=" + rt.addr,
		"AWS_LAMBDA_FUNCTION_NAME=" + rt.opts.FunctionName,
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=128",
	}
}

// Close stops serving. Invocations in progress fail with ErrClosed.
func (rt *Runtime) Close() error {
	rt.once.Do(func() { close(rt.closed) })
	return rt.srv.Close()
}

// Invoke queues an invocation with event as its payload and waits for the
// function's answer. The event is sent as its JSON encoding; a []byte or a
// json.RawMessage is sent as it is, and must be JSON.
//
// The invocation waits in the queue until a function polls for it, with
// no time limit but ctx's; from then on it has the Runtime's Timeout. It
// fails with ErrTimeout when the function does not answer by its
// deadline, with ctx's error when ctx ends first (a queued invocation is
// then withdrawn), and with ErrClosed when the Runtime is closed. A
// function error is not an error of Invoke: it is Result.Error.
func (rt *Runtime) Invoke(ctx context.Context, event any) (Result, error) {
	var payload []byte
	switch e := event.(type) {
	case []byte:
		payload = e
	case json.RawMessage:
		payload = e
	default:
		b, err := json.Marshal(event)
		if err != nil {
			return Result{}, fmt.Errorf("lambdatest: encoding the event: %w", err)
		}
		payload = b
	}
	select {
	case <-rt.closed:
		return Result{}, ErrClosed
	default:
	}
	rt.mu.Lock()
	rt.seq++
	inv := &invocation{
		id:      "00000000-0000-4000-8000-" + fmt.Sprintf("%012d", rt.seq),
		payload: payload, taken: make(chan struct{}), done: make(chan Result, 1),
	}
	rt.queued[inv] = true
	rt.mu.Unlock()

	select {
	case rt.queue <- inv:
	case <-ctx.Done():
		rt.withdraw(inv)
		return Result{}, ctx.Err()
	case <-rt.closed:
		return Result{}, ErrClosed
	}
	select {
	case <-inv.taken:
	case <-ctx.Done():
		if rt.withdraw(inv) {
			return Result{}, ctx.Err()
		}
		<-inv.taken // taken meanwhile: it runs; wait no longer for it
		rt.forget(inv)
		return Result{}, ctx.Err()
	case <-rt.closed:
		return Result{}, ErrClosed
	}
	t := time.NewTimer(time.Until(inv.deadline))
	defer t.Stop()
	select {
	case res := <-inv.done:
		return res, nil
	case <-t.C:
		rt.forget(inv)
		return Result{}, fmt.Errorf("%w after %v", ErrTimeout, rt.opts.Timeout)
	case <-ctx.Done():
		rt.forget(inv)
		return Result{}, ctx.Err()
	case <-rt.closed:
		return Result{}, ErrClosed
	}
}

// withdraw removes a queued invocation, reporting whether it was still
// queued (not taken by a function).
func (rt *Runtime) withdraw(inv *invocation) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	q := rt.queued[inv]
	delete(rt.queued, inv)
	return q
}

// forget drops a taken invocation: a later answer to it is refused.
func (rt *Runtime) forget(inv *invocation) {
	rt.mu.Lock()
	delete(rt.pending, inv.id)
	rt.mu.Unlock()
}

// next hands the oldest queued invocation to a polling function.
func (rt *Runtime) next(w http.ResponseWriter, r *http.Request) {
	for {
		var inv *invocation
		select {
		case inv = <-rt.queue:
		case <-r.Context().Done():
			return
		case <-rt.closed:
			return
		}
		rt.mu.Lock()
		live := rt.queued[inv]
		delete(rt.queued, inv)
		if live {
			inv.deadline = time.Now().Add(rt.opts.Timeout)
			rt.pending[inv.id] = inv
		}
		rt.mu.Unlock()
		if !live {
			continue // withdrawn by its caller
		}
		close(inv.taken)
		h := w.Header()
		h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
		h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(inv.deadline.UnixMilli(), 10))
		h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:"+rt.opts.FunctionName)
		h.Set("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000;Sampled=0")
		h.Set("Content-Type", "application/json")
		_, _ = w.Write(inv.payload)
		return
	}
}

// answer takes the function's response (or error) to an invocation.
func (rt *Runtime) answer(isError bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, `{"errorMessage":"unreadable body"}`, http.StatusBadRequest)
			return
		}
		id := r.PathValue("id")
		rt.mu.Lock()
		inv := rt.pending[id]
		delete(rt.pending, id)
		rt.mu.Unlock()
		if inv == nil {
			// Unknown, already answered, or past its deadline.
			http.Error(w, `{"errorMessage":"invocation not pending","errorType":"InvalidRequestID"}`, http.StatusBadRequest)
			return
		}
		res := Result{Payload: body}
		if isError {
			fe := &FunctionError{}
			if json.Unmarshal(body, fe) != nil {
				fe = &FunctionError{Message: string(body), Type: r.Header.Get("Lambda-Runtime-Function-Error-Type")}
			}
			res = Result{Error: fe}
		}
		inv.done <- res
		w.WriteHeader(http.StatusAccepted)
	}
}

// invokeAPI answers Lambda's Invoke API (RequestResponse): the body is the
// event, the response the function's payload or error document.
func (rt *Runtime) invokeAPI(w http.ResponseWriter, r *http.Request) {
	if name := r.PathValue("name"); name != rt.opts.FunctionName {
		w.Header().Set("X-Amzn-ErrorType", "ResourceNotFoundException")
		writeJSON(w, http.StatusNotFound, map[string]string{"Type": "User", "Message": "Function not found: " + name})
		return
	}
	event, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	if len(bytes.TrimSpace(event)) == 0 {
		event = []byte("{}") // as Lambda invokes with no payload
	}
	if !json.Valid(event) {
		w.Header().Set("X-Amzn-ErrorType", "InvalidRequestContentException")
		writeJSON(w, http.StatusBadRequest, map[string]string{"Type": "User", "Message": "Could not parse request body into json"})
		return
	}
	res, err := rt.Invoke(r.Context(), json.RawMessage(event))
	switch {
	case errors.Is(err, ErrTimeout):
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
		writeJSON(w, http.StatusOK, &FunctionError{Type: "Sandbox.Timedout", Message: fmt.Sprintf("Task timed out after %.2f seconds", rt.opts.Timeout.Seconds())})
	case err != nil:
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"Type": "Service", "Message": err.Error()})
	case res.Error != nil:
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
		writeJSON(w, http.StatusOK, res.Error)
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(res.Payload)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
