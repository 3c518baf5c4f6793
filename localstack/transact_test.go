package localstack

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// serveDirect sends one request straight to h, without HTTP, and returns
// the recorded response.
func serveDirect(h http.Handler, op, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	req.Header.Set("X-Amz-Target", targetPrefix+op)
	req.Header.Set("Content-Type", jsonContentType)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// mustServe is serveDirect failing the test on any status but 200.
func mustServe(t *testing.T, h http.Handler, op, body string) {
	t.Helper()
	if rec := serveDirect(h, op, body); rec.Code != http.StatusOK {
		t.Fatalf("%s: status %d: %s", op, rec.Code, rec.Body)
	}
}

func TestTransactionCostDoesNotGrowWithTableSize(t *testing.T) {
	// Allocations per transaction, a deterministic stand-in for its time:
	// minidyn's own path copies every item of the tables it writes.
	allocs := func(items int) float64 {
		h := NewHandler()
		for _, table := range []string{"keys", "payments"} {
			mustServe(t, h, "CreateTable", `{"TableName":"`+table+`","BillingMode":"PAY_PER_REQUEST",
				"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],
				"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}]}`)
		}
		for i := range items {
			mustServe(t, h, "PutItem", fmt.Sprintf(`{"TableName":"payments","Item":{"pk":{"S":"old-%d"},"amount":{"N":"%d"}}}`, i, i))
		}
		n := 0
		return testing.AllocsPerRun(50, func() {
			n++
			body := fmt.Sprintf(`{"TransactItems":[
				{"Put":{"TableName":"keys","Item":{"pk":{"S":"k-%d"},"state":{"S":"completed"}},"ConditionExpression":"attribute_not_exists(pk)"}},
				{"Put":{"TableName":"payments","Item":{"pk":{"S":"p-%d"},"amount":{"N":"1"}},"ConditionExpression":"attribute_not_exists(pk)"}}]}`, n, n)
			if rec := serveDirect(h, "TransactWriteItems", body); rec.Code != http.StatusOK {
				t.Fatalf("TransactWriteItems: status %d: %s", rec.Code, rec.Body)
			}
		})
	}
	small, large := allocs(10), allocs(3000)
	t.Logf("allocations per transaction: %.0f with 10 items in the table, %.0f with 3000", small, large)
	if large > small*1.1+20 {
		t.Errorf("a transaction allocates %.0f times with 3000 items in its table and %.0f with 10: its cost grows with the table", large, small)
	}
}

// transactTable creates a table keyed by the string "pk" on e, named after
// prefix, deleted when the test ends, and returns its name.
func transactTable(t *testing.T, e *Endpoint, prefix string) string {
	t.Helper()
	name := TableName(prefix)
	createTable(t, e.Client, name, "")
	t.Cleanup(func() {
		_, _ = e.Client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return name
}

// items returns every item of table, keyed by pk.
func items(t *testing.T, c *dynamodb.Client, table string) map[string]map[string]types.AttributeValue {
	t.Helper()
	all := map[string]map[string]types.AttributeValue{}
	p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("Scan: %v", err)
		}
		for _, it := range out.Items {
			all[it["pk"].(*types.AttributeValueMemberS).Value] = it
		}
	}
	return all
}

// richItem returns an item with pk and an attribute of every scalar, set
// and document type that round-trips exactly.
func richItem(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk":   s(pk),
		"v":    n("1"),
		"str":  s("text"),
		"bin":  &types.AttributeValueMemberB{Value: []byte{0, 1, 2, 255}},
		"flag": &types.AttributeValueMemberBOOL{Value: false},
		"nul":  &types.AttributeValueMemberNULL{Value: true},
		"ss":   &types.AttributeValueMemberSS{Value: []string{"x", "y"}},
		"ns":   &types.AttributeValueMemberNS{Value: []string{"1", "2.5"}},
		"bs":   &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2}}},
		"list": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("a"), n("2")}},
		"map":  &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": s("v"), "n": n("3")}},
	}
}

// failingWrite is a write on item "fail" that DynamoDB refuses as invalid
// (not for its condition), and minidyn only once it has decoded the action.
type failingWrite struct {
	name   string
	action func(table string) types.TransactWriteItem
	// embeddedOnly marks the writes that moto 5 does not refuse as
	// DynamoDB does (it answers HTTP 500, or a reason code DynamoDB does
	// not have): they run against the embedded emulator only.
	embeddedOnly bool
}

var failingWrites = []failingWrite{
	{name: "update of a string by arithmetic", action: func(table string) types.TransactWriteItem {
		return types.TransactWriteItem{Update: &types.Update{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": s("fail")},
			UpdateExpression:          aws.String("SET w = :w, str = str + :one"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":w": s("changed"), ":one": n("1")}}}
	}},
	{name: "undefined expression attribute name", embeddedOnly: true, action: func(table string) types.TransactWriteItem {
		return types.TransactWriteItem{Update: &types.Update{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": s("fail")},
			UpdateExpression:          aws.String("SET #undefined = :w"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":w": s("changed")}}}
	}},
	{name: "unknown function in a condition", embeddedOnly: true, action: func(table string) types.TransactWriteItem {
		return types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": s("fail")},
			ConditionExpression: aws.String("no_such_function(pk)")}}
	}},
	{name: "unbalanced condition", embeddedOnly: true, action: func(table string) types.TransactWriteItem {
		return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": s("fail")},
			ConditionExpression: aws.String("attribute_exists(pk")}}
	}},
}

// refusedAsInvalid reports whether err refuses a transaction as invalid:
// a ValidationException, or (as DynamoDB reports some validation errors of
// an action) a TransactionCanceledException whose reason for the action at
// index failed is ValidationError.
func refusedAsInvalid(err error, failed int) bool {
	if apiErrorCode(err) == codeValidation {
		return true
	}
	var tce *types.TransactionCanceledException
	return asError(err, &tce) && len(tce.CancellationReasons) > failed &&
		aws.ToString(tce.CancellationReasons[failed].Code) == "ValidationError"
}

func TestFailedWriteInATransactionUndoesEveryAppliedAction(t *testing.T) {
	e := ForTest(t)
	for _, w := range failingWrites {
		t.Run(w.name, func(t *testing.T) {
			if w.embeddedOnly && !e.Embedded {
				checkRollback(t, embedded(t), w)
				return
			}
			checkRollback(t, e, w)
		})
	}
}

// checkRollback runs on e a transaction of two Puts (one of a new item,
// one replacing an item), an Update, a Delete and a ConditionCheck that
// hold, then the failing write, and checks that the transaction is
// refused and changes no item, and that without the failing write it
// applies.
func checkRollback(t *testing.T, e *Endpoint, w failingWrite) {
	c := e.Client
	table := transactTable(t, e, "rollback")
	for _, pk := range []string{"replaced", "updated", "deleted", "checked", "fail"} {
		putItem(t, c, table, richItem(pk))
	}
	before := items(t, c, table)
	key := func(pk string) map[string]types.AttributeValue { return map[string]types.AttributeValue{"pk": s(pk)} }
	applied := []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(table), Item: richItem("created"), ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		{Put: &types.Put{TableName: aws.String(table), Item: map[string]types.AttributeValue{"pk": s("replaced"), "v": n("9")},
			ConditionExpression: aws.String("attribute_exists(pk)")}},
		{Update: &types.Update{TableName: aws.String(table), Key: key("updated"),
			UpdateExpression:          aws.String("SET v = v + :one, #m.k = :x REMOVE str ADD ss :ss"),
			ExpressionAttributeNames:  map[string]string{"#m": "map"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": n("1"), ":x": s("new"), ":ss": &types.AttributeValueMemberSS{Value: []string{"z"}}}}},
		{Delete: &types.Delete{TableName: aws.String(table), Key: key("deleted"), ConditionExpression: aws.String("attribute_exists(pk)")}},
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String(table), Key: key("checked"), ConditionExpression: aws.String("v = :one"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": n("1")}}},
	}
	err := transact(c, "", append(append([]types.TransactWriteItem(nil), applied...), w.action(table))...)
	if !refusedAsInvalid(err, len(applied)) {
		t.Fatalf("err = %v, want the transaction refused as invalid", err)
	}
	if after := items(t, c, table); !reflect.DeepEqual(after, before) {
		t.Errorf("items after the refused transaction:\n%v\nwant as before:\n%v", after, before)
	}
	if err := transact(c, "", applied...); err != nil {
		t.Fatalf("the same actions without the failing write: %v", err)
	}
	after := items(t, c, table)
	if _, ok := after["created"]; !ok {
		t.Error("the Put did not apply")
	}
	if _, ok := after["deleted"]; ok {
		t.Error("the Delete did not apply")
	}
	if got := itemV(after["replaced"]); got != "9" || len(after["replaced"]) != 2 {
		t.Errorf("replaced = %v, want the Put's item", after["replaced"])
	}
	if got := itemV(after["updated"]); got != "2" {
		t.Errorf("updated v = %q, want 2", got)
	}
	if !reflect.DeepEqual(after["checked"], before["checked"]) {
		t.Errorf("the item of a ConditionCheck that held changed: %v, want %v", after["checked"], before["checked"])
	}
}

func TestCancellationReasonsNameTheFailedActionOfEveryKindAtEveryPosition(t *testing.T) {
	e := ForTest(t)
	c := e.Client
	table := transactTable(t, e, "reasons")
	putItem(t, c, table, richItem("stored"))
	putItem(t, c, table, richItem("other"))
	before := items(t, c, table)
	// A passing action of each kind on its own item, then one that fails.
	key := func(pk string) map[string]types.AttributeValue { return map[string]types.AttributeValue{"pk": s(pk)} }
	passing := []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(table), Item: map[string]types.AttributeValue{"pk": s("new")}, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		{Update: &types.Update{TableName: aws.String(table), Key: key("other"), UpdateExpression: aws.String("SET v = :v"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": n("7")}}},
	}
	failing := func(kind, pk string, cond *string, rv types.ReturnValuesOnConditionCheckFailure) types.TransactWriteItem {
		switch kind {
		case "Put":
			return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(table), Item: map[string]types.AttributeValue{"pk": s(pk)}, ConditionExpression: cond, ReturnValuesOnConditionCheckFailure: rv}}
		case "Update":
			return types.TransactWriteItem{Update: &types.Update{TableName: aws.String(table), Key: key(pk), UpdateExpression: aws.String("SET v = :v"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":v": n("9")}, ConditionExpression: cond, ReturnValuesOnConditionCheckFailure: rv}}
		case "Delete":
			return types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(table), Key: key(pk), ConditionExpression: cond, ReturnValuesOnConditionCheckFailure: rv}}
		}
		return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String(table), Key: key(pk), ConditionExpression: cond, ReturnValuesOnConditionCheckFailure: rv}}
	}
	for _, kind := range []string{"Put", "Update", "Delete", "ConditionCheck"} {
		for _, tc := range []struct {
			name     string
			pk       string
			cond     *string
			rv       types.ReturnValuesOnConditionCheckFailure
			wantItem bool
		}{
			{"stored item with ALL_OLD", "stored", notExists, allOld, true},
			{"stored item without ALL_OLD", "stored", notExists, types.ReturnValuesOnConditionCheckFailureNone, false},
			{"absent item with ALL_OLD", "absent", exists, allOld, false},
		} {
			for pos := 0; pos <= len(passing); pos++ {
				t.Run(fmt.Sprintf("%s/%s/position %d", kind, tc.name, pos), func(t *testing.T) {
					actions := append([]types.TransactWriteItem(nil), passing[:pos]...)
					actions = append(actions, failing(kind, tc.pk, tc.cond, tc.rv))
					actions = append(actions, passing[pos:]...)
					reasons := cancellationReasons(t, transact(c, "", actions...))
					if len(reasons) != len(actions) {
						t.Fatalf("%d reasons for %d actions", len(reasons), len(actions))
					}
					for i, r := range reasons {
						want := "None"
						if i == pos {
							want = reasonConditionalCheck
						}
						if got := aws.ToString(r.Code); got != want {
							t.Errorf("reason %d = %s, want %s", i, got, want)
						}
						if i != pos && len(r.Item) > 0 {
							t.Errorf("reason %d (None) has an Item", i)
						}
					}
					item := reasons[pos].Item
					switch {
					case tc.wantItem && !reflect.DeepEqual(item, before["stored"]):
						t.Errorf("Item = %v, want the stored item %v", item, before["stored"])
					case !tc.wantItem && len(item) > 0:
						t.Errorf("Item = %v, want none", item)
					}
					if after := items(t, c, table); !reflect.DeepEqual(after, before) {
						t.Errorf("items after the cancelled transaction:\n%v\nwant as before:\n%v", after, before)
					}
				})
			}
		}
	}
}

// randomTransactions returns a generator of TransactWriteItems bodies over
// two tables (one with a sort key) and a missing one, with few keys (some
// that minidyn's item identity confuses), conditions that hold or not,
// updates that fail, duplicate items and malformed actions. It writes no
// empty list or map: minidyn's own rollback turns those into values
// without type in every item of the table, which the front's does not.
func randomTransactions(seed uint64) func() string {
	r := rand.New(rand.NewPCG(seed, 0))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	key := func(table string) map[string]any {
		k := map[string]any{"pk": map[string]string{"S": pick("a", "b", "c", "x.y", "x")}}
		if table == "hr" {
			k["sk"] = map[string]string{"S": pick("1", "y.1", "2")}
		}
		if r.IntN(30) == 0 {
			k["pk"] = map[string]string{"N": "1"} // the wrong type
		}
		return k
	}
	values := func(a map[string]any, exprs ...string) {
		all := map[string]any{":v": map[string]string{"N": pick("1", "2", "3")}, ":one": map[string]string{"N": "1"},
			":zero": map[string]string{"N": "0"}, ":list": map[string]any{"L": []any{map[string]string{"N": "1"}}}, ":str": map[string]string{"S": "s"}}
		vals := map[string]any{}
		for name, v := range all {
			for _, e := range exprs {
				if strings.Contains(e, name) || r.IntN(60) == 0 {
					vals[name] = v
				}
			}
		}
		if len(vals) > 0 {
			a["ExpressionAttributeValues"] = vals
		}
	}
	return func() string {
		var list []any
		for range r.IntN(5) {
			table := pick("h", "hr")
			if r.IntN(25) == 0 {
				table = "missing"
			}
			a := map[string]any{"TableName": table}
			cond := pick("", "", "attribute_exists(pk)", "attribute_not_exists(pk)", "v = :v", "v < :v", "size(l) = :one", "attribute_exists(l)", "attribute_exists(pk) AND AND")
			if cond != "" {
				a["ConditionExpression"] = cond
			}
			if r.IntN(2) == 0 {
				a["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
			}
			kind := pick("Put", "Update", "Delete", "ConditionCheck")
			update := ""
			switch kind {
			case "Put":
				item := key(table)
				item["v"] = map[string]string{"N": pick("1", "2", "3")}
				switch r.IntN(4) {
				case 0:
					item["l"] = map[string]any{"L": []any{map[string]string{"S": "e"}}}
				case 1:
					item["s"] = map[string]string{"S": "text"}
				case 2:
					item["m"] = map[string]any{"M": map[string]any{"n": map[string]string{"N": "5"}, "b": map[string]string{"B": "AAE="}}}
				}
				a["Item"] = item
			case "ConditionCheck":
				a["Key"] = key(table)
				if cond == "" {
					a["ConditionExpression"] = "attribute_exists(pk)"
					cond = "attribute_exists(pk)"
				}
			default:
				a["Key"] = key(table)
			}
			if kind == "Update" {
				update = pick("SET v = :v", "ADD v :one", "SET s = s + :one", "REMOVE s", "SET l = :list", "SET s = :str, v = v + :one")
				a["UpdateExpression"] = update
			}
			values(a, cond, update)
			action := map[string]any{kind: a}
			if r.IntN(40) == 0 {
				action["Delete"] = map[string]any{"TableName": "h", "Key": key("h")} // two kinds in one action
			}
			list = append(list, action)
		}
		body, err := json.Marshal(map[string]any{"TransactItems": list})
		if err != nil {
			panic(err)
		}
		return string(body)
	}
}

// createPathTables creates, on each handler, the tables of the tests that
// compare two paths of the front: "h" keyed by pk, "hr" by pk and sk.
func createPathTables(t *testing.T, handlers ...http.Handler) {
	t.Helper()
	for _, h := range handlers {
		mustServe(t, h, "CreateTable", `{"TableName":"h","BillingMode":"PAY_PER_REQUEST",
			"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}]}`)
		mustServe(t, h, "CreateTable", `{"TableName":"hr","BillingMode":"PAY_PER_REQUEST",
			"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"},{"AttributeName":"sk","AttributeType":"S"}],
			"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"sk","KeyType":"RANGE"}]}`)
	}
}

// comparePaths sends 2000 requests of operation op from next to the
// handlers fast and slow, which must answer alike (status, Content-Type and
// decoded body) and hold alike tables "h" and "hr" after each. It returns
// how many answers fell in each class that classify names.
func comparePaths(t *testing.T, fast, slow http.Handler, op string, next func() string, classify func(code int, body []byte) string) map[string]int {
	t.Helper()
	decode := func(body []byte) any {
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatalf("decoding %q: %v", body, err)
		}
		return v
	}
	outcomes := map[string]int{}
	for i := range 2000 {
		body := next()
		got, want := serveDirect(fast, op, body), serveDirect(slow, op, body)
		if got.Code != want.Code || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") ||
			!reflect.DeepEqual(decode(got.Body.Bytes()), decode(want.Body.Bytes())) {
			t.Fatalf("request %d %s:\ngot  %d %s\nwant %d %s", i, body, got.Code, got.Body, want.Code, want.Body)
		}
		outcomes[classify(want.Code, want.Body.Bytes())]++
		for _, table := range []string{"h", "hr"} {
			scan := `{"TableName":"` + table + `","ConsistentRead":true}`
			if got, want := decode(serveDirect(fast, "Scan", scan).Body.Bytes()), decode(serveDirect(slow, "Scan", scan).Body.Bytes()); !reflect.DeepEqual(got, want) {
				t.Fatalf("after request %d %s: table %s holds\n%v\nwant\n%v", i, body, table, got, want)
			}
		}
	}
	return outcomes
}

func TestTransactionsAnswerAndStoreAsMinidynsOwn(t *testing.T) {
	fast, slow := NewHandler(), NewHandler(func(o *Options) { o.DisableItemTransactions = true })
	createPathTables(t, fast, slow)
	outcomes := comparePaths(t, fast, slow, "TransactWriteItems", randomTransactions(1), func(code int, body []byte) string {
		var e struct {
			Type string `json:"__type"`
		}
		_ = json.Unmarshal(body, &e)
		return fmt.Sprintf("%d %s", code, e.Type)
	})
	t.Logf("outcomes: %v", outcomes)
	for _, o := range []string{"200 ", "400 TransactionCanceledException", "400 ValidationException", "400 ResourceNotFoundException"} {
		if outcomes[o] < 50 {
			t.Errorf("only %d requests answered %q: the generator does not cover it", outcomes[o], o)
		}
	}
}

func TestCancelledTransactionLeavesTheOtherItemsOfItsTableUntouched(t *testing.T) {
	e := ForTest(t)
	c := e.Client
	ctx := context.Background()
	table := transactTable(t, e, "untouched")
	putItem(t, c, table, map[string]types.AttributeValue{"pk": s("other"), "v": n("1"),
		"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{}},
		"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}})
	putItem(t, c, table, storedItemA)
	reasons := cancellationReasons(t, transact(c, "",
		types.TransactWriteItem{Put: &types.Put{TableName: aws.String(table), Item: map[string]types.AttributeValue{"pk": s("new")}}},
		types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String(table), Key: keyA, ConditionExpression: notExists}}))
	if got := aws.ToString(reasons[1].Code); got != reasonConditionalCheck {
		t.Fatalf("reason = %s, want %s", got, reasonConditionalCheck)
	}
	// An item with empty list and map values that the transaction did not
	// address can still be updated: its values kept their types.
	if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": s("other")},
		UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: setVValues}); err != nil {
		t.Errorf("UpdateItem of an item the cancelled transaction did not address: %v", err)
	}
	if got := getNumber(t, c, table, "other", "v"); got != "99" {
		t.Errorf("v = %q, want 99", got)
	}
}

// BenchmarkFront measures the front answering in process (no HTTP): a
// conditional PutItem, and a TransactWriteItems of two conditional Puts
// (the shape of a guarded commit), against tables of 1,000 items.
func BenchmarkFront(b *testing.B) {
	h := NewHandler()
	for _, table := range []string{"keys", "payments"} {
		if rec := serveDirect(h, "CreateTable", `{"TableName":"`+table+`","BillingMode":"PAY_PER_REQUEST",
			"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}]}`); rec.Code != http.StatusOK {
			b.Fatal(rec.Body)
		}
	}
	for i := range 1_000 {
		serveDirect(h, "PutItem", fmt.Sprintf(`{"TableName":"payments","Item":{"pk":{"S":"old-%d"},"amount":{"N":"%d"}}}`, i, i))
	}
	n := 0
	for _, bc := range []struct{ name, op, body string }{
		{"PutItem", "PutItem", `{"TableName":"payments","Item":{"pk":{"S":"put-%d"},"amount":{"N":"1250"}},"ConditionExpression":"attribute_not_exists(pk)"}`},
		{"TransactWriteItems", "TransactWriteItems", `{"TransactItems":[
			{"Put":{"TableName":"keys","Item":{"pk":{"S":"k-%d"},"state":{"S":"completed"}},"ConditionExpression":"attribute_not_exists(pk)"}},
			{"Put":{"TableName":"payments","Item":{"pk":{"S":"p-%[1]d"},"amount":{"N":"1250"}},"ConditionExpression":"attribute_not_exists(pk)"}}]}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				n++
				if rec := serveDirect(h, bc.op, fmt.Sprintf(bc.body, n)); rec.Code != http.StatusOK {
					b.Fatal(rec.Body)
				}
			}
		})
	}
}
