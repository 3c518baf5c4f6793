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

// Latency is a per-call network delay, for benchmarks that measure what a
// request costs in round trips. Each call is delayed by a duration drawn
// uniformly from [Base-Jitter, Base+Jitter] (never below zero) by a
// generator seeded with Seed, so one seed gives one sequence of delays;
// which call gets which delay depends on the order in which concurrent
// calls draw. The delay is spent before the request is sent. Timers wake
// up late (by a fraction of a millisecond on a virtual machine), so each
// wait is shortened by the mean lateness of the client's waits so far:
// the delays spent average the drawn ones instead of exceeding them.
//
// The delay is spent in the caller's HTTP client, outside the endpoint:
// an endpoint that serialises its requests (the embedded emulator) keeps
// serving other calls while one is delayed, as a server does while a
// packet is on the wire.
type Latency struct {
	// Base is the mean delay of a call, the round-trip time.
	Base time.Duration
	// Jitter is the largest deviation from Base, in either direction.
	Jitter time.Duration
	// Seed seeds the generator of the delays.
	Seed uint64
}

// LatencyClient is an aws.HTTPClient that delays every call by a Latency
// before passing it to another client. It is safe for concurrent use.
type LatencyClient struct {
	next aws.HTTPClient
	lat  Latency

	mu   sync.Mutex
	rnd  *rand.Rand
	late time.Duration // mean lateness of the waits so far (moving average)
}

// NewLatencyClient returns a client that delays every call by lat and then
// sends it with next; a nil next selects the SDK's default HTTP client.
// It panics when Base or Jitter is negative.
func NewLatencyClient(next aws.HTTPClient, lat Latency) *LatencyClient {
	if lat.Base < 0 || lat.Jitter < 0 {
		panic("localstack: Latency needs a non-negative Base and Jitter")
	}
	if next == nil {
		next = awshttp.NewBuildableClient()
	}
	return &LatencyClient{next: next, lat: lat, rnd: rand.New(rand.NewPCG(lat.Seed, lat.Seed^0x9e3779b97f4a7c15))}
}

// Latency returns the configured latency.
func (c *LatencyClient) Latency() Latency { return c.lat }

// draw returns the next delay of the sequence.
func (c *LatencyClient) draw() time.Duration {
	c.mu.Lock()
	u := c.rnd.Float64()
	c.mu.Unlock()
	d := c.lat.Base - c.lat.Jitter + time.Duration(u*float64(2*c.lat.Jitter))
	return max(d, 0)
}

// Do sends req with the next client after its delay. When req's context
// ends during the delay, Do returns the context's error and sends nothing.
func (c *LatencyClient) Do(req *http.Request) (*http.Response, error) {
	d := c.draw()
	c.mu.Lock()
	wait := d - c.late
	c.mu.Unlock()
	start := time.Now()
	if err := sleep(req.Context(), wait); err != nil {
		return nil, err
	}
	if wait > 0 {
		// A stall of the whole process (a GC pause, a descheduled VM) is
		// not timer lateness: samples are capped at maxLateness.
		late := min(max(time.Since(start)-wait, 0), maxLateness)
		c.mu.Lock()
		c.late += (late - c.late) / 16
		c.mu.Unlock()
	}
	return c.next.Do(req)
}

// maxLateness caps one wait's contribution to the lateness estimate.
const maxLateness = 500 * time.Microsecond

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
