// Package waitclock lets a test run the waits of idemkey.Guard (its
// Options.WaitInFlight) on a clock of its own, through the request's
// context: a simulation on virtual time, or a test that decides when each
// read of a wait happens. Production code never sets one.
package waitclock

import (
	"context"
	"time"
)

// Sleep blocks until the instant until of the Guard's clock, wake is
// closed, or ctx is done, whichever comes first. reading reports that
// another waiter's read is in progress, whose end closes wake: a clock
// that a test moves should not move for it.
type Sleep func(ctx context.Context, until time.Time, wake <-chan struct{}, reading bool)

type key struct{}

type jitterKey struct{}

// WithJitter returns ctx whose waits draw their jitter, numbers in
// [0, 1), from f: a simulation's seeded source, so that a run replays.
func WithJitter(ctx context.Context, f func() float64) context.Context {
	return context.WithValue(ctx, jitterKey{}, f)
}

// JitterFrom returns the jitter source of ctx, or nil when it has none.
func JitterFrom(ctx context.Context) func() float64 {
	f, _ := ctx.Value(jitterKey{}).(func() float64)
	return f
}

// With returns ctx whose waits sleep with s.
func With(ctx context.Context, s Sleep) context.Context {
	return context.WithValue(ctx, key{}, s)
}

// From returns the Sleep of ctx, or nil when it has none.
func From(ctx context.Context) Sleep {
	s, _ := ctx.Value(key{}).(Sleep)
	return s
}

// Timer returns the Sleep of a clock now: a timer of until minus now.
// A Guard sleeps with it unless the context names another.
func Timer(now func() time.Time) Sleep {
	return func(ctx context.Context, until time.Time, wake <-chan struct{}, _ bool) {
		d := until.Sub(now())
		if d <= 0 {
			return
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-wake:
		case <-ctx.Done():
		}
	}
}

// Notify returns s that first sends on slept at each sleep that is not
// for another waiter's read, so that a test learns that a wait began.
func Notify(slept chan<- struct{}, s Sleep) Sleep {
	return func(ctx context.Context, until time.Time, wake <-chan struct{}, reading bool) {
		if !reading {
			select {
			case slept <- struct{}{}:
			case <-ctx.Done():
				return
			}
		}
		s(ctx, until, wake, reading)
	}
}

// Woken returns a Sleep for tests on a clock that never moves: each sleep
// sends on slept (Notify), then ends only when its wait is woken (a
// commit or a release by the same Guard, or another waiter's read) or
// ctx is done.
func Woken(slept chan<- struct{}) Sleep {
	return Notify(slept, func(ctx context.Context, _ time.Time, wake <-chan struct{}, _ bool) {
		select {
		case <-wake:
		case <-ctx.Done():
		}
	})
}
