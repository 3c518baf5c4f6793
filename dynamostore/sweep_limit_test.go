package dynamostore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/idemkey/idemkey/internal/ddbtest"
)

func TestBucketStartsFullAndMakesDebtorsWait(t *testing.T) {
	clock := ddbtest.NewClock(time.Unix(1_800_000_000, 0))
	b := newSweepBucket(100, clock.Now)
	assert.Zero(t, b.delay(), "a new bucket holds one second's worth")
	b.pay(100)
	assert.Zero(t, b.delay(), "an empty bucket is not in debt")
	b.pay(50)
	assert.Equal(t, 500*time.Millisecond, b.delay())
	clock.Advance(200 * time.Millisecond)
	assert.Equal(t, 300*time.Millisecond, b.delay())
	clock.Advance(300 * time.Millisecond)
	assert.Zero(t, b.delay())
}

func TestBucketRefillsNoMoreThanItsBurst(t *testing.T) {
	clock := ddbtest.NewClock(time.Unix(1_800_000_000, 0))
	b := newSweepBucket(10, clock.Now)
	clock.Advance(time.Hour)
	b.pay(30) // 10 saved at most, so 20 in debt: 2 seconds
	assert.Equal(t, 2*time.Second, b.delay())
}

func TestBucketWithoutRateNeverWaits(t *testing.T) {
	clock := ddbtest.NewClock(time.Unix(1_800_000_000, 0))
	for _, rate := range []float64{0, -1} {
		b := newSweepBucket(rate, clock.Now)
		b.pay(1e9)
		assert.Zero(t, b.delay())
	}
}

func TestBucketBelowOnePerSecondStillHoldsOneToken(t *testing.T) {
	clock := ddbtest.NewClock(time.Unix(1_800_000_000, 0))
	b := newSweepBucket(0.5, clock.Now)
	b.pay(1)
	assert.Zero(t, b.delay())
	b.pay(1)
	assert.Equal(t, 2*time.Second, b.delay())
}

func TestSleepTimerReturnsTheContextError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, sleepTimer(ctx, time.Hour), context.Canceled)
	assert.NoError(t, sleepTimer(context.Background(), time.Millisecond))
}
