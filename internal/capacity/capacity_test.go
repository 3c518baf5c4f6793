package capacity_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/keyschema"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/txn"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func TestItemSizeFollowsDocumentedRules(t *testing.T) {
	cases := []struct {
		name string
		item map[string]types.AttributeValue
		want int
	}{
		{"string", map[string]types.AttributeValue{"pk": s("abc")}, 2 + 3},
		{"utf-8 string", map[string]types.AttributeValue{"é": s("€")}, 2 + 3},
		{"number, trailing zero trimmed", map[string]types.AttributeValue{"amount": n("1250")}, 6 + 2 + 1},
		{"number, leading zeroes trimmed", map[string]types.AttributeValue{"x": n("0.0012")}, 1 + 1 + 1},
		{"number, 13 digits", map[string]types.AttributeValue{"lock_exp": n("1800000000123")}, 8 + 7 + 1},
		{"binary, raw length", map[string]types.AttributeValue{"fp": &types.AttributeValueMemberB{Value: make([]byte, 32)}}, 2 + 32},
		{"bool and null", map[string]types.AttributeValue{"b": &types.AttributeValueMemberBOOL{Value: true}, "z": &types.AttributeValueMemberNULL{Value: true}}, 2 + 2},
		{"map of list", map[string]types.AttributeValue{"hdr": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"a": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("x")}},
		}}}, 3 + 3 + (1 + 1) + (3 + 1 + 1)},
		{"empty map", map[string]types.AttributeValue{"m": &types.AttributeValueMemberM{}}, 1 + 3},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, ItemSize(c.item), c.name)
	}
	assert.Equal(t, 1.0, WriteUnits(0), "at least one unit")
	assert.Equal(t, 1.0, WriteUnits(1024))
	assert.Equal(t, 2.0, WriteUnits(1025), "every KB above the first costs a unit")
	assert.Equal(t, 1.0, ReadUnits(4096, true))
	assert.Equal(t, 2.0, ReadUnits(4097, true))
	assert.Equal(t, 0.5, ReadUnits(100, false), "eventually consistent: half")
}

// scenario is one guarded handler over a metered client.
type scenario struct {
	t        *testing.T
	meter    *Meter
	guarded  map[idemkey.Mode]http.Handler
	payments string
	effects  int
	status   int
	block    chan struct{}
	started  chan struct{}
}

const paymentBody = `{"amount":1250,"currency":"EUR"}`

func newScenario(t *testing.T, ep *localstack.Endpoint, keys, payments string, unbundled bool) *scenario {
	sc := &scenario{t: t, payments: payments, status: http.StatusCreated, guarded: map[idemkey.Mode]http.Handler{}}
	sc.meter = NewMeter(map[string][]string{keys: {dynamostore.PartitionKey}, payments: {"id"}})
	sc.meter.Unbundled = unbundled
	store := dynamostore.New(ep.NewClient(sc.meter.Install), keys)
	for _, mode := range []idemkey.Mode{idemkey.ClaimFirst, idemkey.OneTrip} {
		sc.guarded[mode] = handler.New(store, func(o *handler.Options) {
			o.Scope = func(*http.Request) (string, error) { return "tenant-1", nil }
			o.Guard.Mode = mode
		})(http.HandlerFunc(sc.inner))
	}
	return sc
}

// inner stages sc.effects payment items and answers sc.status with a
// payments API's response; it first waits for sc.block when set.
func (sc *scenario) inner(w http.ResponseWriter, r *http.Request) {
	if b := sc.block; b != nil {
		close(sc.started)
		<-b
	}
	key := r.Header.Get(handler.HeaderName)
	tx, _ := txn.FromContext(r.Context())
	for i := range sc.effects {
		tx.Put(types.Put{TableName: &sc.payments, Item: map[string]types.AttributeValue{
			"id": s(fmt.Sprintf("pay_%s_%d", key, i)), "amount": n("1250"), "currency": s("EUR"),
		}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", "/payments/pay_"+key)
	w.WriteHeader(sc.status)
	fmt.Fprintf(w, `{"id":"pay_%s","amount":1250,"currency":"EUR"}`, key)
}

func (sc *scenario) post(mode idemkey.Mode, key, body string) int {
	req := httptest.NewRequest(http.MethodPost, "/payments", strings.NewReader(body))
	req.Header.Set(handler.HeaderName, key)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	sc.guarded[mode].ServeHTTP(rec, req)
	return rec.Code
}

// measure returns the units of send's calls (and what the backend
// reported for them).
func (sc *scenario) measure(send func()) (computed, reported Units) {
	sc.t.Helper()
	_, _, _ = sc.meter.Take()
	send()
	computed, reported, err := sc.meter.Take()
	require.NoError(sc.t, err)
	return computed, reported
}

// outcomes measures every outcome of mode (one_trip's in_flight meets a
// ClaimFirst request holding the key). Keys are prefixed with prefix.
func (sc *scenario) outcomes(mode idemkey.Mode, prefix string) (map[string]Units, map[string]Units) {
	t := sc.t
	got, rep := map[string]Units{}, map[string]Units{}
	record := func(outcome string, wantStatus int, send func() int) {
		t.Helper()
		got[outcome], rep[outcome] = sc.measure(func() { require.Equal(t, wantStatus, send(), outcome) })
	}
	for _, e := range []int{0, 1, 5} {
		sc.effects = e
		record(fmt.Sprintf("first_%d", e), 201, func() int { return sc.post(mode, fmt.Sprint(prefix, "first-", e), paymentBody) })
	}
	sc.effects = 1
	record("replay", 201, func() int { return sc.post(mode, prefix+"first-1", paymentBody) })
	record("mismatch", 422, func() int { return sc.post(mode, prefix+"first-1", `{"amount":9999,"currency":"EUR"}`) })

	hold := make(chan struct{})
	sc.block, sc.started = hold, make(chan struct{})
	done := make(chan int)
	go func() { done <- sc.post(idemkey.ClaimFirst, prefix+"busy", paymentBody) }()
	<-sc.started
	sc.block = nil
	record("in_flight", 409, func() int { return sc.post(mode, prefix+"busy", paymentBody) })
	sc.measure(func() {
		close(hold)
		require.Equal(t, 201, <-done)
	})

	sc.status = http.StatusInternalServerError
	record("release", 500, func() int { return sc.post(mode, prefix+"fails", paymentBody) })
	sc.status = http.StatusCreated
	return got, rep
}

// TestCapacityPerOutcome computes the capacity units of every outcome from
// the exact requests idemkey sends (asserting them), and prints the lines
// scripts/bench.sh reports. separate_writes is the same protocol with each
// transaction's actions charged as separate writes (the Powertools
// pattern: claim, effect, completion), so the price of atomicity shows.
func TestCapacityPerOutcome(t *testing.T) {
	ep := localstack.ForTest(t)
	keys, payments := localstack.TableName("keys"), localstack.TableName("payments")
	require.NoError(t, dynamostore.EnsureTable(context.Background(), ep.Client, keys, 0))
	ddbtest.DeleteOnCleanup(t, ep.Client, keys)
	ddbtest.CreateTable(t, ep.Client, payments, "id")

	want := map[string]map[string]Units{
		"claim_first": {
			"first_0": {WCU: 2}, "first_1": {WCU: 1 + 2*2}, "first_5": {WCU: 1 + 2*6},
			"replay": {WCU: 1}, "in_flight": {WCU: 1}, "mismatch": {WCU: 1}, "release": {WCU: 2},
		},
		"one_trip": {
			"first_0": {WCU: 1}, "first_1": {WCU: 2 * 2}, "first_5": {WCU: 2 * 6},
			// release: the 500 writes nothing; the consistent read that
			// looks for an earlier execution's record costs 1 RCU.
			"replay": {WCU: 2}, "in_flight": {WCU: 2}, "mismatch": {WCU: 2}, "release": {RCU: 1},
		},
		"separate_writes": {
			"first_0": {WCU: 2}, "first_1": {WCU: 3}, "first_5": {WCU: 7},
			"replay": {WCU: 1}, "in_flight": {WCU: 1}, "mismatch": {WCU: 1}, "release": {WCU: 2},
		},
	}
	order := []string{"first_0", "first_1", "first_5", "replay", "in_flight", "mismatch", "release"}
	runs := []struct {
		name      string
		mode      idemkey.Mode
		unbundled bool
	}{
		{"claim_first", idemkey.ClaimFirst, false},
		{"one_trip", idemkey.OneTrip, false},
		{"separate_writes", idemkey.ClaimFirst, true},
	}
	var lines []string
	for _, r := range runs {
		sc := newScenario(t, ep, keys, payments, r.unbundled)
		got, rep := sc.outcomes(r.mode, r.name+"-")
		for _, o := range order {
			assert.Equal(t, want[r.name][o], got[o], "%s %s", r.name, o)
			lines = append(lines, fmt.Sprintf("capacity mode=%s outcome=%s wcu=%g rcu=%g", r.name, o, got[o].WCU, got[o].RCU))
			t.Logf("%s %s: reported by the backend for its successful calls: wcu=%g rcu=%g", r.name, o, rep[o].WCU, rep[o].RCU)
		}
	}
	for _, l := range lines {
		fmt.Println(l)
	}

	// The completed record of first_1 beside the record Powertools'
	// idempotency utility stores for the same response (its documented
	// attributes: id = function name#payload hash, expiration,
	// in_progress_expiration, status, data = the JSON-encoded return
	// value, validation = the payload hash).
	out, err := ep.Client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: &keys, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{dynamostore.PartitionKey: s(keyschema.PartitionKey("tenant-1", "claim_first-first-1"))}})
	require.NoError(t, err)
	require.NotNil(t, out.Item)
	powertools := map[string]types.AttributeValue{
		"id":                     s("payments-create#" + strings.Repeat("0", 32)),
		"expiration":             n("1800086400"),
		"in_progress_expiration": n("1800000300000"),
		"status":                 s("COMPLETED"),
		"data":                   s(`{"statusCode":201,"headers":{"Content-Type":"application/json","Location":"/payments/pay_claim_first-first-1"},"body":"{\"id\":\"pay_claim_first-first-1\",\"amount\":1250,\"currency\":\"EUR\"}"}`),
		"validation":             s(strings.Repeat("0", 32)),
	}
	fmt.Printf("record_size ours=%d powertools=%d\n", ItemSize(out.Item), ItemSize(powertools))
	for name, v := range out.Item {
		t.Logf("attribute %s: %d bytes", name, len(name)+ItemSize(map[string]types.AttributeValue{"": v}))
	}
}
