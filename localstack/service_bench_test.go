//go:build unix

package localstack

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The requests of BenchmarkServiceTime, as the SDK sends them for
// idemkey's latency benchmark (handler/latency_bench_test.go): KEY stands
// for the request's key, which each iteration replaces with a fresh one.
const (
	benchKeys     = "bench-keys"
	benchPayments = "bench-payments"

	benchPaymentPut = `{"ConditionExpression":"attribute_not_exists(id)","Item":{"id":{"S":"pay_KEY"},"amount":{"N":"1250"}},"TableName":"bench-payments"}`

	benchClaimCondition = `"ConditionExpression":"attribute_not_exists(#pk) OR (#state = :in_progress AND #lock_exp < :now_ms) OR (#exp < :now_s AND NOT (#state = :in_progress))","ExpressionAttributeNames":{"#lock_exp":"lock_exp","#pk":"pk","#exp":"exp","#state":"state"},"ExpressionAttributeValues":{":now_s":{"N":"1796126948"},":now_ms":{"N":"1796126948075"},":in_progress":{"S":"in_progress"}}`

	benchClaim = `{` + benchClaimCondition + `,"Item":{"exp":{"N":"1796213348"},"state":{"S":"in_progress"},"lock_exp":{"N":"1796127248075"},"created":{"N":"1796126948075"},"fp":{"B":"7pX1ziD+1u5TpCSJG0QrooYrqUXgT/OpotEJksQ6nN8="},"pk":{"S":"0:KEY"},"path":{"S":"/payments"},"v":{"N":"1"},"method":{"S":"POST"},"lock":{"S":"PSOENBBCJ5O7T6I5RESBIIJHZE"}},"ReturnValuesOnConditionCheckFailure":"ALL_OLD","TableName":"bench-keys"}`

	benchCompleted = `"Item":{"pk":{"S":"0:KEY"},"path":{"S":"/payments"},"v":{"N":"1"},"lock_exp":{"N":"1796127248075"},"done":{"N":"1796126948076"},"state":{"S":"completed"},"lock":{"S":"PSOENBBCJ5O7T6I5RESBIIJHZE"},"exp":{"N":"1796213348"},"status":{"N":"201"},"body":{"B":"eyJpZCI6InBheV8xIiwiYW1vdW50IjoxMjUwLCJjdXJyZW5jeSI6IkVVUiJ9"},"method":{"S":"POST"},"created":{"N":"1796126948075"},"fp":{"B":"7pX1ziD+1u5TpCSJG0QrooYrqUXgT/OpotEJksQ6nN8="},"hdr":{"M":{"Content-Type":{"L":[{"S":"application/json"}]}}}}`

	benchCommit = `{"ClientRequestToken":"tok-KEY","TransactItems":[{"Put":{"ConditionExpression":"#lock = :lock AND #state = :in_progress","ExpressionAttributeNames":{"#lock":"lock","#state":"state"},"ExpressionAttributeValues":{":lock":{"S":"PSOENBBCJ5O7T6I5RESBIIJHZE"},":in_progress":{"S":"in_progress"}},` + benchCompleted + `,"ReturnValuesOnConditionCheckFailure":"ALL_OLD","TableName":"bench-keys"}},{"Put":` + benchPaymentPut + `}]}`

	benchOneTrip = `{"ClientRequestToken":"one-KEY","TransactItems":[{"Put":{` + benchClaimCondition + `,` + benchCompleted + `,"ReturnValuesOnConditionCheckFailure":"ALL_OLD","TableName":"bench-keys"}},{"Put":` + benchPaymentPut + `}]}`
)

// BenchmarkServiceTime measures the embedded emulator's own service
// time per call (in process, without HTTP or the SDK): the time every call holds the emulator's lock, which is what
// concurrent clients queue for. Cases, each on tables of b.N items:
// put_conditional is the floor's PutItem; claim a first claim, claim_replay
// a claim of a completed key (ConditionalCheckFailedException with
// ALL_OLD); commit ClaimFirst's TransactWriteItems of the completed record
// and the payment; one_trip OneTrip's, and one_trip_replay a repeat of it
// with a new token (TransactionCanceledException with ALL_OLD).
//
// cpu-ns/op is the process's CPU time per call (garbage collection
// included), which other processes' load on the machine does not inflate
// as it does ns/op.
func BenchmarkServiceTime(b *testing.B) {
	cases := []struct {
		name  string
		op    string
		body  string
		setup []string // ops:bodies applied to the key before the timed call
		want  int
	}{
		{name: "put_conditional", op: "PutItem", body: benchPaymentPut, want: http.StatusOK},
		{name: "claim", op: "PutItem", body: benchClaim, want: http.StatusOK},
		{name: "claim_replay", op: "PutItem", body: benchClaim, setup: []string{"PutItem", benchClaim, "TransactWriteItems", benchCommit}, want: http.StatusBadRequest},
		{name: "commit", op: "TransactWriteItems", body: benchCommit, setup: []string{"PutItem", benchClaim}, want: http.StatusOK},
		{name: "one_trip", op: "TransactWriteItems", body: benchOneTrip, want: http.StatusOK},
		{name: "one_trip_replay", op: "TransactWriteItems", body: strings.ReplaceAll(benchOneTrip, "one-KEY", "two-KEY"), setup: []string{"TransactWriteItems", benchOneTrip}, want: http.StatusBadRequest},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			h := NewHandler()
			serveBench(b, h, "CreateTable", `{"TableName":"`+benchKeys+`","BillingMode":"PAY_PER_REQUEST","AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}]}`, http.StatusOK)
			serveBench(b, h, "CreateTable", `{"TableName":"`+benchPayments+`","BillingMode":"PAY_PER_REQUEST","AttributeDefinitions":[{"AttributeName":"id","AttributeType":"S"}],"KeySchema":[{"AttributeName":"id","KeyType":"HASH"}]}`, http.StatusOK)
			keyed := func(body string, i int) string { return strings.ReplaceAll(body, "KEY", "k"+strconv.Itoa(i)) }
			for i := range b.N {
				for j := 0; j < len(c.setup); j += 2 {
					serveBench(b, h, c.setup[j], keyed(c.setup[j+1], i), http.StatusOK)
				}
			}
			bodies := make([][]byte, b.N)
			for i := range bodies {
				bodies[i] = []byte(keyed(c.body, i))
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu := processCPU(b)
			for i := range b.N {
				serveBenchBytes(b, h, c.op, bodies[i], c.want)
			}
			b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU returns the CPU time the process has used, user and system.
// Unlike ns/op it does not grow when other processes take the machine's
// cores.
func processCPU(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

func serveBench(b *testing.B, h http.Handler, op, body string, want int) {
	b.Helper()
	serveBenchBytes(b, h, op, []byte(body), want)
}

func serveBenchBytes(b *testing.B, h http.Handler, op string, body []byte, want int) {
	b.Helper()
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	req.Header.Set("X-Amz-Target", targetPrefix+op)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != want {
		b.Fatalf("%s: status %d, want %d: %s", op, rec.Code, want, rec.Body)
	}
}
