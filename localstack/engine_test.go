package localstack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/truora/minidyn/server"
)

// engineExchange is one request of TestEngineAnswersAsMinidynServer.
type engineExchange struct {
	method, op, body string
}

// TestEngineAnswersAsMinidynServer sends the same requests, in the same
// order, to minidyn's own HTTP server and to the front's engine, each
// fresh, and requires byte-identical answers: status, Content-Type and
// body, errors included.
func TestEngineAnswersAsMinidynServer(t *testing.T) {
	const table = `"TableName":"t"`
	exchanges := []engineExchange{
		{op: "CreateTable", body: `{` + table + `,"BillingMode":"PAY_PER_REQUEST","AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"},{"AttributeName":"sk","AttributeType":"S"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"sk","KeyType":"RANGE"}]}`},
		{op: "CreateTable", body: `{` + table + `,"BillingMode":"PAY_PER_REQUEST","AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}]}`},
		{op: "DescribeTable", body: `{` + table + `}`},
		{op: "PutItem", body: `{` + table + `,"Item":{"pk":{"S":"a"},"sk":{"S":"1"},"n":{"N":"5"},"html":{"S":"<b>&</b>"},"l":{"L":[{"S":"x"},{"M":{"k":{"BOOL":false}}}]},"b":{"B":"AAE="},"ss":{"SS":["p","q"]}}}`},
		{op: "PutItem", body: `{` + table + `,"Item":{"pk":{"S":"a"},"sk":{"S":"1"}},"ConditionExpression":"attribute_not_exists(pk)","ReturnValuesOnConditionCheckFailure":"ALL_OLD"}`},
		{op: "PutItem", body: `{` + table + `,"Item":{"pk":{"S":"a"}}}`},
		{op: "PutItem", body: `{"TableName":"missing","Item":{"pk":{"S":"a"}}}`},
		{op: "UpdateItem", body: `{` + table + `,"Key":{"pk":{"S":"a"},"sk":{"S":"1"}},"UpdateExpression":"SET n = n + :one","ConditionExpression":"n = :zero","ExpressionAttributeValues":{":one":{"N":"1"},":zero":{"N":"0"}},"ReturnValuesOnConditionCheckFailure":"ALL_OLD"}`},
		{op: "UpdateItem", body: `{` + table + `,"Key":{"pk":{"S":"a"},"sk":{"S":"1"}},"UpdateExpression":"SET n = n + :one","ExpressionAttributeValues":{":one":{"N":"1"}},"ReturnValues":"ALL_NEW"}`},
		{op: "GetItem", body: `{` + table + `,"Key":{"pk":{"S":"a"},"sk":{"S":"1"}},"ConsistentRead":true}`},
		{op: "GetItem", body: `{` + table + `,"Key":{"pk":{"S":"nope"},"sk":{"S":"1"}}}`},
		{op: "Query", body: `{` + table + `,"KeyConditionExpression":"pk = :p","ExpressionAttributeValues":{":p":{"S":"a"}}}`},
		{op: "Scan", body: `{` + table + `,"Limit":1}`},
		{op: "BatchWriteItem", body: `{"RequestItems":{"t":[{"PutRequest":{"Item":{"pk":{"S":"b"},"sk":{"S":"2"}}}}]}}`},
		{op: "BatchGetItem", body: `{"RequestItems":{"t":{"Keys":[{"pk":{"S":"b"},"sk":{"S":"2"}}]}}}`},
		{op: "TransactWriteItems", body: `{"TransactItems":[{"Put":{` + table + `,"Item":{"pk":{"S":"c"},"sk":{"S":"3"}}}},{"Update":{` + table + `,"Key":{"pk":{"S":"a"},"sk":{"S":"1"}},"UpdateExpression":"SET n = :v","ConditionExpression":"n = :zero","ExpressionAttributeValues":{":v":{"N":"9"},":zero":{"N":"0"}},"ReturnValuesOnConditionCheckFailure":"ALL_OLD"}}]}`},
		{op: "TransactWriteItems", body: `{"TransactItems":[{"Delete":{` + table + `,"Key":{"pk":{"S":"b"},"sk":{"S":"2"}}}}]}`},
		{op: "TransactGetItems", body: `{"TransactItems":[{"Get":{` + table + `,"Key":{"pk":{"S":"a"},"sk":{"S":"1"}}}}]}`},
		{op: "DeleteItem", body: `{` + table + `,"Key":{"pk":{"S":"a"},"sk":{"S":"1"}},"ReturnValues":"ALL_OLD"}`},
		{op: "DeleteItem", body: `{` + table + `,"Key":{"pk":{"S":"a"},"sk":{"S":"1"}},"ConditionExpression":"attribute_exists(pk)"}`},
		{op: "UpdateTable", body: `{` + table + `,"BillingMode":"PAY_PER_REQUEST"}`},
		{op: "PutItem", body: `{"TableName":5}`},
		{op: "PutItem", body: `{not json`},
		{op: "ListGlobalTables", body: `{}`},
		{method: http.MethodGet, op: "GetItem", body: ``},
		{op: "DeleteTable", body: `{` + table + `}`},
		{op: "DeleteTable", body: `{` + table + `}`},
	}
	minidyn, eng := server.NewServer(), newEngine()
	for _, x := range exchanges {
		want, got := exchangeWith(minidyn, x), exchangeWith(eng, x)
		assert.Equal(t, want.Code, got.Code, "%s %s: status", x.op, x.body)
		assert.Equal(t, want.Header().Get("Content-Type"), got.Header().Get("Content-Type"), "%s %s: Content-Type", x.op, x.body)
		if w, g := want.Body.String(), got.Body.String(); w != g {
			// DynamoDB's sets are unordered, and minidyn holds them in
			// maps: the same set may come out in another order. Any
			// other difference, escaping included (it changes the
			// length), fails.
			assert.Equal(t, len(w), len(g), "%s %s: body length", x.op, x.body)
			assert.Equal(t, sortedSets(t, w), sortedSets(t, g), "%s %s: body", x.op, x.body)
		}
	}
}

// sortedSets returns the JSON document body with the members of every
// string, number and binary set in sorted order.
func sortedSets(t *testing.T, body string) string {
	t.Helper()
	var doc any
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		return body
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, member := range v {
				if set, ok := member.([]any); ok && (k == "SS" || k == "NS" || k == "BS") {
					sort.Slice(set, func(i, j int) bool { return fmt.Sprint(set[i]) < fmt.Sprint(set[j]) })
				}
				walk(member)
			}
		case []any:
			for _, member := range v {
				walk(member)
			}
		}
	}
	walk(doc)
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func exchangeWith(h http.Handler, x engineExchange) *httptest.ResponseRecorder {
	method := x.method
	if method == "" {
		method = http.MethodPost
	}
	req := httptest.NewRequest(method, "/", bytes.NewReader([]byte(x.body)))
	req.Header.Set("X-Amz-Target", targetPrefix+x.op)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestWritesKeepTheTableKeyOrderMinidynKeeps sends a seeded random mix of
// PutItem, UpdateItem and DeleteItem requests, some of them failing their
// condition, through the front's fast and slow paths and a transaction,
// and requires minidyn's sorted key list of the table to be, after every
// request, exactly the sorted keys of the table's items, as minidyn's own
// append-and-sort keeps it.
func TestWritesKeepTheTableKeyOrderMinidynKeeps(t *testing.T) {
	for _, slow := range []bool{false, true} {
		t.Run(fmt.Sprintf("slowPut=%v", slow), func(t *testing.T) {
			f := newFront(newEngine(), resolveOptions(nil))
			f.slowPut = slow
			mustServe(t, f, "CreateTable", `{"TableName":"t","BillingMode":"PAY_PER_REQUEST","AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"},{"AttributeName":"sk","AttributeType":"N"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"sk","KeyType":"RANGE"}]}`)
			rnd := rand.New(rand.NewPCG(7, 11))
			for i := range 600 {
				pk, sk := fmt.Sprintf("p%03d", rnd.IntN(60)), rnd.IntN(5)
				key := fmt.Sprintf(`{"pk":{"S":%q},"sk":{"N":"%d"}}`, pk, sk)
				var op, body string
				switch rnd.IntN(5) {
				case 0, 1:
					op, body = "PutItem", fmt.Sprintf(`{"TableName":"t","Item":{"pk":{"S":%q},"sk":{"N":"%d"},"v":{"N":"%d"}}}`, pk, sk, i)
				case 2:
					op, body = "PutItem", fmt.Sprintf(`{"TableName":"t","Item":{"pk":{"S":%q},"sk":{"N":"%d"}},"ConditionExpression":"attribute_not_exists(pk)","ReturnValuesOnConditionCheckFailure":"ALL_OLD"}`, pk, sk)
				case 3:
					op, body = "UpdateItem", fmt.Sprintf(`{"TableName":"t","Key":%s,"UpdateExpression":"SET v = :v","ExpressionAttributeValues":{":v":{"N":"%d"}}}`, key, i)
				default:
					op, body = "DeleteItem", fmt.Sprintf(`{"TableName":"t","Key":%s}`, key)
				}
				if i%7 == 0 {
					op, body = "TransactWriteItems", fmt.Sprintf(`{"TransactItems":[{"Put":{"TableName":"t","Item":{"pk":{"S":"x%s"},"sk":{"N":"%d"}}}},{"Update":{"TableName":"t","Key":%s,"UpdateExpression":"SET v = :v","ExpressionAttributeValues":{":v":{"N":"1"}}}}]}`, pk, sk, key)
				}
				if i%7 == 3 {
					op, body = "TransactWriteItems", fmt.Sprintf(`{"TransactItems":[{"Put":{"TableName":"t","Item":{"pk":{"S":"y%s"},"sk":{"N":"%d"}}}},{"Delete":{"TableName":"t","Key":%s}}]}`, pk, sk, key)
				}
				rec := serveDirect(f, op, body)
				if rec.Code != http.StatusOK && !bytes.Contains(rec.Body.Bytes(), []byte(codeConditionalCheck)) {
					t.Fatalf("request %d, %s: status %d: %s", i, op, rec.Code, rec.Body)
				}
				tbl := f.eng.table("t")
				want := make([]string, 0, len(tbl.Data))
				for k := range tbl.Data {
					want = append(want, k)
				}
				sort.Strings(want)
				all := append(slices.Clone(tbl.SortedKeys), f.eng.pending[tbl]...)
				sort.Strings(all)
				if !slices.IsSorted(tbl.SortedKeys) || !slices.Equal(all, want) {
					t.Fatalf("after request %d (%s), minidyn's key list is %q and %q are set aside, want %q",
						i, op, tbl.SortedKeys, f.eng.pending[tbl], want)
				}
				if i%10 != 0 {
					continue
				}
				// A Scan reads the list: every key set aside is in it,
				// in order.
				rec = serveDirect(f, "Scan", `{"TableName":"t"}`)
				var out struct {
					Items []map[string]*server.AttributeValue
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &out); rec.Code != http.StatusOK || err != nil {
					t.Fatalf("Scan after request %d: %d %s", i, rec.Code, rec.Body)
				}
				got := make([]string, len(out.Items))
				for j, item := range out.Items {
					got[j], _ = tableKey(tbl, typesItem(item))
				}
				if !slices.Equal(got, want) || len(f.eng.pending) != 0 {
					t.Fatalf("Scan after request %d read %q, want %q", i, got, want)
				}
			}
		})
	}
}

// TestStoredItemIsWhatAConsistentGetItemReturns reads items of every kind
// of attribute value, absent items and invalid keys both with minidyn's
// consistent GetItem and directly from the table, and requires the same
// item (or the same failure), copied: changing the copy leaves the table
// as it was.
func TestStoredItemIsWhatAConsistentGetItemReturns(t *testing.T) {
	f := newFront(newEngine(), resolveOptions(nil))
	mustServe(t, f, "CreateTable", `{"TableName":"t","BillingMode":"PAY_PER_REQUEST","AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"},{"AttributeName":"sk","AttributeType":"N"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"sk","KeyType":"RANGE"}]}`)
	mustServe(t, f, "PutItem", `{"TableName":"t","Item":{"pk":{"S":"a"},"sk":{"N":"1"},"s":{"S":"x"},"n":{"N":"2.5"},"b":{"B":"AQID"},"t":{"BOOL":true},"z":{"NULL":true},
		"ss":{"SS":["p","q"]},"ns":{"NS":["1","2"]},"bs":{"BS":["AQ==","Ag=="]},"l":{"L":[{"S":"e"},{"L":[]},{"M":{"k":{"N":"3"}}}]},"m":{"M":{"inner":{"M":{}},"list":{"L":[{"B":"AA=="}]}}}}}`)
	mustServe(t, f, "PutItem", `{"TableName":"t","Item":{"pk":{"S":"b"},"sk":{"N":"2"}}}`)
	ctx := context.Background()
	s := func(v string) *server.AttributeValue { return &server.AttributeValue{S: &v} }
	n := func(v string) *server.AttributeValue { return &server.AttributeValue{N: &v} }
	for _, key := range []map[string]*server.AttributeValue{
		{"pk": s("a"), "sk": n("1")},
		{"pk": s("b"), "sk": n("2")},
		{"pk": s("c"), "sk": n("1")},              // no such item
		{"pk": s("a")},                            // half a key
		{"pk": s("a"), "sk": s("1")},              // the wrong type
		{"pk": s("a"), "sk": n("1"), "x": s("y")}, // more than the key
	} {
		got, ok := f.eng.storedItem("t", key)
		out, err := f.eng.c.GetItem(ctx, &server.GetItemInput{TableName: aws.String("t"), Key: key, ConsistentRead: aws.Bool(true)})
		if ok != (err == nil) {
			t.Errorf("key %v: storedItem reports %v, GetItem's error is %v", key, ok, err)
			continue
		}
		if err != nil {
			continue
		}
		want := out.Item
		if len(want) == 0 {
			want = nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("key %v: storedItem =\n%#v\nGetItem =\n%#v", key, got, want)
		}
		for _, v := range got {
			if v.S != nil {
				*v.S = "changed"
			}
			if v.L != nil {
				v.L[0] = nil
			}
			if len(v.B) > 0 {
				v.B[0] = 9
			}
		}
		again, _ := f.eng.storedItem("t", key)
		if !reflect.DeepEqual(again, want) {
			t.Errorf("key %v: changing the copy changed the table's item to\n%#v", key, again)
		}
	}
	if _, ok := f.eng.storedItem("missing", map[string]*server.AttributeValue{"pk": s("a"), "sk": n("1")}); ok {
		t.Error("storedItem of a missing table reports success")
	}
}

// TestReadBodyReadsWhatIsThereWhateverTheDeclaredSize reads bodies whose
// declared size is right, unknown, too small, too large or above the
// limit, and requires the bytes there are, or the reader's error.
func TestReadBodyReadsWhatIsThereWhateverTheDeclaredSize(t *testing.T) {
	const body = `{"TableName":"t"}`
	for _, c := range []struct {
		name    string
		size    int64
		want    string
		wantErr bool
	}{
		{"exact", int64(len(body)), body, false},
		{"unknown", -1, body, false},
		{"zero", 0, body, false},
		{"declared smaller", 5, body, false},
		{"declared larger", int64(len(body)) + 10, "", true},
		{"above the limit", 1 << 40, body, false},
	} {
		got, err := readBody(strings.NewReader(body), c.size, 1<<20)
		if (err != nil) != c.wantErr || string(got) != c.want {
			t.Errorf("%s: readBody = %q, %v; want %q, error %v", c.name, got, err, c.want, c.wantErr)
		}
	}
	rec := httptest.NewRecorder()
	_, err := readBody(http.MaxBytesReader(rec, io.NopCloser(strings.NewReader(body)), 4), int64(len(body)), 1<<20)
	if err == nil {
		t.Error("readBody read past the MaxBytesReader's limit")
	}
}

// TestKeysSetAsideAreSortedInBeforeADelete deletes, in a transaction, an
// item whose key a PutItem just set aside: minidyn's DeleteItem removes the
// key from the sorted list by binary search, and would remove another
// key, or none, were the key not in the list yet.
func TestKeysSetAsideAreSortedInBeforeADelete(t *testing.T) {
	f := newFront(newEngine(), resolveOptions(nil))
	mustServe(t, f, "CreateTable", `{"TableName":"t","BillingMode":"PAY_PER_REQUEST","AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}]}`)
	for _, k := range []string{"a", "c", "e"} {
		mustServe(t, f, "PutItem", `{"TableName":"t","Item":{"pk":{"S":"`+k+`"}}}`)
	}
	// A transaction first, so that the front knows the table's key
	// attributes and asks minidyn nothing when preparing the next one.
	mustServe(t, f, "TransactWriteItems", `{"TransactItems":[{"Put":{"TableName":"t","Item":{"pk":{"S":"a"}}}}]}`)
	mustServe(t, f, "Scan", `{"TableName":"t"}`) // sorts them in
	mustServe(t, f, "PutItem", `{"TableName":"t","Item":{"pk":{"S":"d"}}}`)
	mustServe(t, f, "TransactWriteItems", `{"TransactItems":[{"Put":{"TableName":"t","Item":{"pk":{"S":"b"}}}},{"Delete":{"TableName":"t","Key":{"pk":{"S":"d"}}}}]}`)
	tbl := f.eng.table("t")
	all := append(slices.Clone(tbl.SortedKeys), f.eng.pending[tbl]...)
	sort.Strings(all)
	if want := []string{"a", "b", "c", "e"}; !slices.Equal(all, want) {
		t.Errorf("the key list is %q and %q are set aside, want %q", tbl.SortedKeys, f.eng.pending[tbl], want)
	}
}
