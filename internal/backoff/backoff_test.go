package backoff

import (
	"context"
	"math"
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

func TestJitteredCeilingSaturatesAtMaxInsteadOfWrapping(t *testing.T) {
	const huge = time.Duration(math.MaxInt64)
	// 100ms·2^37 passes MaxInt64; so does (2^40+1)ns·2^30, whose wrapped
	// shift would be 2^30ns, about a second.
	cases := []struct {
		base    time.Duration
		doubles int // the last attempt whose ceiling is base·2^attempt
	}{{100 * time.Millisecond, 36}, {1<<40 + 1, 22}, {1, 62}}
	for _, c := range cases {
		for attempt := range 200 {
			want := huge
			if attempt <= c.doubles {
				want = c.base << attempt
			}
			if got := ceiling(c.base, huge, attempt); got != want {
				t.Fatalf("base %v, attempt %d: ceiling %v, want %v", c.base, attempt, got, want)
			}
		}
	}
	if got := ceiling(time.Second, 5*time.Second, 2); got != 4*time.Second {
		t.Fatalf("ceiling below max: %v", got)
	}
	if got := ceiling(time.Second, 5*time.Second, 3); got != 5*time.Second {
		t.Fatalf("ceiling past max: %v", got)
	}
}

func TestSleepEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); err != context.Canceled {
		t.Fatalf("Sleep on a cancelled context: %v", err)
	}
}
