package handler_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countItems returns the number of items in table.
func countItems(t *testing.T, client *dynamodb.Client, table string) int {
	t.Helper()
	n := 0
	var start map[string]types.AttributeValue
	for {
		out, err := client.Scan(context.Background(), &dynamodb.ScanInput{
			TableName: &table, ConsistentRead: new(true), ExclusiveStartKey: start,
		})
		require.NoError(t, err)
		n += len(out.Items)
		if start = out.LastEvaluatedKey; len(start) == 0 {
			return n
		}
	}
}

// A path too long for a key record is refused before the claim: nothing
// executes, the store is not called, and the key stays free.
func TestPathTooLongForTheRecordGets414AndRunsNothing(t *testing.T) {
	h := newHarness(t)
	long := "/payments/" + strings.Repeat("p", 400<<10)
	h.calls.Reset()
	r := h.do(http.MethodPost, long, "k1", `{"amount":1}`)
	assertProblem(t, r, http.StatusRequestURITooLong, "uri-too-long")
	assert.Zero(t, h.executed.Load(), "the handler did not run")
	assert.Zero(t, h.calls.Total(), "no DynamoDB call: %s", h.calls.String())
	assert.Zero(t, countItems(t, h.ep.Client, h.keys), "no key record was written")
	assert.Zero(t, h.effectsFor("k1"))

	// The key was not consumed: the same key on a valid path executes.
	require.Equal(t, http.StatusCreated, h.post("k1", `{"amount":1}`).status)
	assert.Equal(t, int64(1), h.executed.Load())

	// The bound itself is accepted: 8192 bytes of path.
	atBound := "/" + strings.Repeat("p", 8191)
	assert.Equal(t, http.StatusCreated, h.do(http.MethodPost, atBound, "k2", `{}`).status)
	assertProblem(t, h.do(http.MethodPost, atBound+"p", "k3", `{}`), http.StatusRequestURITooLong, "uri-too-long")
}
