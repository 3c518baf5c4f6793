package localstack

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// fakeClock is a settable clock for the ClientRequestToken window.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// addToCounter returns an action adding by to attribute v of item "a".
func addToCounter(by string) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{TableName: aws.String("t"), Key: keyA,
		UpdateExpression: aws.String("ADD v :by"), ExpressionAttributeValues: map[string]types.AttributeValue{":by": n(by)}}}
}

func TestRepeatedClientRequestTokenWithinTheWindowSucceedsWithoutApplyingAgain(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	c := embedded(t, func(o *Options) { o.Now = clock.Now }).Client
	createTable(t, c, "t", "")
	for i := range 3 {
		if err := transact(c, "token-1", addToCounter("1")); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		clock.Advance(ClientRequestTokenWindow/3 - time.Second)
	}
	if got := getNumber(t, c, "t", "a", "v"); got != "1" {
		t.Errorf("v = %q after three calls with one token, want 1", got)
	}
	if err := transact(c, "token-2", addToCounter("1")); err != nil {
		t.Fatal(err)
	}
	if got := getNumber(t, c, "t", "a", "v"); got != "2" {
		t.Errorf("v = %q after a call with a new token, want 2", got)
	}
}

func TestClientRequestTokenWithDifferentParametersFailsWithIdempotentParameterMismatch(t *testing.T) {
	c := embedded(t).Client
	createTable(t, c, "t", "")
	if err := transact(c, "token-1", addToCounter("1")); err != nil {
		t.Fatal(err)
	}
	err := transact(c, "token-1", addToCounter("5"))
	var mismatch *types.IdempotentParameterMismatchException
	if !errors.As(err, &mismatch) {
		t.Errorf("err = %v, want *types.IdempotentParameterMismatchException", err)
	}
	if got := getNumber(t, c, "t", "a", "v"); got != "1" {
		t.Errorf("v = %q, want 1", got)
	}
}

func TestClientRequestTokenIsTreatedAsNewAfterTheWindow(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	c := embedded(t, func(o *Options) { o.Now = clock.Now }).Client
	createTable(t, c, "t", "")
	if err := transact(c, "token-1", addToCounter("1")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(ClientRequestTokenWindow)
	if err := transact(c, "token-1", addToCounter("1")); err != nil {
		t.Fatal(err)
	}
	if got := getNumber(t, c, "t", "a", "v"); got != "2" {
		t.Errorf("v = %q, want 2: the repeat after the window is applied", got)
	}
	// The repeat opened a new window with its own parameters.
	if err := transact(c, "token-1", addToCounter("5")); apiErrorCode(err) != "IdempotentParameterMismatchException" {
		t.Errorf("err = %v, want IdempotentParameterMismatchException", err)
	}
}

func TestClientRequestTokenOfAFailedCallIsNotRemembered(t *testing.T) {
	c := embedded(t).Client
	createTable(t, c, "t", "")
	failing := addToCounter("1")
	failing.Update.ConditionExpression = exists // item "a" does not exist yet
	cancellationReasons(t, transact(c, "token-1", failing))
	if err := transact(c, "token-1", addToCounter("3")); err != nil {
		t.Fatalf("same token, other parameters, after a failed call: %v", err)
	}
	if got := getNumber(t, c, "t", "a", "v"); got != "3" {
		t.Errorf("v = %q, want 3", got)
	}
}

func TestClientRequestTokenComparesParametersIgnoringMemberOrder(t *testing.T) {
	e := embedded(t)
	createTable(t, e.Client, "t", "")
	first := `{"ClientRequestToken":"tok","TransactItems":[{"Update":{"TableName":"t","Key":{"pk":{"S":"a"}},"UpdateExpression":"ADD v :by","ExpressionAttributeValues":{":by":{"N":"1"}}}}]}`
	reordered := `{"TransactItems":[{"Update":{"ExpressionAttributeValues":{":by":{"N":"1"}},"UpdateExpression":"ADD v :by","Key":{"pk":{"S":"a"}},"TableName":"t"}}], "ClientRequestToken":"tok"}`
	for i, body := range []string{first, reordered} {
		if status, out := rawCall(t, e.URL, "TransactWriteItems", body); status != http.StatusOK {
			t.Fatalf("call %d: %d %v", i, status, out)
		}
	}
	if got := getNumber(t, e.Client, "t", "a", "v"); got != "1" {
		t.Errorf("v = %q, want 1", got)
	}
}

func TestClientRequestTokenLongerThan36CharactersIsRejected(t *testing.T) {
	c := embedded(t).Client
	createTable(t, c, "t", "")
	err := transact(c, strings.Repeat("x", 37), addToCounter("1"))
	wantValidation(t, err, "at 'clientRequestToken' failed to satisfy constraint: Member must have length less than or equal to 36")
}

func TestDisableClientRequestTokenAppliesEveryCall(t *testing.T) {
	c := embedded(t, func(o *Options) { o.DisableClientRequestToken = true }).Client
	createTable(t, c, "t", "")
	for range 2 {
		if err := transact(c, "token-1", addToCounter("1")); err != nil {
			t.Fatal(err)
		}
	}
	if err := transact(c, "token-1", addToCounter("5")); err != nil {
		t.Fatal(err)
	}
	if got := getNumber(t, c, "t", "a", "v"); got != "7" {
		t.Errorf("v = %q, want 7", got)
	}
}

func TestTokenStoreDropsExpiredRecords(t *testing.T) {
	st := tokenStore{records: map[string]tokenRecord{}}
	t0 := time.Unix(0, 0)
	for i, tok := range []string{"a", "b", "c"} {
		st.add(tok, tokenRecord{expires: t0.Add(time.Duration(i+1) * time.Minute)})
	}
	if _, ok := st.lookup("c", t0.Add(2*time.Minute)); !ok {
		t.Error("c expired early")
	}
	if _, ok := st.lookup("a", t0.Add(2*time.Minute)); ok {
		t.Error("a still found after it expired")
	}
	if len(st.records) != 1 || len(st.order) != 1 {
		t.Errorf("records, order = %d, %d after lookup; want expired a and b dropped", len(st.records), len(st.order))
	}
}
