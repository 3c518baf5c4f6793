package localstack

import (
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// Latency is a per-call round-trip time, for benchmarks that count round
// trips. Each call takes a duration drawn uniformly from [Base-Jitter,
// Base+Jitter] (never below zero) by a generator seeded with Seed. The
// duration includes the endpoint's time to answer: the request is sent at
// once, and its answer handed back when the duration has passed since (or
// on arrival, if later), so a serialising endpoint keeps serving while an
// answer is held. Each hold is shortened by the client's mean timer
// lateness so far, so that the durations spent average the drawn ones.
type Latency struct {
	Base   time.Duration // the mean
	Jitter time.Duration // the largest deviation from Base
	Seed   uint64
}

// latencyClient is an aws.HTTPClient that holds every answer of next for
// a drawn Latency. It is safe for concurrent use.
type latencyClient struct {
	next aws.HTTPClient
	lat  Latency

	mu   sync.Mutex
	rnd  *rand.Rand
	late time.Duration // moving average of how late the timers woke
}

// newLatencyClient returns a latencyClient; a nil next is the SDK's
// default HTTP client.
func newLatencyClient(next aws.HTTPClient, lat Latency) *latencyClient {
	if next == nil {
		next = awshttp.NewBuildableClient()
	}
	return &latencyClient{next: next, lat: lat, rnd: rand.New(rand.NewPCG(lat.Seed, lat.Seed^0x9e3779b97f4a7c15))}
}

func (c *latencyClient) draw() time.Duration {
	c.mu.Lock()
	u := c.rnd.Float64()
	c.mu.Unlock()
	return max(c.lat.Base-c.lat.Jitter+time.Duration(u*float64(2*c.lat.Jitter)), 0)
}

// Do sends req and returns the answer once the drawn duration has passed
// since. A request whose context has ended is not sent; when it ends while
// the answer is held, the answer is closed and the context's error returned.
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
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-req.Context().Done():
		_ = resp.Body.Close()
		return nil, req.Context().Err()
	}
	// A stall of the whole process (a GC pause) is not timer lateness.
	late := min(max(time.Since(held)-wait, 0), maxLateness)
	c.mu.Lock()
	c.late += (late - c.late) / 16
	c.mu.Unlock()
	return resp, nil
}

// holdFor is how long to hold an answer that took elapsed, for a drawn
// duration d, when timers wake late by late on average.
func holdFor(d, elapsed, late time.Duration) time.Duration {
	return d - elapsed - late
}

// maxLateness caps one sample of timer lateness: a little more than the
// millisecond by which the runtime can wake late.
const maxLateness = 1500 * time.Microsecond
