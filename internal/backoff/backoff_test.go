package backoff

import (
	"context"
	"testing"
	"time"
)

func TestJitteredStaysWithinTheCappedCeiling(t *testing.T) {
	for attempt := range 70 {
		ceiling := min(time.Millisecond<<min(attempt, 40), 50*time.Millisecond)
		for range 100 {
			d := Jittered(time.Millisecond, 50*time.Millisecond, attempt)
			if d <= 0 || d > ceiling {
				t.Fatalf("attempt %d: %v outside (0, %v]", attempt, d, ceiling)
			}
		}
	}
}

func TestSleepEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); err != context.Canceled {
		t.Fatalf("Sleep on a cancelled context: %v", err)
	}
}
