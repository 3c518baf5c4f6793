//go:build unix

package paymentsapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemkey/idemkey/localstack"
)

// BenchmarkRequestCPU measures what one POST /payments costs the process
// that serves it on the embedded emulator, guarded and unguarded (the two
// servers scripts/load.sh drives with wrk), without HTTP or wrk: each
// iteration creates a payment under a fresh Idempotency-Key, in one
// goroutine. It reports the process's CPU time per request (cpu-ns/op),
// the part of it the runtime counts as garbage collection (gc-ns/op), and
// the heap still live after the run per request (live-B/op: the
// emulator's tables, which every collection marks again).
func BenchmarkRequestCPU(b *testing.B) {
	for _, guarded := range []bool{false, true} {
		name := "unguarded"
		if guarded {
			name = "guarded"
		}
		b.Run(name, func(b *testing.B) {
			ep, err := localstack.Start(context.Background(), func(o *localstack.Options) { o.Embedded, o.InProcess = true, true })
			if err != nil {
				b.Fatal(err)
			}
			defer ep.Close()
			cfg := Config{KeyTable: "keys", PaymentTable: "payments", Retention: time.Hour, Lease: time.Minute, Unguarded: !guarded}
			if err := EnsureTables(context.Background(), ep.Client, cfg); err != nil {
				b.Fatal(err)
			}
			h := NewHandler(ep.Client, cfg)
			b.ReportAllocs()
			b.ResetTimer()
			cpu, gc := processCPU(b), gcCPU()
			for i := range b.N {
				req := httptest.NewRequest(http.MethodPost, "/payments", strings.NewReader(`{"amount":1250,"currency":"EUR"}`))
				req.Header.Set("Authorization", "Bearer load")
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", "cpu-"+strconv.Itoa(i))
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusCreated {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
			b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
			b.ReportMetric((gcCPU()-gc)*1e9/float64(b.N), "gc-ns/op")
			b.StopTimer()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.HeapAlloc)/float64(b.N), "live-B/op")
		})
	}
}

// processCPU returns the CPU time the process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// gcCPU returns the CPU seconds the runtime has spent collecting garbage
// (an estimate the runtime keeps: mark workers, assists, pauses).
func gcCPU() float64 {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	return s[0].Value.Float64()
}
