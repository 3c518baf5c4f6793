//go:build !linux

package fingerprint_test

import "time"

// threadCPU returns the CPU time used so far by the calling thread, or
// false where that cannot be measured.
func threadCPU() (time.Duration, bool) { return 0, false }
