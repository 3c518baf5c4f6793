package localstack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/truora/minidyn/server"
)

// recordingClient keeps the body of every request an SDK client sends and
// answers none of them.
type recordingClient struct{ bodies [][]byte }

var errRecorded = errors.New("recorded")

func (c *recordingClient) Do(r *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	c.bodies = append(c.bodies, b)
	return nil, errRecorded
}

// sdkBodies returns the bodies the SDK writes for a PutItem with every
// kind of attribute value and the claim's condition, and for a
// TransactWriteItems with every kind of action.
func sdkBodies(t testing.TB) (put, transaction []byte) {
	rec := &recordingClient{}
	c := dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String("http://127.0.0.1:1"), HTTPClient: rec,
		Credentials:      credentials.NewStaticCredentialsProvider("id", "secret", ""),
		RetryMaxAttempts: 1,
	})
	item := map[string]types.AttributeValue{
		"pk":   &types.AttributeValueMemberS{Value: "0:key-1"},
		"n":    &types.AttributeValueMemberN{Value: "1250"},
		"b":    &types.AttributeValueMemberB{Value: []byte("body bytes \x00\xff")},
		"e":    &types.AttributeValueMemberB{Value: []byte{}},
		"ok":   &types.AttributeValueMemberBOOL{Value: true},
		"nul":  &types.AttributeValueMemberNULL{Value: true},
		"ss":   &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
		"ns":   &types.AttributeValueMemberNS{Value: []string{"1", "2.5"}},
		"bs":   &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}},
		"l":    &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "x"}, &types.AttributeValueMemberL{Value: []types.AttributeValue{}}}},
		"m":    &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"Content-Type": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "application/json"}}}, "empty": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}}},
		"path": &types.AttributeValueMemberS{Value: "/payments?a=1&b=<2>"},
	}
	cond := aws.String("attribute_not_exists(#pk) OR (#state = :in_progress AND #lock_exp < :now_ms) OR (#exp < :now_s AND NOT (#state = :in_progress))")
	names := map[string]string{"#pk": "pk", "#state": "state", "#lock_exp": "lock_exp", "#exp": "exp"}
	values := map[string]types.AttributeValue{":in_progress": &types.AttributeValueMemberS{Value: "in_progress"}, ":now_ms": &types.AttributeValueMemberN{Value: "1796126948075"}, ":now_s": &types.AttributeValueMemberN{Value: "1796126948"}}
	ctx := context.Background()
	_, _ = c.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String("keys"), Item: item, ConditionExpression: cond,
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityIndexes,
		ReturnValues:                        types.ReturnValueAllOld,
	})
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "0:key-2"}}
	_, _ = c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		ClientRequestToken:     aws.String("token-1"),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String("keys"), Item: item, ConditionExpression: cond, ExpressionAttributeNames: names, ExpressionAttributeValues: values, ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
			{Update: &types.Update{TableName: aws.String("keys"), Key: key, UpdateExpression: aws.String("SET #s = :v"), ExpressionAttributeNames: map[string]string{"#s": "state"}, ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberS{Value: "done"}}}},
			{Delete: &types.Delete{TableName: aws.String("payments"), Key: key, ConditionExpression: aws.String("attribute_exists(pk)")}},
			{ConditionCheck: &types.ConditionCheck{TableName: aws.String("other"), Key: key, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		},
	})
	if len(rec.bodies) != 2 {
		t.Fatalf("recorded %d bodies, want 2", len(rec.bodies))
	}
	return rec.bodies[0], rec.bodies[1]
}

// TestWireDecoderTakesTheSDKsRequestsAsEncodingJSONDoes requires the fast
// decoder to accept the bodies the SDK writes, every kind of attribute
// value and of transaction action included (a decoder that declined them
// would leave the hot paths to encoding/json), and to give what
// encoding/json gives for them.
func TestWireDecoderTakesTheSDKsRequestsAsEncodingJSONDoes(t *testing.T) {
	put, transaction := sdkBodies(t)

	got, ok := fastDecodePut(put)
	if !ok {
		t.Fatalf("the PutItem body was declined: %s", put)
	}
	var want server.PutItemInput
	if err := json.Unmarshal(put, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("PutItem decoded as\n%#v\nencoding/json gives\n%#v", *got, want)
	}

	var gotTx, wantTx itemTransaction
	if !fastDecodeTransaction(transaction, &gotTx) {
		t.Fatalf("the TransactWriteItems body was declined: %s", transaction)
	}
	if err := json.Unmarshal(transaction, &wantTx); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotTx, wantTx) {
		t.Errorf("TransactWriteItems decoded as\n%#v\nencoding/json gives\n%#v", gotTx, wantTx)
	}
}

// TestWireDecoderDeclinesWhatItCannotDecodeExactly lists bodies the fast
// decoder must leave to encoding/json, each one that encoding/json
// decodes differently from a plain reading, or rejects.
func TestWireDecoderDeclinesWhatItCannotDecodeExactly(t *testing.T) {
	for _, body := range []string{
		`{"tablename":"t"}`,                        // encoding/json matches names in any case
		`{"TableName":"a","TableName":"b"}`,        // the last one wins
		`{"Item":{"a":{"S":"1"},"a":{"S":"2"}}}`,   // likewise in a map
		`{"Item":{"a":{"S":"1","S":"2"}}}`,         // and in a value
		`{"TableName":"caf\u00e9"}`,                // escapes
		"{\"TableName\":\"caf\xc3\xa9\"}",          // bytes outside ASCII
		"{\"TableName\":\"\xff\"}",                 // invalid UTF-8, replaced by encoding/json
		`{"TableName":null}`,                       // null
		`{"Item":{"a":{"N":1}}}`,                   // a JSON number
		`{"Item":{"a":{"B":"not base64!"}}}`,       // invalid base64
		`{"Expected":{"a":{"Exists":false}}}`,      // a member it does not decode
		`{"Key":{"a":{"S":"1"}}}`,                  // a member PutItem does not have
		`{"TableName":"t"} {}`,                     // something after the value
		`{"TableName":"t",}`,                       // invalid JSON
		`{"Item":{"a":{"BOOL":tru}}}`,              // likewise
		`{"Item":{"a":{"L":[{"S":"x"},null]}}}`,    // null in a list
		`{"ReturnValues":"ALL_OLD","Unknown":"x"}`, // an unknown member
		`["TableName"]`,                            // not an object
		``,                                         // nothing
		`{"ExpressionAttributeNames":{"#a":"a","#a":"b"}}`,
	} {
		if in, ok := fastDecodePut([]byte(body)); ok {
			t.Errorf("fastDecodePut(%q) = %#v, want it declined", body, in)
		}
	}
	for _, body := range []string{
		`{"TransactItems":[{"Put":{"TableName":"a"},"Put":{"TableName":"b"}}]}`,
		`{"TransactItems":[{"put":{"TableName":"a"}}]}`,
		`{"TransactItems":[{"Put":{"TableName":"a","Key":{}}}]}`,
		`{"TransactItems":[{"Update":{"TableName":"a","Item":{}}}]}`,
		`{"TransactItems":[{"Update":{"AttributeUpdates":{}}}]}`,
		`{"TransactItems":[],"TransactItems":[]}`,
		`{"ReturnItemCollectionMetrics":"SIZE","TransactItems":[]}`,
		`{"TransactItems":null}`,
	} {
		var req itemTransaction
		if fastDecodeTransaction([]byte(body), &req) {
			t.Errorf("fastDecodeTransaction(%q) = %#v, want it declined", body, req)
		}
	}
}

// FuzzWireDecoderAgreesWithEncodingJSON requires, for any body the fast
// decoder accepts, that encoding/json decodes it without error into the
// same request.
func FuzzWireDecoderAgreesWithEncodingJSON(f *testing.F) {
	put, transaction := sdkBodies(f)
	f.Add(put)
	f.Add(transaction)
	f.Add([]byte(`{"Item":{"a":{"M":{"b":{"L":[]},"c":{"SS":[]},"d":{"BS":["AQ=="]}}}},"TableName":"t"}`))
	f.Add([]byte(`{"TransactItems":[{"ConditionCheck":{"Key":{"k":{"B":""}},"TableName":"t","ReturnValues":"NONE"}},{}]}`))
	f.Add([]byte(" {\t\"TableName\" :\n\"t\" , \"Item\":{ } }\r\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		if got, ok := fastDecodePut(body); ok {
			var want server.PutItemInput
			if err := json.Unmarshal(body, &want); err != nil {
				t.Fatalf("fastDecodePut accepted %q, which encoding/json rejects: %v", body, err)
			}
			if !reflect.DeepEqual(*got, want) {
				t.Fatalf("fastDecodePut(%q) =\n%#v\nencoding/json gives\n%#v", body, *got, want)
			}
		}
		var got itemTransaction
		if fastDecodeTransaction(body, &got) {
			var want itemTransaction
			if err := json.Unmarshal(body, &want); err != nil {
				t.Fatalf("fastDecodeTransaction accepted %q, which encoding/json rejects: %v", body, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("fastDecodeTransaction(%q) =\n%#v\nencoding/json gives\n%#v", body, got, want)
			}
		}
	})
}

// BenchmarkWireDecoder compares the fast decoder with encoding/json on the
// SDK's bodies.
func BenchmarkWireDecoder(b *testing.B) {
	put, transaction := sdkBodies(b)
	b.Run("put/fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := fastDecodePut(put); !ok {
				b.Fatal("declined")
			}
		}
	})
	b.Run("put/encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var in server.PutItemInput
			if err := json.NewDecoder(bytes.NewReader(put)).Decode(&in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("transaction/fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var req itemTransaction
			if !fastDecodeTransaction(transaction, &req) {
				b.Fatal("declined")
			}
		}
	})
	b.Run("transaction/encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var req itemTransaction
			if err := json.Unmarshal(transaction, &req); err != nil {
				b.Fatal(err)
			}
		}
	})
}
