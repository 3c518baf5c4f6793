package reliability

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkey/idemkey/client"
	"github.com/idemkey/idemkey/examples/payments/paymentsapi"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/localstack"
)

// Knobs of the chaos test, read from the environment.
const (
	chaosSeedEnv = "IDEMKEY_CHAOS_SEED" // default 1
	chaosOpsEnv  = "IDEMKEY_CHAOS_OPS"  // default 200
)

// positions and kinds in report order.
var (
	positions = []string{string(ddbtest.Claim), string(ddbtest.Commit), string(ddbtest.Release), string(ddbtest.Fallback)}
	kinds     = []string{string(ddbtest.Throttle), string(ddbtest.ServerError), string(ddbtest.TimeoutBefore), string(ddbtest.TimeoutAfter)}
)

// TestFaultsInDynamoDBCallsNeitherDuplicateNorLoseAPayment runs many
// logical operations through the retrying client against the payments
// API, whose DynamoDB client fails its calls at random: claim, commit,
// release and fallback read, with throttling, server errors, and timeouts
// before and after DynamoDB applied the call. The SDK retries about half
// of the calls once and the others not at all (see variedRetryer), so
// that faults reach idemkey's own handling as well as the SDK's retries.
// The lease is a quarter of a second, so that a key left in progress by a
// failed release or an ambiguous claim is reclaimed within a client's
// budget.
// Afterwards, without faults, every operation that got no payment is
// retried once with its key, and the tables must hold exactly one payment
// per operation, each pointed to by a completed key record that stores
// the payment its client was given.
func TestFaultsInDynamoDBCallsNeitherDuplicateNorLoseAPayment(t *testing.T) {
	t.Parallel()
	seed := envUint(t, chaosSeedEnv, 1)
	nOps := int(envUint(t, chaosOpsEnv, 200))
	rng := rand.New(rand.NewPCG(seed, 0x6368616f73))
	// Releases and fallback reads happen only after a commit failed, so
	// they are few: higher rates make their faults happen in every run.
	rates := map[ddbtest.Position]float64{
		ddbtest.Claim:    between(rng, 0.10, 0.20),
		ddbtest.Commit:   between(rng, 0.15, 0.25),
		ddbtest.Release:  between(rng, 0.50, 0.70),
		ddbtest.Fallback: between(rng, 0.20, 0.40),
	}
	ctx := t.Context()

	ep := localstack.ForTest(t)
	cfg := newTables(t, ep.Client, "chaos")
	cfg.Lease = 250 * time.Millisecond

	sdkTransport := newTransport(t)
	chaos := ddbtest.NewChaos(sdkTransport, seed, rates)
	retryer := newVariedRetryer(seed)
	faulty := ep.NewClient(func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: chaos}
		o.Retryer = retryer
	})
	srv := httptest.NewServer(paymentsapi.NewHandler(faulty, cfg))
	t.Cleanup(srv.Close)

	clientTransport := newTransport(t)
	var tally attempts
	// Six attempts within half a second: enough to outlast a stuck key's
	// lease most of the time, not always, so that both outcomes of a
	// logical request (its payment, a RetryError) occur.
	hc := client.New(&http.Client{Transport: clientTransport}, clientOptions(seed, 6, 500*time.Millisecond, &tally))

	ops := make([]*operation, nOps)
	run := fmt.Sprintf("chaos-%d", seed)
	for i := range ops {
		ops[i] = newOperation(run, i)
	}
	start := time.Now()
	drive(ctx, 8, hc, srv.URL, fixedOps(ops))
	elapsed := time.Since(start)

	chaos.SetEnabled(false)
	injected := chaos.Injected()
	errorsByStatus := clientErrors(t, ops)
	patient := client.New(&http.Client{Transport: clientTransport}, clientOptions(seed+1, 100, 30*time.Second, nil))
	retried := retryFailed(t, ctx, patient, srv.URL, ops)
	a := auditTables(t, ctx, ep.Client, cfg, ops)

	byKind, byPosition := map[string]int{}, map[string]int{}
	for k, n := range injected {
		position, kind, _ := strings.Cut(k, "/")
		byPosition[position] += n
		byKind[kind] += n
	}
	one, two := retryer.drawn()
	t.Logf("SDK calls allowed 1 attempt: %d, 2 attempts: %d", one, two)
	t.Logf("seed %d, %d operations in %v, fault rates claim:%.2f,commit:%.2f,release:%.2f,fallback:%.2f", seed, nOps, elapsed.Round(time.Millisecond),
		rates[ddbtest.Claim], rates[ddbtest.Commit], rates[ddbtest.Release], rates[ddbtest.Fallback])
	t.Logf("faults injected by position/kind: %s", list(injected))
	t.Logf("client attempts by answer: %s", list(tally.snapshot()))
	t.Logf("payments in the table: %d; replayed answers: %d; operations retried afterwards: %d", a.payments, a.replayed, retried)
	ddbtest.Report(t, fmt.Sprintf("chaos ops=%d faults=%d faults_by_kind=%s faults_by_position=%s %s replayed=%d retried=%d client_errors=%s seed=%d",
		nOps, total(injected), list(byKind, kinds...), list(byPosition, positions...), a.fields(), a.replayed, retried, list(errorsByStatus), seed))

	a.check(t)
	for _, kind := range kinds {
		if byKind[kind] == 0 {
			t.Errorf("no %s fault was injected: the run proves nothing about it", kind)
		}
	}
	for _, position := range positions[:3] {
		if byPosition[position] == 0 {
			t.Errorf("no fault was injected into a %s: the run proves nothing about it", position)
		}
	}
}

// variedRetryer is the SDK's standard retryer, with small delays and no
// retry quota, whose number of attempts is drawn for each call: 1, so that
// any fault reaches idemkey, or 2, so that the SDK retries it once (a
// throttled or failed call, a timeout: after a timeout that followed the
// write, the retry meets the write's own effect). The SDK's default is 3
// attempts, under which faults would rarely reach idemkey at these rates.
type variedRetryer struct {
	*retry.Standard

	mu     sync.Mutex
	rng    *rand.Rand
	counts [3]int
}

func newVariedRetryer(seed uint64) *variedRetryer {
	return &variedRetryer{
		Standard: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxBackoff = 20 * time.Millisecond
			o.RateLimiter = ratelimit.None
		}),
		rng: rand.New(rand.NewPCG(seed, 0x726574727972)),
	}
}

// MaxAttempts is read once per call by the SDK's retry middleware.
func (r *variedRetryer) MaxAttempts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 1 + r.rng.IntN(2)
	r.counts[n]++
	return n
}

func (r *variedRetryer) drawn() (one, two int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[1], r.counts[2]
}
