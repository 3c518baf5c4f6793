package ddbtest

import (
	"testing"
	"time"
)

// Within returns what ch delivers, failing the test if nothing arrives in
// 10 seconds: a wait that never began or never ended fails instead of
// hanging the test binary.
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
