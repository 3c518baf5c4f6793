package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey/client"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/examples/payments/paymentsapi"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/localstack"
)

// envUint returns the unsigned integer in the environment variable name,
// or def when it is unset. A value that does not parse fails the test.
func envUint(t *testing.T, name string, def uint64) uint64 {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q is not an unsigned integer", name, v)
	}
	return n
}

// between returns a uniform value in [lo, hi).
func between(rng *rand.Rand, lo, hi float64) float64 { return lo + (hi-lo)*rng.Float64() }

// tokens are the callers' bearer tokens: four scopes share the run.
var tokens = []string{"alice", "bob", "carol", "dave"}

// outcome is what the client made of one logical operation.
type outcome struct {
	key       string // the Idempotency-Key every attempt carried
	status    int    // the answered status; 0 when the client gave up
	paymentID string // the payment of a 201
	replayed  bool   // the 201 was a replay of an earlier execution
	err       error  // the client's error, or the reason the answer is not a payment
}

// operation is one logical operation: one payment, to be made once. Its
// description is unique, so its payments can be found in the table.
type operation struct {
	token       string
	amount      int64
	description string
	// key, when set, is the operation's key (client.WithKey); otherwise
	// the client's transport makes one.
	key string
	// sent is set once first is written: until then the operation is in
	// flight.
	sent atomic.Bool

	first outcome  // through the faults
	retry *outcome // the later retry with the same key, when first was no payment
}

func newOperation(run string, n int) *operation {
	return &operation{
		token:       tokens[n%len(tokens)],
		amount:      int64(100 + n),
		description: fmt.Sprintf("%s op %d", run, n),
	}
}

// final is the operation's last outcome.
func (op *operation) final() outcome {
	if op.retry != nil {
		return *op.retry
	}
	return op.first
}

// send runs the operation once through hc (whose transport is a
// client.Transport) against the payments API at baseURL, with op.key when
// set, else a key stored in ctx with client.WithKey, else one the
// transport makes.
func (op *operation) send(ctx context.Context, hc *http.Client, baseURL string) outcome {
	if op.key != "" {
		ctx = client.WithKey(ctx, op.key)
	}
	body, _ := json.Marshal(map[string]any{"amount": op.amount, "currency": "EUR", "description": op.description})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/payments", bytes.NewReader(body))
	if err != nil {
		return outcome{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+op.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		var re *client.RetryError
		if errors.As(err, &re) {
			return outcome{key: re.Key, err: err}
		}
		return outcome{err: fmt.Errorf("not a *client.RetryError: %w", err)}
	}
	defer resp.Body.Close()
	out := outcome{status: resp.StatusCode, key: unquoteKey(resp.Request.Header.Get(client.HeaderName))}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		out.err = fmt.Errorf("reading the answer: %w", err)
		return out
	}
	if resp.StatusCode != http.StatusCreated {
		out.err = fmt.Errorf("answered %d, neither a payment nor a retryable status: %s", resp.StatusCode, b)
		return out
	}
	var p paymentsapi.Payment
	if err := json.Unmarshal(b, &p); err != nil || p.ID == "" {
		out.err = fmt.Errorf("201 without a payment: %s", b)
		return out
	}
	out.paymentID, out.replayed = p.ID, resp.Header.Get(handler.ReplayedHeader) == "true"
	return out
}

// unquoteKey returns the key in an Idempotency-Key header value: the
// content of an RFC 8941 sf-string, or the value as it is.
func unquoteKey(v string) string {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return v
	}
	var b strings.Builder
	for i := 1; i < len(v)-1; i++ {
		if v[i] == '\\' && i+1 < len(v)-1 {
			i++
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// newTransport returns an HTTP transport for the test that keeps enough
// idle connections for its concurrency, closed when the test ends. (With
// net/http's default of two per host, eight workers open and close
// connections all the time, and on loopback a new connection now and then
// waits a second for a SYN to be sent again.)
func newTransport(t *testing.T) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// clientOptions returns a retry policy for the load: waits from 10 ms
// doubling up to 250 ms (which also caps the server's Retry-After of one
// second), at most maxAttempts attempts within maxElapsed, seeded jitter,
// and tally (when not nil) counting the attempts.
func clientOptions(seed uint64, maxAttempts int, maxElapsed time.Duration, tally *attempts) func(*client.Options) {
	return func(o *client.Options) {
		o.MaxAttempts = maxAttempts
		o.BaseDelay = 10 * time.Millisecond
		o.MaxDelay = 250 * time.Millisecond
		o.MaxElapsed = maxElapsed
		o.AttemptTimeout = 10 * time.Second
		o.Rand = rand.NewPCG(seed, 0x636c69656e74)
		if tally != nil {
			o.OnAttempt = tally.observe
		}
	}
}

// attempts counts the client's attempts by what they got: a status;
// "refused" when the connection was refused (the server was down and the
// attempt never reached it); "cut" for any other transport error (the
// connection broke or timed out after the request was sent, so the server
// may have executed it). net/http itself resends a request whose reused
// connection broke before any answer, once, on a new connection: when the
// server is dead that resend is refused, so a cut attempt is often
// counted as refused.
type attempts struct {
	mu     sync.Mutex
	counts map[string]int
}

func (a *attempts) observe(_ int, resp *http.Response, err error, _ time.Duration) {
	what := "cut"
	switch {
	case resp != nil:
		what = strconv.Itoa(resp.StatusCode)
	case errors.Is(err, syscall.ECONNREFUSED):
		what = "refused"
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.counts == nil {
		a.counts = map[string]int{}
	}
	a.counts[what]++
}

func (a *attempts) snapshot() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.counts)
}

// total sums a count map.
func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// list renders a count map as "k:v,k:v" in the order of names, then the
// other keys sorted; "none" when it is empty.
func list(m map[string]int, names ...string) string {
	var parts []string
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s:%d", k, m[k]))
	}
	var rest []string
	for k := range m {
		if !slices.Contains(names, k) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		parts = append(parts, fmt.Sprintf("%s:%d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

// drive runs ops on workers goroutines until next returns nil.
func drive(ctx context.Context, workers int, hc *http.Client, baseURL string, next func() *operation) {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for op := next(); op != nil; op = next() {
				op.first = op.send(ctx, hc, baseURL)
				op.sent.Store(true)
			}
		})
	}
	wg.Wait()
}

// fixedOps returns a next function over ops, for drive.
func fixedOps(ops []*operation) func() *operation {
	var i atomic.Int64
	return func() *operation {
		n := int(i.Add(1)) - 1
		if n >= len(ops) {
			return nil
		}
		return ops[n]
	}
}

// clientErrors checks that every operation got its payment or a clear
// error, and counts the errors by the last status the client saw
// ("transport" when its last attempt got no response).
func clientErrors(t *testing.T, ops []*operation) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for _, op := range ops {
		o := op.first
		if o.status == http.StatusCreated && o.err == nil {
			continue
		}
		var re *client.RetryError
		if !errors.As(o.err, &re) {
			t.Errorf("%s: neither its payment nor a *client.RetryError: status %d, %v", op.description, o.status, o.err)
			counts["unclear"]++
			continue
		}
		if re.Key == "" || re.Attempts < 1 || re.Reason == nil {
			t.Errorf("%s: a RetryError that does not say what happened: %+v", op.description, re)
		}
		if re.LastStatus == 0 {
			counts["transport"]++
		} else {
			counts[strconv.Itoa(re.LastStatus)]++
		}
	}
	return counts
}

// retryFailed retries, once more and with the same key, every operation
// that did not get its payment: what a caller does after a
// *client.RetryError. It returns how many it retried.
func retryFailed(t *testing.T, ctx context.Context, hc *http.Client, baseURL string, ops []*operation) int {
	t.Helper()
	n := 0
	for _, op := range ops {
		if op.first.status == http.StatusCreated && op.first.err == nil {
			continue
		}
		if op.first.key == "" {
			t.Errorf("%s: no key to retry with: %v", op.description, op.first.err)
			continue
		}
		o := op.send(client.WithKey(ctx, op.first.key), hc, baseURL)
		if o.key != op.first.key {
			t.Errorf("%s: the retry carried key %q, not %q", op.description, o.key, op.first.key)
		}
		op.retry = &o
		n++
	}
	return n
}

// audit is what the tables say about a run.
type audit struct {
	payments int
	// duplicates: payments beyond the first of an operation.
	duplicates int
	// missing: operations without any payment.
	missing int
	// lost: operations answered 201 whose completed key record is absent,
	// or stores another payment, or whose payment is not in the table;
	// and operations that never got their payment, even when retried.
	lost int
	// orphans: payments that no completed key record points to, and
	// completed key records that point to no payment.
	orphans  int
	replayed int
	problems []string
}

func (a *audit) problem(format string, args ...any) {
	if len(a.problems) < 20 {
		a.problems = append(a.problems, fmt.Sprintf(format, args...))
	}
}

func (a *audit) fields() string {
	return fmt.Sprintf("duplicates=%d lost_completions=%d orphans=%d missing=%d", a.duplicates, a.lost, a.orphans, a.missing)
}

// check asserts the invariants: nothing executed twice, nothing lost.
func (a *audit) check(t *testing.T) {
	t.Helper()
	for _, p := range a.problems {
		t.Log(p)
	}
	if a.duplicates != 0 || a.lost != 0 || a.orphans != 0 || a.missing != 0 {
		t.Errorf("invariants broken: %s", a.fields())
	}
}

type payment struct {
	owner, id, description, currency string
	amount                           int64
}

// scanPayments reads the whole payments table with consistent reads.
func scanPayments(ctx context.Context, ddb *dynamodb.Client, table string) ([]payment, error) {
	var out []payment
	in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)}
	for {
		page, err := ddb.Scan(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, item := range page.Items {
			var p payment
			p.owner = stringAttr(item["owner"])
			p.id = stringAttr(item["id"])
			p.description = stringAttr(item["description"])
			p.currency = stringAttr(item["currency"])
			if n, ok := item["amount"].(*types.AttributeValueMemberN); ok {
				p.amount, _ = strconv.ParseInt(n.Value, 10, 64)
			}
			out = append(out, p)
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

func stringAttr(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// auditTables reads both tables (through ddb, which must inject no fault)
// and compares them with what the clients were told.
func auditTables(t *testing.T, ctx context.Context, ddb *dynamodb.Client, cfg paymentsapi.Config, ops []*operation) *audit {
	t.Helper()
	all, err := scanPayments(ctx, ddb, cfg.PaymentTable)
	if err != nil {
		t.Fatalf("scanning the payments: %v", err)
	}
	a := &audit{payments: len(all)}
	byDescription := map[string][]payment{}
	for _, p := range all {
		byDescription[p.description] = append(byDescription[p.description], p)
	}
	store := dynamostore.New(ddb, cfg.KeyTable)
	for _, op := range ops {
		owner := paymentsapi.OwnerOf(op.token)
		paid := byDescription[op.description]
		delete(byDescription, op.description)
		switch {
		case len(paid) == 0:
			a.missing++
			a.problem("%s: no payment", op.description)
		case len(paid) > 1:
			a.duplicates += len(paid) - 1
			a.problem("%s: %d payments", op.description, len(paid))
		}
		for _, p := range paid {
			if p.owner != owner || p.amount != op.amount || p.currency != "EUR" {
				a.lost++
				a.problem("%s: payment %s is not the one asked for: %+v", op.description, p.id, p)
			}
		}

		final := op.final()
		if final.replayed {
			a.replayed++
		}
		stored := ""
		if final.key != "" {
			stored = storedPayment(ctx, store, owner, final.key, a, op)
		}
		if final.status != http.StatusCreated || final.err != nil {
			a.lost++
			a.problem("%s: never got its payment: status %d, %v", op.description, final.status, final.err)
		} else if stored != final.paymentID {
			a.lost++
			a.problem("%s: answered payment %s, but its key record stores %q", op.description, final.paymentID, stored)
		} else if !slices.ContainsFunc(paid, func(p payment) bool { return p.id == final.paymentID }) {
			a.lost++
			a.problem("%s: answered payment %s, which is not in the table", op.description, final.paymentID)
		}
		for _, p := range paid {
			if p.id != stored {
				a.orphans++
				a.problem("%s: payment %s has no completed key record", op.description, p.id)
			}
		}
		if stored != "" && !slices.ContainsFunc(paid, func(p payment) bool { return p.id == stored }) {
			a.orphans++
			a.problem("%s: its key record stores payment %s, which is not in the table", op.description, stored)
		}
	}
	for description, paid := range byDescription {
		a.orphans += len(paid)
		a.problem("%d payments %q belong to no operation", len(paid), description)
	}
	return a
}

// storedPayment returns the payment id in the completed key record of
// (owner, key), or "" when there is none.
func storedPayment(ctx context.Context, store *dynamostore.Store, owner, key string, a *audit, op *operation) string {
	rec, err := store.Get(ctx, owner, key)
	switch {
	case errors.Is(err, dynamostore.ErrNotFound):
		a.problem("%s: no key record", op.description)
		return ""
	case err != nil:
		a.problem("%s: key record unreadable: %v", op.description, err)
		return ""
	case rec.State != dynamostore.StateCompleted || rec.Response == nil:
		a.problem("%s: key record is %s", op.description, rec.State)
		return ""
	case rec.Response.Status != http.StatusCreated:
		a.problem("%s: key record stores status %d", op.description, rec.Response.Status)
		return ""
	}
	var p paymentsapi.Payment
	if err := json.Unmarshal(rec.Response.Body, &p); err != nil || p.ID == "" {
		a.problem("%s: key record stores no payment: %q", op.description, rec.Response.Body)
		return ""
	}
	return p.ID
}

// newTables creates a key table and a payments table for the test, named
// after prefix, and deletes them when it ends (on an external endpoint
// they would outlive it). Retention is an hour and the lease one second:
// a key left in progress by a failure or a kill is reclaimable within a
// client's retry budget.
func newTables(t *testing.T, ddb *dynamodb.Client, prefix string) paymentsapi.Config {
	t.Helper()
	cfg := paymentsapi.Config{
		KeyTable:     localstack.TableName(prefix + "-keys"),
		PaymentTable: localstack.TableName(prefix + "-payments"),
		Retention:    time.Hour,
		Lease:        time.Second,
	}
	if err := paymentsapi.EnsureTables(t.Context(), ddb, cfg); err != nil {
		t.Fatalf("creating the tables: %v", err)
	}
	for _, name := range []string{cfg.KeyTable, cfg.PaymentTable} {
		ddbtest.DeleteOnCleanup(t, ddb, name)
	}
	return cfg
}
