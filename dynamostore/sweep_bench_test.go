package dynamostore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/localstack"
)

// BenchmarkSweep measures sweep throughput (items scanned per second) on a
// table of 3000 records of which half are removed (750 expired, 750
// stuck), with 1 and 4 segments, default page size, no rate limit. Each
// iteration reseeds the table outside the timer.
//
// On the embedded emulator, every request is serialised and the front
// answers each page of a parallel scan with one emulator Scan per item
// evaluated, so the numbers compare segment counts on one machine; they say
// little about DynamoDB. Run it against DynamoDB Local or DynamoDB with
// AWS_ENDPOINT_URL_DYNAMODB for those.
func BenchmarkSweep(b *testing.B) {
	for _, segments := range []int{1, 4} {
		b.Run(fmt.Sprintf("segments=%d", segments), func(b *testing.B) {
			ep := localstack.ForTest(b)
			e := &env{ep: ep, client: ep.Client, clock: ddbtest.NewClock(time.Unix(1_800_000_000, 0)), table: localstack.TableName("bench")}
			ctx := context.Background()
			if err := dynamostore.EnsureTable(ctx, ep.Client, e.table, 0); err != nil {
				b.Fatal(err)
			}
			ddbtest.DeleteOnCleanup(b, ep.Client, e.table)
			sweeper := dynamostore.NewSweeper(e.client, e.table, func(o *dynamostore.SweepOptions) {
				o.Now, o.Segments, o.ItemsPerSecond = e.clock.Now, segments, -1
			})
			var scanned, removed int64
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				seed(b, ep.Client, e.table, e.clock.Now(), 3000)
				b.StartTimer()
				r, err := sweeper.Sweep(ctx, "")
				if err != nil {
					b.Fatal(err)
				}
				if r.Scanned != 3000 || r.Evicted+r.Reclaimed != 1500 {
					b.Fatalf("scanned %d, removed %d; want 3000, 1500", r.Scanned, r.Evicted+r.Reclaimed)
				}
				scanned += r.Scanned
				removed += r.Evicted + r.Reclaimed
			}
			b.ReportMetric(float64(scanned)/b.Elapsed().Seconds(), "items/s")
			b.ReportMetric(float64(removed)/b.Elapsed().Seconds(), "deletes/s")
		})
	}
}
