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

// With returns ctx whose waits sleep with s.
func With(ctx context.Context, s Sleep) context.Context {
	return context.WithValue(ctx, key{}, s)
}

// From returns the Sleep of ctx, or nil when it has none.
func From(ctx context.Context) Sleep {
	s, _ := ctx.Value(key{}).(Sleep)
	return s
}
