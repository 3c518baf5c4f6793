package dynamostore

import (
	"context"
	"math"
	"sync"
	"time"
)

// sweepBucket is a token bucket that may go into debt: a caller waits until
// the balance is not negative, works, then pays what the work cost. A rate
// of zero or less never waits.
type sweepBucket struct {
	rate, burst float64
	now         func() time.Time

	mu      sync.Mutex
	balance float64
	last    time.Time
}

// newSweepBucket returns a full bucket of one second's worth, at least 1.
func newSweepBucket(rate float64, now func() time.Time) *sweepBucket {
	b := &sweepBucket{rate: rate, burst: max(rate, 1), now: now}
	b.balance = b.burst
	b.last = now()
	return b
}

func (b *sweepBucket) refill(t time.Time) {
	if dt := t.Sub(b.last); dt > 0 {
		b.balance = min(b.burst, b.balance+dt.Seconds()*b.rate)
	}
	b.last = t
}

// delay returns how long until the balance is no longer negative.
func (b *sweepBucket) delay() time.Duration {
	if b.rate <= 0 {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(b.now())
	if b.balance >= 0 {
		return 0
	}
	// Saturate rather than wrap to a negative wait.
	if secs := -b.balance / b.rate; secs < float64(math.MaxInt64)/float64(time.Second) {
		return time.Duration(secs * float64(time.Second))
	}
	return time.Duration(math.MaxInt64)
}

// pay takes n tokens, going into debt if needed.
func (b *sweepBucket) pay(n float64) {
	if b.rate <= 0 || n <= 0 {
		return
	}
	b.mu.Lock()
	b.refill(b.now())
	b.balance -= n
	b.mu.Unlock()
}

// sleepTimer waits for d or until ctx is done, on a real timer.
func sleepTimer(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
