package idemkey_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/idemkey/idemkey"
)

// BenchmarkWaitSixteenDuplicates measures what a wait costs where it
// reads: the first copy of a key runs 50 ms in one process, and 16
// duplicates arrive in another (WaitInFlight 2 s) once it holds the key.
// It prints the line
//
//	wait duplicates=16 reads_per_wait=<GetItem of the waits per duplicate> p50_wait_rtt=<median duplicate's Do>
//
// over all iterations, against the endpoint of the tests (the embedded
// emulator unless AWS_ENDPOINT_URL_DYNAMODB names another):
//
//	go test -run '^$' -bench BenchmarkWaitSixteenDuplicates -benchtime 20x .
func BenchmarkWaitSixteenDuplicates(b *testing.B) {
	const dups, work = 16, 50 * time.Millisecond
	w := newWaitTable(b)
	first, _ := w.process()
	g, calls := w.process(func(o *idemkey.Options) { o.WaitInFlight = 2 * time.Second })
	var rtts []time.Duration
	reads := 0
	b.ResetTimer()
	for i := range b.N {
		r := waitReq("tenant-a", fmt.Sprintf("bench-%d", i), "pay 10")
		claimed, firstDone := make(chan struct{}), make(chan error, 1)
		go func() {
			_, err := first.Do(context.Background(), r, func(context.Context) (idemkey.Response, error) {
				close(claimed)
				time.Sleep(work)
				return idemkey.Response{Status: 201, Body: []byte("paid")}, nil
			})
			firstDone <- err
		}()
		<-claimed
		before := calls.Count("GetItem")
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range dups {
			wg.Go(func() {
				start := time.Now()
				res, err := g.Do(context.Background(), r, func(context.Context) (idemkey.Response, error) {
					return idemkey.Response{Status: 500}, nil
				})
				d := time.Since(start)
				if err != nil || !res.Replayed {
					b.Errorf("a duplicate was not replayed: %v", err)
				}
				mu.Lock()
				rtts = append(rtts, d)
				mu.Unlock()
			})
		}
		wg.Wait()
		if err := <-firstDone; err != nil {
			b.Fatal(err)
		}
		reads += calls.Count("GetItem") - before - dups*w.claimGet
	}
	b.StopTimer()
	slices.Sort(rtts)
	perWait := float64(reads) / float64(b.N*dups)
	p50 := rtts[len(rtts)/2]
	b.ReportMetric(perWait, "reads/wait")
	fmt.Printf("wait duplicates=%d reads_per_wait=%.2f p50_wait_rtt=%s\n", dups, perWait, p50.Round(time.Millisecond))
}
