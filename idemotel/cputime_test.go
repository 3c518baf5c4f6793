package idemotel_test

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's CPU time so far (user and system): a measure
// of work that other processes on a loaded machine do not inflate, as
// they inflate wall time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
