// Package backoff holds the retry delays shared by the packages that retry
// DynamoDB conditions the SDK does not (transaction conflicts, replicated
// write conflicts): bounded exponential backoff with full jitter.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Jittered returns a random delay in (0, min(base·2^attempt, max)]: full
// jitter over an exponentially growing, capped ceiling. Attempt 0 is the
// delay before the second try. The ceiling saturates at max: an attempt
// whose base·2^attempt would overflow a Duration gets max, never a
// wrapped value.
func Jittered(base, max time.Duration, attempt int) time.Duration {
	d := ceiling(base, max, attempt)
	if d <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(d)) + 1)
}

// ceiling returns min(base·2^attempt, max), computed without overflow; max
// when base is not positive.
func ceiling(base, max time.Duration, attempt int) time.Duration {
	if base > 0 && attempt < 63 && base <= max>>attempt {
		return base << attempt
	}
	return max
}

// Sleep waits d, or until ctx ends, whichever comes first; it returns
// ctx's error in the second case.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
