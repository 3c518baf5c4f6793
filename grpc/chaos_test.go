package grpc_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	idemgrpc "github.com/idemkey/idemkey/grpc"
	"github.com/idemkey/idemkey/grpc/internal/testpb"
	"github.com/idemkey/idemkey/internal/ddbtest"
)

// dropper loses calls on the gRPC side, at random with a seeded source:
// before the handler (the request never arrived) or after it (the handler
// ran, the answer never reached the client). Both look like Unavailable.
type dropper struct {
	mu            sync.Mutex
	rng           *rand.Rand
	rate          float64
	on            bool
	before, after int
}

func (d *dropper) draw() (before, after bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.on || d.rng.Float64() >= d.rate {
		return false, false
	}
	if d.rng.IntN(2) == 0 {
		d.before++
		return true, false
	}
	d.after++
	return false, true
}

func (d *dropper) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	before, after := d.draw()
	if before {
		return nil, status.Error(codes.Unavailable, "injected: request dropped")
	}
	resp, err := next(ctx, req)
	if after {
		return nil, status.Error(codes.Unavailable, "injected: response dropped")
	}
	return resp, err
}

func (d *dropper) set(on bool) { d.mu.Lock(); d.on = on; d.mu.Unlock() }

// grpcChaosSeedEnv selects the seed of the gRPC chaos test (default 1).
const grpcChaosSeedEnv = "IDEMKEY_GRPC_CHAOS_SEED"

// TestChaosOverGRPCNeitherDuplicatesNorLosesACompletion drives logical
// calls through the client interceptor (six attempts within the call's
// five-second deadline) and a gRPC retry policy (three attempts on
// Unavailable) to a server that loses 15 % of the calls before or after
// its handler, while the server's DynamoDB client fails its calls at
// random (internal/ddbtest.Chaos: throttling, server errors, timeouts
// before and after the write; the SDK retries each call at most once).
// Afterwards, without faults, every call that got no answer is sent again
// with its key by a patient client (100 attempts within 30 s). Each key must
// then have exactly one effect, and every answer a client got must be the
// committed one.
func TestChaosOverGRPCNeitherDuplicatesNorLosesACompletion(t *testing.T) {
	const nOps = 200
	seed := uint64(1)
	if v := os.Getenv(grpcChaosSeedEnv); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, grpcChaosSeedEnv)
		seed = n
	}
	rates := map[ddbtest.Position]float64{ddbtest.Claim: 0.15, ddbtest.Commit: 0.2, ddbtest.Release: 0.5, ddbtest.Fallback: 0.3}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	t.Cleanup(tr.CloseIdleConnections)
	chaos := ddbtest.NewChaos(tr, seed, rates)
	drop := &dropper{rng: rand.New(rand.NewPCG(seed, 1)), rate: 0.15, on: true}
	var skew atomic.Int64 // added to the store's clock
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }

	h := newHarness(t, func(s *setup) {
		s.outer = append(s.outer, drop.intercept)
		s.store = func(h *harness) idemkey.Store { return h.chaosStore(chaos, now) }
	})
	policy := `{"methodConfig":[{"name":[{"service":"idemkey.grpc.test.v1.Ledger"}],
	  "retryPolicy":{"maxAttempts":3,"initialBackoff":"0.01s","maxBackoff":"0.05s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]}`
	dial := func(attempts int, maxDelay time.Duration) testpb.LedgerClient {
		return h.dial("alice", grpc.WithDefaultServiceConfig(policy),
			grpc.WithUnaryInterceptor(idemgrpc.UnaryClientInterceptor(func(o *idemgrpc.ClientOptions) {
				o.MaxAttempts = attempts
				o.BaseDelay = 20 * time.Millisecond
				o.MaxDelay = maxDelay
			})))
	}
	c := dial(6, 400*time.Millisecond)

	got := make([]*testpb.ChargeReply, nOps)
	keys := make([]string, nOps)
	codesSeen := map[codes.Code]int{}
	var mu sync.Mutex
	send := func(c testpb.LedgerClient, i int, budget time.Duration) {
		ctx, cancel := context.WithTimeout(idemgrpc.WithKey(context.Background(), keys[i]), budget)
		defer cancel()
		r, err := c.Charge(ctx, &testpb.ChargeRequest{Account: keys[i], Cents: int64(i)})
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			codesSeen[status.Code(err)]++
			return
		}
		got[i] = r
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range work {
				send(c, i, 5*time.Second)
			}
		})
	}
	for i := range nOps {
		keys[i] = fmt.Sprintf("chaos-%d-%03d", seed, i)
		work <- i
	}
	close(work)
	wg.Wait()

	chaos.SetEnabled(false)
	drop.set(false)
	// A key left in progress by a failed release holds its claim's lease
	// (the call's remaining time plus DefaultLeaseMargin, at most 10 s).
	// The store's clock moves past it, well within the retention.
	skew.Store(int64(time.Minute))
	patient := dial(100, time.Second)
	retried := 0
	for i := range nOps {
		if got[i] == nil {
			retried++
			send(patient, i, 30*time.Second)
		}
	}

	effects := h.effectsByKey()
	duplicates, lost, missing := 0, 0, 0
	for i, key := range keys {
		ids := effects[key]
		switch {
		case len(ids) > 1:
			duplicates++
		case len(ids) == 0:
			missing++
		}
		if r := got[i]; r != nil && (len(ids) != 1 || ids[0] != fmt.Sprintf("%s#%d", key, r.Execution)) {
			lost++ // the client holds an answer whose effect was not committed
		}
	}
	injected := chaos.Injected()
	faults := 0
	for _, n := range injected {
		faults += n
	}
	ddbtest.Report(t, fmt.Sprintf("grpc-chaos ops=%d faults=%d dropped_requests=%d dropped_responses=%d duplicates=%d lost_completions=%d missing=%d retried=%d client_errors=%s seed=%d",
		nOps, faults, drop.before, drop.after, duplicates, lost, missing, retried, listCodes(codesSeen), seed))
	if duplicates != 0 || lost != 0 || missing != 0 {
		t.Errorf("duplicates=%d lost_completions=%d missing=%d, want 0", duplicates, lost, missing)
	}
	if faults == 0 || drop.before == 0 || drop.after == 0 {
		t.Errorf("faults=%d dropped before=%d after=%d: the run proves nothing", faults, drop.before, drop.after)
	}
}

// chaosStore is the harness's key table behind a DynamoDB client whose
// transport is chaos, each call allowed two attempts by the SDK.
func (h *harness) chaosStore(chaos *ddbtest.Chaos, now func() time.Time) *dynamostore.Store {
	client := h.ep.NewClient(func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: chaos}
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = 2
			so.MaxBackoff = 20 * time.Millisecond
			so.RateLimiter = ratelimit.None
		})
	})
	return dynamostore.New(client, h.keys, func(o *dynamostore.Options) {
		o.Retention = time.Hour
		o.Now = now
	})
}

// effectsByKey lists the effect ids per key.
func (h *harness) effectsByKey() map[string][]string {
	h.t.Helper()
	out := map[string][]string{}
	in := &dynamodb.ScanInput{TableName: aws.String(h.effects), ConsistentRead: aws.Bool(true)}
	for {
		page, err := h.ep.Client.Scan(context.Background(), in)
		require.NoError(h.t, err)
		for _, item := range page.Items {
			id, _ := item["id"].(*types.AttributeValueMemberS)
			key, _ := item["key"].(*types.AttributeValueMemberS)
			if id != nil && key != nil {
				out[key.Value] = append(out[key.Value], id.Value)
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

func listCodes(m map[codes.Code]int) string {
	parts := make([]string, 0, len(m))
	for c, n := range m {
		parts = append(parts, c.String()+":"+strconv.Itoa(n))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}
