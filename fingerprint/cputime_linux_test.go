package fingerprint_test

import (
	"syscall"
	"time"
	"unsafe"
)

// threadCPU returns the CPU time used so far by the calling thread, from
// clock_gettime(CLOCK_THREAD_CPUTIME_ID), or false where that cannot be
// measured.
func threadCPU() (time.Duration, bool) {
	const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID
	var ts syscall.Timespec
	_, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
