package txn

import "time"

// Options tune the commit's retries of transaction conflicts and
// throttling cancellations (dynamostore.Options.Txn). The zero value of
// each field selects its default.
type Options struct {
	// MaxAttempts bounds the attempts of one commit (default 4).
	MaxAttempts int
	// BaseDelay is the backoff before the second attempt (default 20ms); it
	// doubles per attempt up to MaxDelay (default 400ms), with full jitter.
	BaseDelay, MaxDelay time.Duration
}
