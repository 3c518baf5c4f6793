package paymentsapi

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exampleProblems is the prefix the package doc gives the API's own problem
// types.
const exampleProblems = "https://example.com/payments/problems/"

func problemType(t *testing.T, r answer) string {
	t.Helper()
	require.Equal(t, "application/problem+json", r.header.Get("Content-Type"), r.body)
	var doc struct {
		Type   string `json:"type"`
		Status int    `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.body), &doc), r.body)
	assert.Equal(t, r.status, doc.Status, r.body)
	return doc.Type
}

func TestTheAPIsOwnErrorsCarryItsOwnProblemTypes(t *testing.T) {
	a := newAPI(t, 0)
	assert.Equal(t, exampleProblems+"unauthorized", problemType(t, a.call("POST", "/payments", "", "k1", `{"amount":1,"currency":"EUR"}`)))
	assert.Equal(t, exampleProblems+"invalid-payment", problemType(t, a.call("POST", "/payments", "alice", "k2", `{"amount":0,"currency":"EUR"}`)))
	assert.Equal(t, exampleProblems+"not-found", problemType(t, a.call("GET", "/payments/pay_none", "alice", "", "")))

	// The protocol's own answers keep idemkey's types.
	require.Equal(t, 201, a.call("POST", "/payments", "alice", "k3", `{"amount":1,"currency":"EUR"}`).status)
	reused := a.call("POST", "/payments", "alice", "k3", `{"amount":2,"currency":"EUR"}`)
	assert.Equal(t, "https://github.com/idemkey/idemkey/blob/main/docs/http.md#problem-key-reused", problemType(t, reused))
}

func TestListShowsPaymentsOldestFirstThenTheCount(t *testing.T) {
	a := newAPI(t, 0)
	var ids []string
	for i, key := range []string{"k1", "k2", "k3", "k4"} {
		if i > 0 {
			time.Sleep(2 * time.Millisecond) // ids order by their millisecond
		}
		r := a.call("POST", "/payments", "alice", key, `{"amount":1,"currency":"EUR"}`)
		require.Equal(t, 201, r.status, r.body)
		var p Payment
		require.NoError(t, json.Unmarshal([]byte(r.body), &p))
		ids = append(ids, p.ID)
	}
	body := a.call("GET", "/payments", "alice", "", "").body
	assert.True(t, strings.HasPrefix(body, `{"payments":[`), "members in the documented order: %s", body)
	assert.True(t, strings.HasSuffix(body, `],"count":4}`+"\n"), body)
	var list struct{ Payments []Payment }
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	var got []string
	for _, p := range list.Payments {
		got = append(got, p.ID)
	}
	assert.Equal(t, ids, got, "oldest first")
}

// TestOwnerOfIsTheScopeIdemctlPrints pins the scope rule that idemctl's
// scope command repeats (and the README prints): a change here must be
// made there too.
func TestOwnerOfIsTheScopeIdemctlPrints(t *testing.T) {
	if got := OwnerOf("alice"); got != "2bd806c97f0e00af1a1fc3328fa763a9" {
		t.Fatalf("OwnerOf(alice) = %s; update cmd/idemctl's scope command and the README with the rule", got)
	}
}
