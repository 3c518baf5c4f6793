package localstack

import (
	"context"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// Latency is a per-call round-trip time, for benchmarks that measure what
// a request costs in round trips. Each call takes a duration drawn
// uniformly from [Base-Jitter, Base+Jitter] (never below zero) by a
// generator seeded with Seed, so one seed gives one sequence of
// durations; which call gets which depends on the order in which
// concurrent calls draw.
//
// The duration is the whole call as the client sees it, the endpoint's
// time to answer included, as a server's service time is part of a real
// round trip: the request is sent at once and its answer is handed back
// when the drawn duration has passed since it was sent, or as soon as it
// arrives when the endpoint took longer. An endpoint that serialises its
// requests (the embedded emulator) therefore keeps serving other calls
// while one is held, as a server does while a packet is on the wire.
//
// The Go runtime wakes a sleeping goroutine up to about a millisecond
// late when the process is otherwise idle (it waits for events in whole
// milliseconds), so each hold is shortened by the mean lateness of the
// client's holds so far: the durations spent average the drawn ones
// instead of exceeding them.
type Latency struct {
	// Base is the mean delay of a call, the round-trip time.
	Base time.Duration
	// Jitter is the largest deviation from Base, in either direction.
	Jitter time.Duration
	// Seed seeds the generator of the delays.
	Seed uint64
}

// latencyClient is an aws.HTTPClient that delays every call by a Latency
// before passing it to another client. It is safe for concurrent use.
type latencyClient struct {
	next aws.HTTPClient
	lat  Latency

	mu   sync.Mutex
	rnd  *rand.Rand
	late time.Duration // mean lateness of the waits so far (moving average)
}

// newLatencyClient returns a client that delays every call by lat and then
// sends it with next; a nil next selects the SDK's default HTTP client.
// It panics when Base or Jitter is negative.
func newLatencyClient(next aws.HTTPClient, lat Latency) *latencyClient {
	if lat.Base < 0 || lat.Jitter < 0 {
		panic("localstack: Latency needs a non-negative Base and Jitter")
	}
	if next == nil {
		next = awshttp.NewBuildableClient()
	}
	return &latencyClient{next: next, lat: lat, rnd: rand.New(rand.NewPCG(lat.Seed, lat.Seed^0x9e3779b97f4a7c15))}
}

// Latency returns the configured latency.
func (c *latencyClient) Latency() Latency { return c.lat }

// draw returns the next delay of the sequence.
func (c *latencyClient) draw() time.Duration {
	c.mu.Lock()
	u := c.rnd.Float64()
	c.mu.Unlock()
	d := c.lat.Base - c.lat.Jitter + time.Duration(u*float64(2*c.lat.Jitter))
	return max(d, 0)
}

// Do sends req with the next client and returns its answer once the
// call's drawn duration has passed. When req's context has ended before
// the call, Do returns the context's error and sends nothing; when it
// ends while the answer is held, Do closes the answer's body and returns
// the context's error.
func (c *latencyClient) Do(req *http.Request) (*http.Response, error) {
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	d := c.draw()
	sent := time.Now()
	resp, err := c.next.Do(req)
	if err != nil {
		return resp, err
	}
	c.mu.Lock()
	wait := holdFor(d, time.Since(sent), c.late)
	c.mu.Unlock()
	if wait <= 0 {
		return resp, nil
	}
	held := time.Now()
	if err := sleep(req.Context(), wait); err != nil {
		_ = resp.Body.Close()
		return nil, err
	}
	// A stall of the whole process (a GC pause, a descheduled VM) is not
	// timer lateness: samples are capped at maxLateness.
	late := min(max(time.Since(held)-wait, 0), maxLateness)
	c.mu.Lock()
	c.late += (late - c.late) / 16
	c.mu.Unlock()
	return resp, nil
}

// holdFor returns how long to hold an answer that took elapsed to arrive,
// for a call of drawn duration d, when timers wake up late by late on
// average: what remains of d, less the lateness; zero or less means the
// answer is handed back at once.
func holdFor(d, elapsed, late time.Duration) time.Duration {
	return d - elapsed - late
}

// maxLateness caps one hold's contribution to the lateness estimate: a
// little more than the millisecond by which the runtime can wake late.
const maxLateness = 1500 * time.Microsecond

// sleep waits for d or until ctx is done, whichever comes first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
