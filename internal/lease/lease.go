// Package lease computes a claim's lock lease from a deadline.
package lease

import (
	"context"
	"time"
)

// FromDeadline returns the lock lease for a key claimed under ctx: the
// time left until ctx's deadline (at now) plus margin, so that a request
// cut off at its deadline frees its key soon after while a live one is
// never reclaimed under it. A passed deadline gives margin (at least a
// millisecond: the key is reclaimable at once). Without a deadline it
// returns 0, which selects the store's default lease.
func FromDeadline(ctx context.Context, margin time.Duration, now time.Time) time.Duration {
	deadline, ok := ctx.Deadline()
	if !ok {
		return 0
	}
	return max(deadline.Sub(now), 0) + max(margin, time.Millisecond)
}
