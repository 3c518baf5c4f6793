package lambda

import (
	"context"
	"time"

	"github.com/idemkey/idemkey/internal/lease"
)

// DefaultLeaseMargin is added to an invocation's remaining time to make
// the lock lease of its claims: 5 seconds, room for the commit that may
// still run at the deadline and for clock differences between hosts.
const DefaultLeaseMargin = 5 * time.Second

// invocationLease returns the lock lease for a key claimed under ctx: the
// time left until ctx's deadline, by now, plus margin (DefaultLeaseMargin
// when not positive); margin alone when the deadline has passed. It
// returns 0, which selects the store's default lease, when ctx has no
// deadline. aws-lambda-go sets the deadline of each invocation's context
// from the Lambda-Runtime-Deadline-Ms header. The HTTP front doors
// compute it the same way (handler.LeaseFromDeadline).
func invocationLease(ctx context.Context, margin time.Duration, now func() time.Time) time.Duration {
	if margin <= 0 {
		margin = DefaultLeaseMargin
	}
	return lease.FromDeadline(ctx, margin, now())
}
