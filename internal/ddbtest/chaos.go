package ddbtest

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Position names which of idemkey's DynamoDB calls a request is.
type Position string

const (
	Claim    Position = "claim"    // PutItem of an in-progress record
	Commit   Position = "commit"   // TransactWriteItems, or PutItem of a completed record
	Release  Position = "release"  // DeleteItem
	Fallback Position = "fallback" // GetItem (the consistent read after a condition failure)
)

// Kind is a kind of injected fault.
type Kind string

const (
	Throttle      Kind = "throttle"       // 400 ThrottlingException, not applied (the SDK retries it)
	ServerError   Kind = "server_error"   // 500 InternalServerError, not applied (the SDK retries it)
	TimeoutBefore Kind = "timeout_before" // a timeout before DynamoDB saw the request
	TimeoutAfter  Kind = "timeout_after"  // a timeout after DynamoDB applied it: the ambiguous outcome
)

var kinds = []Kind{Throttle, ServerError, TimeoutBefore, TimeoutAfter}

// timeoutError is what a client-side timeout looks like to the SDK's
// retryer.
type timeoutError struct{ after bool }

func (e timeoutError) Error() string {
	if e.after {
		return "ddbtest: injected timeout after the request was applied"
	}
	return "ddbtest: injected timeout before the request was sent"
}
func (timeoutError) Timeout() bool { return true }

// Chaos is an http.RoundTripper for the SDK's HTTP client that injects
// faults of every Kind into DynamoDB calls at random, at a rate by
// position, from a seeded source: the same seed and call sequence give the
// same faults. It counts what it injected.
type Chaos struct {
	next http.RoundTripper
	rate map[Position]float64

	mu       sync.Mutex
	rnd      *rand.Rand
	injected map[string]int
	enabled  bool
}

// NewChaos returns an enabled Chaos over next (nil:
// http.DefaultTransport) with the seed and the fault rates by position.
func NewChaos(next http.RoundTripper, seed uint64, rate map[Position]float64) *Chaos {
	if next == nil {
		next = http.DefaultTransport
	}
	return &Chaos{next: next, rate: rate, rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), injected: map[string]int{}, enabled: true}
}

// SetEnabled turns injection on or off (to read the final state cleanly).
func (c *Chaos) SetEnabled(on bool) { c.mu.Lock(); c.enabled = on; c.mu.Unlock() }

// Injected returns the faults injected so far, keyed "position/kind".
func (c *Chaos) Injected() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.injected)
}

// positionOf classifies a DynamoDB request by its target and body ("" for
// a call of none of the positions).
func positionOf(target string, body []byte) Position {
	op := target[strings.LastIndexByte(target, '.')+1:]
	switch op {
	case "PutItem":
		// The key record's state "s": "p" in progress, "c" completed.
		if bytes.Contains(body, []byte(`"s":{"S":"c"}`)) {
			return Commit
		}
		if bytes.Contains(body, []byte(`"s":{"S":"p"}`)) {
			return Claim
		}
	case "TransactWriteItems":
		return Commit
	case "DeleteItem":
		return Release
	case "GetItem":
		return Fallback
	}
	return ""
}

func (c *Chaos) draw(pos Position) (Kind, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.enabled || c.rnd.Float64() >= c.rate[pos] {
		return "", false
	}
	k := kinds[c.rnd.IntN(len(kinds))]
	c.injected[string(pos)+"/"+string(k)]++
	return k, true
}

// RoundTrip forwards req, or fails it as drawn.
func (c *Chaos) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		_ = req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	kind, fault := c.draw(positionOf(req.Header.Get("X-Amz-Target"), body))
	if !fault {
		return c.next.RoundTrip(req)
	}
	switch kind {
	case Throttle:
		return synthetic(req, http.StatusBadRequest, "com.amazonaws.dynamodb.v20120810#ThrottlingException", "Rate of requests exceeds the allowed throughput (injected)"), nil
	case ServerError:
		return synthetic(req, http.StatusInternalServerError, "com.amazonaws.dynamodb.v20120810#InternalServerError", "Internal server error (injected)"), nil
	case TimeoutBefore:
		return nil, timeoutError{}
	default: // TimeoutAfter
		resp, err := c.next.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return nil, timeoutError{after: true}
	}
}

func synthetic(req *http.Request, status int, typ, msg string) *http.Response {
	b := fmt.Sprintf(`{"__type":%q,"message":%q}`, typ, msg)
	return &http.Response{
		StatusCode: status, Status: http.StatusText(status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body:          io.NopCloser(strings.NewReader(b)),
		ContentLength: int64(len(b)),
		Request:       req,
	}
}

// LostAnswers is an aws.HTTPClient that replaces DynamoDB's answers to
// the first requests of one operation by a 500 InternalServerError: the
// request was applied, the client never learns it, and the SDK sends it
// again. It is safe for concurrent use.
type LostAnswers struct {
	next aws.HTTPClient
	op   string

	mu         sync.Mutex
	left, lost int
}

// NewLostAnswers returns a client over next that loses the answers of the
// first n requests of op (such as "DeleteItem").
func NewLostAnswers(next aws.HTTPClient, op string, n int) *LostAnswers {
	return &LostAnswers{next: next, op: op, left: n}
}

// Lost returns how many answers were lost so far.
func (l *LostAnswers) Lost() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

func (l *LostAnswers) Do(req *http.Request) (*http.Response, error) {
	lose := false
	if strings.HasSuffix(req.Header.Get("X-Amz-Target"), "."+l.op) {
		l.mu.Lock()
		if l.left > 0 {
			l.left--
			lose = true
		}
		l.mu.Unlock()
	}
	resp, err := l.next.Do(req)
	if !lose || err != nil {
		return resp, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	l.mu.Lock()
	l.lost++
	l.mu.Unlock()
	return synthetic(req, http.StatusInternalServerError, "com.amazonaws.dynamodb.v20120810#InternalServerError", "Internal server error (injected after the request was applied)"), nil
}
