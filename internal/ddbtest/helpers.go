package ddbtest

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// Clock is a settable clock for tests; its Now is safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock standing at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Within returns what ch delivers, failing the test instead of hanging if
// nothing arrives in 10 seconds.
func Within[T any](tb testing.TB, ch <-chan T) T {
	tb.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		tb.Fatal("nothing arrived in 10s")
	}
	panic("unreachable")
}

// Report logs a test run's one-line report and appends it to the file
// IDEMKEY_RELIABILITY_REPORT names, if any (relative to the test's package
// directory), which CI prints after the suite.
func Report(t testing.TB, line string) {
	t.Helper()
	t.Log(line)
	path := os.Getenv("IDEMKEY_RELIABILITY_REPORT")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Errorf("report file: %v", err)
		return
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, line); err != nil {
		t.Errorf("report file: %v", err)
	}
}
