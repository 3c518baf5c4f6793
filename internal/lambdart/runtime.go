// Package lambdart is a local implementation of the AWS Lambda Runtime API
// (the HTTP interface a custom runtime's bootstrap polls), for end-to-end
// tests of real bootstrap binaries: it queues invocations, hands them out on
// /2018-06-01/runtime/invocation/next with the Lambda-Runtime-* headers
// (Aws-Request-Id, Deadline-Ms, Invoked-Function-Arn, Trace-Id), and
// collects what the function posts to .../response and .../error.
//
// It does not run the function: a test starts the bootstrap with
// AWS_LAMBDA_RUNTIME_API set to Addr, and, as Lambda does, kills it when an
// invocation outlives its deadline.
package lambdart

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Result is what the function answered to one invocation.
type Result struct {
	// Payload is the body posted to /response; nil after an error.
	Payload []byte
	// Error is the body posted to /error (an errorMessage/errorType JSON
	// document); nil after a response.
	Error []byte
}

type invocation struct {
	id       string
	payload  []byte
	deadline time.Time
	done     chan Result
}

// Runtime is a running local Runtime API.
type Runtime struct {
	Addr string // host:port, the value of AWS_LAMBDA_RUNTIME_API

	srv     *http.Server
	ln      net.Listener
	queue   chan *invocation
	mu      sync.Mutex
	pending map[string]*invocation
	seq     int
}

// Start serves a Runtime API on a loopback port.
func Start() (*Runtime, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rt := &Runtime{Addr: ln.Addr().String(), ln: ln, queue: make(chan *invocation, 16), pending: map[string]*invocation{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", rt.next)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", rt.answer(false))
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", rt.answer(true))
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
	})
	rt.srv = &http.Server{Handler: mux}
	go func() { _ = rt.srv.Serve(ln) }()
	return rt, nil
}

// Close stops serving.
func (rt *Runtime) Close() error { return rt.srv.Close() }

// ErrDeadline reports an invocation that got no answer before its deadline.
var ErrDeadline = errors.New("lambdart: invocation timed out")

// Invoke queues payload (a JSON event) with the given timeout and waits for
// the function's answer. On a timeout it returns ErrDeadline; the caller
// then kills the function's process, as Lambda does.
func (rt *Runtime) Invoke(payload any, timeout time.Duration) (Result, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return Result{}, err
	}
	rt.mu.Lock()
	rt.seq++
	inv := &invocation{id: "req-" + strconv.Itoa(rt.seq), payload: b, deadline: time.Now().Add(timeout), done: make(chan Result, 1)}
	rt.pending[inv.id] = inv
	rt.mu.Unlock()
	rt.queue <- inv
	t := time.NewTimer(time.Until(inv.deadline))
	defer t.Stop()
	select {
	case res := <-inv.done:
		return res, nil
	case <-t.C:
		rt.mu.Lock()
		delete(rt.pending, inv.id)
		rt.mu.Unlock()
		return Result{}, fmt.Errorf("%w after %v", ErrDeadline, timeout)
	}
}

func (rt *Runtime) next(w http.ResponseWriter, r *http.Request) {
	var inv *invocation
	select {
	case inv = <-rt.queue:
	case <-r.Context().Done():
		return
	}
	h := w.Header()
	h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
	h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(inv.deadline.UnixMilli(), 10))
	h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:payments")
	h.Set("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000;Sampled=0")
	h.Set("Content-Type", "application/json")
	_, _ = w.Write(inv.payload)
}

func (rt *Runtime) answer(isError bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rt.mu.Lock()
		inv := rt.pending[r.PathValue("id")]
		delete(rt.pending, r.PathValue("id"))
		rt.mu.Unlock()
		if inv == nil {
			// Answered after its deadline: Lambda has already given up.
			http.Error(w, `{"errorMessage":"invocation not pending"}`, http.StatusGone)
			return
		}
		res := Result{Payload: body}
		if isError || strings.HasSuffix(r.URL.Path, "/error") {
			res = Result{Error: body}
		}
		inv.done <- res
		w.WriteHeader(http.StatusAccepted)
	}
}
