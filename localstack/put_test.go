package localstack

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
)

// randomPuts returns a generator of PutItem bodies over a table with a sort
// key, one without, and a missing one: few keys, items with and without
// their key attributes, conditions that hold or not, every ReturnValues and
// ReturnValuesOnConditionCheckFailure setting (and invalid ones), with and
// without ReturnConsumedCapacity, and malformed members.
func randomPuts(seed uint64) func() string {
	r := rand.New(rand.NewPCG(seed, 0))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	return func() string {
		table := pick("h", "hr", "missing")
		item := map[string]any{"pk": map[string]string{"S": pick("a", "b", "c")}, "v": map[string]string{"N": pick("1", "2")}}
		if table == "hr" && r.IntN(10) != 0 {
			item["sk"] = map[string]string{"S": pick("1", "2")}
		}
		if r.IntN(4) == 0 {
			item["l"] = map[string]any{"L": []any{map[string]string{"S": "<&>"}}}
		}
		req := map[string]any{"TableName": table, "Item": item}
		if c := pick("", "attribute_not_exists(pk)", "v = :one", "attribute_exists(pk)", "v ="); c != "" {
			req["ConditionExpression"] = c
			if c == "v = :one" || r.IntN(20) == 0 {
				req["ExpressionAttributeValues"] = map[string]any{":one": map[string]string{"N": "1"}}
			}
		}
		if rv := pick("", "ALL_OLD", "NONE", "ALL_NEW"); rv != "" {
			req["ReturnValues"] = rv
		}
		if rv := pick("", "ALL_OLD", "NONE"); rv != "" {
			req["ReturnValuesOnConditionCheckFailure"] = rv
		}
		if r.IntN(3) == 0 {
			req["ReturnConsumedCapacity"] = pick("TOTAL", "NONE", "INDEXES")
		}
		switch r.IntN(40) {
		case 0:
			req["Key"] = 5 // not a member of PutItem, and of the wrong type
		case 1:
			req["ReturnValues"] = 7
		case 2:
			req["Item"] = "x"
		}
		body, err := json.Marshal(req)
		if err != nil {
			panic(err)
		}
		return string(body)
	}
}

func TestPutItemFastPathAnswersAndStoresAsTheHandlerPath(t *testing.T) {
	fast := newFront(newEngine(), resolveOptions(nil))
	slow := newFront(newEngine(), resolveOptions(nil))
	slow.slowPut = true
	createPathTables(t, fast, slow)
	outcomes := comparePaths(t, fast, slow, "PutItem", randomPuts(1), func(code int, body []byte) string {
		var e struct {
			Type       string `json:"__type"`
			Item       any
			Attributes any
			Capacity   any `json:"ConsumedCapacity"`
		}
		_ = json.Unmarshal(body, &e)
		return fmt.Sprintf("%d %s item=%t attributes=%t capacity=%t", code, e.Type, e.Item != nil, e.Attributes != nil, e.Capacity != nil)
	})
	t.Logf("outcomes: %v", outcomes)
	for _, o := range []string{
		"200  item=false attributes=false capacity=false",
		"200  item=false attributes=true capacity=false",
		"200  item=false attributes=false capacity=true",
		"400 ConditionalCheckFailedException item=true attributes=false capacity=false",
		"400 ConditionalCheckFailedException item=false attributes=false capacity=false",
		"400 ValidationException item=false attributes=false capacity=false",
		"400 ResourceNotFoundException item=false attributes=false capacity=false",
	} {
		if outcomes[o] < 20 {
			t.Errorf("only %d requests answered %q: the generator does not cover it", outcomes[o], o)
		}
	}
}
