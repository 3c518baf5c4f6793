package localstack

import (
	"net/http"
	"strings"
	"testing"
)

// TestMalformedRequestsGetAnAnswerAndLeaveTheEmulatorServing sends every
// operation the front answers bodies with members missing, null or of the
// wrong shape (the mistakes of hand-written clients and of code under
// test), on a table that exists, and requires an answer for each, never a
// panic, and the emulator still serving afterwards.
func TestMalformedRequestsGetAnAnswerAndLeaveTheEmulatorServing(t *testing.T) {
	ops := []string{"PutItem", "UpdateItem", "DeleteItem", "GetItem", "Query", "Scan", "TransactWriteItems",
		"TransactGetItems", "BatchWriteItem", "BatchGetItem", "CreateTable", "DescribeTable", "UpdateTable",
		"DeleteTable", "UpdateTimeToLive", "DescribeTimeToLive", "ListTables"}
	bodies := []string{
		`{}`, `null`, `[]`, `"x"`, `{"TableName":null}`, `{"TableName":""}`, `{"TableName":"t"}`, `{"TableName":"missing"}`,
		`{"ReturnValues":"ALL_OLD","Item":{"pk":{"S":"a"}}}`,
		`{"ReturnValuesOnConditionCheckFailure":"ALL_OLD","Item":{"pk":{"S":"a"}}}`,
		`{"ReturnConsumedCapacity":"INDEXES","Item":{"pk":{"S":"a"}}}`,
		`{"ReturnConsumedCapacity":"TOTAL"}`,
		`{"TableName":"t","ReturnValues":"ALL_OLD","Item":{"pk":null}}`,
		`{"TableName":"t","ReturnValuesOnConditionCheckFailure":"ALL_OLD","Item":{}}`,
		`{"TableName":"t","ReturnConsumedCapacity":"INDEXES","Item":{"pk":{"S":"a"}},"Key":{"pk":{"S":"a"}}}`,
		`{"TableName":"t","IndexName":"by-v"}`, `{"IndexName":"by-v","KeyConditionExpression":"v = :v"}`,
		`{"TableName":"t","IndexName":"by-v","KeyConditionExpression":"v = :v","ExpressionAttributeValues":{":v":{"S":"x"}}}`,
		`{"TableName":"t","IndexName":"by-v","KeyConditionExpression":"v = :v","ExpressionAttributeValues":{":v":{"S":"x"}},"ReturnConsumedCapacity":"TOTAL"}`,
		`{"TableName":"t","Segment":0,"TotalSegments":2,"ReturnConsumedCapacity":"TOTAL"}`, `{"Segment":0,"TotalSegments":2}`,
		`{"TableName":"t","ExclusiveStartKey":{"pk":{"S":"zz"}}}`, `{"ExclusiveStartKey":{"pk":{"S":"zz"}}}`,
		`{"TransactItems":null}`, `{"TransactItems":[null]}`, `{"TransactItems":[{}]}`,
		`{"TransactItems":[{"Put":{}}]}`, `{"TransactItems":[{"Put":{"Item":{"pk":{"S":"a"}}}}]}`,
		`{"TransactItems":[{"Put":{"TableName":"t","Item":{"pk":{"S":"a"}},"ConditionExpression":"attribute_exists(pk)","ReturnValuesOnConditionCheckFailure":"ALL_OLD"}}],"ClientRequestToken":"tok","ReturnConsumedCapacity":"INDEXES"}`,
		`{"TransactItems":[{"Update":{"Key":null}}]}`, `{"TransactItems":[{"Delete":{"TableName":"t"}}]}`, `{"TransactItems":[{"ConditionCheck":{"TableName":"t","Key":{}}}]}`,
		`{"ClientRequestToken":"tok","TransactItems":[{"Put":{"TableName":"t","Item":{"pk":{"S":"b"}}}}]}`,
		`{"RequestItems":null}`, `{"RequestItems":{"t":null}}`, `{"RequestItems":{"t":[{}]}}`, `{"RequestItems":{"t":[{"PutRequest":{}}]}}`,
		`{"TimeToLiveSpecification":null}`, `{"TableName":"t","TimeToLiveSpecification":{}}`,
		`{"TableName":"t","GlobalSecondaryIndexUpdates":[{}]}`, `{"TableName":"t","GlobalSecondaryIndexUpdates":[{"Create":{}}]}`,
		`{"Limit":0}`, `{"ExclusiveStartTableName":null,"Limit":-1}`,
		`{"TableName":"t","Key":{"pk":null}}`, `{"TableName":"t","Key":{"pk":null},"UpdateExpression":"SET v = :v","ExpressionAttributeValues":{":v":null}}`,
		`{"TableName":"t","Item":{"pk":{"S":"a"},"m":{"M":{"x":null}}}}`, `{"TableName":"t","Item":{"pk":{"S":"a"},"l":{"L":[null]}}}`,
		`{"TableName":"t","ExclusiveStartKey":{"pk":null}}`, `{"TableName":"t","ConditionExpression":"v = :v","Item":{"pk":{"S":"a"}},"ExpressionAttributeValues":{":v":null}}`,
		`{"TransactItems":[{"Put":{"TableName":"t","Item":{"pk":null}}}]}`, `{"TransactItems":[{"Get":{"TableName":"t","Key":{"pk":null}}}]}`,
		`{"RequestItems":{"t":[{"PutRequest":{"Item":{"pk":null}}}]}}`, `{"RequestItems":{"t":{"Keys":[{"pk":null}]}}}`, `{"RequestItems":{"t":{"Keys":[null]}}}`,
	}
	f := newFront(newEngine(), resolveOptions(nil))
	create := `{"TableName":"t","BillingMode":"PAY_PER_REQUEST","AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"},{"AttributeName":"v","AttributeType":"S"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],"GlobalSecondaryIndexes":[{"IndexName":"by-v","KeySchema":[{"AttributeName":"v","KeyType":"HASH"}],"Projection":{"ProjectionType":"ALL"}}]}`
	for _, op := range ops {
		for _, body := range bodies {
			if rec := serveDirect(f, "DescribeTable", `{"TableName":"t"}`); rec.Code != http.StatusOK {
				mustServe(t, f, "CreateTable", create)
			}
			mustServe(t, f, "PutItem", `{"TableName":"t","Item":{"pk":{"S":"a"},"v":{"S":"x"}}}`)
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("%s %s: panic: %v", op, body, p)
						f.mu.TryLock() // release it below, whoever holds it
						f.mu.Unlock()
					}
				}()
				rec := serveDirect(f, op, body)
				if rec.Code == 0 || (rec.Code >= 500 && strings.Contains(rec.Body.String(), "failed serving")) {
					t.Errorf("%s %s: status %d: %s", op, body, rec.Code, rec.Body)
				}
			}()
			if !f.mu.TryLock() {
				t.Fatalf("%s %s: the emulator's lock is still held", op, body)
			}
			f.mu.Unlock()
		}
	}
	mustServe(t, f, "ListTables", `{}`)
	// The word null inside a string is no null value.
	mustServe(t, f, "PutItem", `{"TableName":"t","Item":{"pk":{"S":"null"},"v":{"S":"null"}}}`)
}

// TestPanicInTheEngineIsAnInternalServerErrorAndReleasesTheLock serves
// requests with an engine that panics on every call and requires an
// InternalServerError naming the failure for each, not a panic, and the
// front's lock free after each.
func TestPanicInTheEngineIsAnInternalServerErrorAndReleasesTheLock(t *testing.T) {
	f := newFront(&engine{}, resolveOptions(nil)) // no minidyn client: every engine call panics
	for i := range 3 {
		rec := serveDirect(f, "DescribeTable", `{"TableName":"t"}`)
		if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "failed serving DescribeTable") {
			t.Errorf("request %d: status %d: %s", i, rec.Code, rec.Body)
		}
		if !f.mu.TryLock() {
			t.Fatalf("request %d: the lock is still held", i)
		}
		f.mu.Unlock()
	}
}

// FuzzFrontServesAnyBody sends a body to one of the operations the front
// answers and requires an answer that is not a panic of the front's own
// code (recovered as an InternalServerError that says so). Panics of
// minidyn's code on malformed expressions are answered as minidyn's
// failure (TestPanicInMinidynIsAnsweredAsMinidyns).
func FuzzFrontServesAnyBody(f *testing.F) {
	ops := []string{"PutItem", "UpdateItem", "DeleteItem", "GetItem", "Query", "Scan", "TransactWriteItems",
		"BatchWriteItem", "BatchGetItem", "UpdateTimeToLive", "DescribeTimeToLive", "ListTables"}
	for i, body := range []string{
		`{"TableName":"t","Item":{"pk":{"S":"a"}},"ReturnValues":"ALL_OLD"}`,
		`{"TableName":"t","Key":{"pk":{"S":"a"}},"UpdateExpression":"SET v = :v","ExpressionAttributeValues":{":v":{"S":"x"}}}`,
		`{"TableName":"t","Key":{"pk":{"S":"a"}},"ReturnValuesOnConditionCheckFailure":"ALL_OLD","ConditionExpression":"attribute_not_exists(pk)"}`,
		`{"TableName":"t","Key":{"pk":{"S":"a"}}}`,
		`{"TableName":"t","IndexName":"by-v","KeyConditionExpression":"v = :v","ExpressionAttributeValues":{":v":{"S":"x"}},"ReturnConsumedCapacity":"INDEXES"}`,
		`{"TableName":"t","Segment":1,"TotalSegments":3,"ExclusiveStartKey":{"pk":{"S":"b"}},"Select":"COUNT"}`,
		`{"ClientRequestToken":"x","TransactItems":[{"Put":{"TableName":"t","Item":{"pk":{"S":"a"}}}},{"ConditionCheck":{"TableName":"t","Key":{"pk":{"S":"b"}},"ConditionExpression":"attribute_exists(pk)"}}]}`,
		`{"RequestItems":{"t":[{"PutRequest":{"Item":{"pk":{"S":"a"}}}},{"DeleteRequest":{"Key":{"pk":{"S":"b"}}}}]}}`,
		`{"RequestItems":{"t":{"Keys":[{"pk":{"S":"a"}}]}}}`,
		`{"TableName":"t","TimeToLiveSpecification":{"AttributeName":"exp","Enabled":true}}`,
		`{"TableName":"t"}`,
		`{"Limit":1,"ExclusiveStartTableName":"a"}`,
	} {
		f.Add(uint8(i), []byte(body))
	}
	fr := newFront(newEngine(), resolveOptions(nil))
	create := `{"TableName":"t","BillingMode":"PAY_PER_REQUEST","AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"},{"AttributeName":"v","AttributeType":"S"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],"GlobalSecondaryIndexes":[{"IndexName":"by-v","KeySchema":[{"AttributeName":"v","KeyType":"HASH"}],"Projection":{"ProjectionType":"ALL"}}]}`
	if rec := serveDirect(fr, "CreateTable", create); rec.Code != http.StatusOK {
		f.Fatal(rec.Body)
	}
	f.Fuzz(func(t *testing.T, op uint8, body []byte) {
		name := ops[int(op)%len(ops)]
		rec := serveDirect(fr, name, string(body))
		if rec.Code == http.StatusInternalServerError && strings.Contains(rec.Body.String(), "front failed serving") {
			t.Fatalf("%s %q: %s", name, body, rec.Body)
		}
	})
}

// TestPanicInMinidynIsAnsweredAsMinidyns sends a condition minidyn's
// interpreter panics on (a function without its argument) and requires
// an InternalServerError that names minidyn, and the emulator serving
// afterwards.
func TestPanicInMinidynIsAnsweredAsMinidyns(t *testing.T) {
	f := newFront(newEngine(), resolveOptions(nil))
	mustServe(t, f, "CreateTable", `{"TableName":"t","BillingMode":"PAY_PER_REQUEST","AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}]}`)
	rec := serveDirect(f, "DeleteItem", `{"TableName":"t","Key":{"pk":{"S":"a"}},"ConditionExpression":"attribute_exists()"}`)
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "minidyn, the embedded emulator's engine, failed serving DeleteItem") {
		t.Errorf("status %d: %s", rec.Code, rec.Body)
	}
	mustServe(t, f, "PutItem", `{"TableName":"t","Item":{"pk":{"S":"a"}}}`)
}

// TestPlaceholderNamingAPlaceholderIsRefused sends every operation that
// takes ExpressionAttributeNames a name that is itself a placeholder of
// the map ({"#a": "#a"}, and a two-step cycle through a document path).
// minidyn resolves such names again without end: the stack overflow ended
// the test process. The front answers a ValidationException naming the
// entry, and serves on.
func TestPlaceholderNamingAPlaceholderIsRefused(t *testing.T) {
	f := NewHandler()
	mustServe(t, f, "CreateTable", `{"TableName":"t","BillingMode":"PAY_PER_REQUEST","AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}]}`)
	mustServe(t, f, "PutItem", `{"TableName":"t","Item":{"pk":{"S":"a"},"v":{"S":"x"}}}`)
	for _, names := range []string{`{"#a":"#a"}`, `{"#b":"x","#a":"m.#c","#c":"#a"}`} {
		cond := `"ConditionExpression":"#a = :v","ExpressionAttributeNames":` + names + `,"ExpressionAttributeValues":{":v":{"S":"x"}}`
		for _, r := range []struct{ op, body string }{
			{"PutItem", `{"TableName":"t","Item":{"pk":{"S":"a"}},` + cond + `}`},
			{"DeleteItem", `{"TableName":"t","Key":{"pk":{"S":"a"}},` + cond + `}`},
			{"UpdateItem", `{"TableName":"t","Key":{"pk":{"S":"a"}},"UpdateExpression":"SET #a = :v","ExpressionAttributeNames":` + names + `,"ExpressionAttributeValues":{":v":{"S":"x"}}}`},
			{"GetItem", `{"TableName":"t","Key":{"pk":{"S":"a"}},"ProjectionExpression":"#a","ExpressionAttributeNames":` + names + `}`},
			{"Scan", `{"TableName":"t","FilterExpression":"#a = :v","ExpressionAttributeNames":` + names + `,"ExpressionAttributeValues":{":v":{"S":"x"}}}`},
			{"Query", `{"TableName":"t","KeyConditionExpression":"pk = :v","FilterExpression":"#a = :v","ExpressionAttributeNames":` + names + `,"ExpressionAttributeValues":{":v":{"S":"x"}}}`},
			{"BatchGetItem", `{"RequestItems":{"t":{"Keys":[{"pk":{"S":"a"}}],"ProjectionExpression":"#a","ExpressionAttributeNames":` + names + `}}}`},
			{"TransactGetItems", `{"TransactItems":[{"Get":{"TableName":"t","Key":{"pk":{"S":"a"}},"ProjectionExpression":"#a","ExpressionAttributeNames":` + names + `}}]}`},
			{"TransactWriteItems", `{"TransactItems":[{"Put":{"TableName":"t","Item":{"pk":{"S":"b"}},` + cond + `}}]}`},
			{"TransactWriteItems", `{"TransactItems":[{"Put":{"TableName":"t","Item":{"pk":{"S":"c"}}}},{"ConditionCheck":{"TableName":"t","Key":{"pk":{"S":"a"}},` + cond + `}}]}`},
		} {
			rec := serveDirect(f, r.op, r.body)
			if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "ValidationException") ||
				!strings.Contains(rec.Body.String(), "ExpressionAttributeNames maps #a to") {
				t.Errorf("%s with names %s: %d %s; want a ValidationException naming #a", r.op, names, rec.Code, rec.Body)
			}
		}
	}
	mustServe(t, f, "PutItem", `{"TableName":"t","Item":{"pk":{"S":"a"}},"ConditionExpression":"#a = :v","ExpressionAttributeNames":{"#a":"v"},"ExpressionAttributeValues":{":v":{"S":"x"}}}`)
}

// An expression that uses a value placeholder its ExpressionAttributeValues
// does not define is refused with DynamoDB's ValidationException, whatever
// the request (minidyn read the value as absent: a claim whose second
// branch used an undefined :in_progress succeeded on a new item), and
// before anything is written.
func TestUndefinedValuePlaceholderIsRefused(t *testing.T) {
	f := NewHandler()
	mustServe(t, f, "CreateTable", `{"TableName":"t","BillingMode":"PAY_PER_REQUEST","AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}]}`)
	cond := `"ConditionExpression":"attribute_not_exists(#pk) OR #s = :in_progress","ExpressionAttributeNames":{"#pk":"pk","#s":"state"}`
	for _, r := range []struct{ op, body, field string }{
		{"PutItem", `{"TableName":"t","Item":{"pk":{"S":"a"}},` + cond + `}`, "ConditionExpression"},
		{"PutItem", `{"TableName":"t","Item":{"pk":{"S":"a"}},` + cond + `,"ExpressionAttributeValues":{":other":{"S":"x"}}}`, "ConditionExpression"},
		{"DeleteItem", `{"TableName":"t","Key":{"pk":{"S":"a"}},` + cond + `}`, "ConditionExpression"},
		{"UpdateItem", `{"TableName":"t","Key":{"pk":{"S":"a"}},"UpdateExpression":"SET v = :v"}`, "UpdateExpression"},
		{"Scan", `{"TableName":"t","FilterExpression":"v = :v"}`, "FilterExpression"},
		{"Query", `{"TableName":"t","KeyConditionExpression":"pk = :pk"}`, "KeyConditionExpression"},
		{"TransactWriteItems", `{"TransactItems":[{"Put":{"TableName":"t","Item":{"pk":{"S":"b"}}}},{"Put":{"TableName":"t","Item":{"pk":{"S":"c"}},` + cond + `}}]}`, "ConditionExpression"},
		{"TransactWriteItems", `{"TransactItems":[{"Update":{"TableName":"t","Key":{"pk":{"S":"d"}},"UpdateExpression":"SET v = :v"}}]}`, "UpdateExpression"},
	} {
		rec := serveDirect(f, r.op, r.body)
		want := "Invalid " + r.field + ": An expression attribute value used in expression is not defined; attribute value: :"
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "ValidationException") || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("%s %s: %d %s; want a ValidationException %q", r.op, r.body, rec.Code, rec.Body, want)
		}
	}
	rec := serveDirect(f, "Scan", `{"TableName":"t"}`)
	if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), `"pk"`) {
		t.Errorf("a refused request wrote an item: %s", rec.Body)
	}
	mustServe(t, f, "PutItem", `{"TableName":"t","Item":{"pk":{"S":"a"}},`+cond+`,"ExpressionAttributeValues":{":in_progress":{"S":"in_progress"}}}`)
}
