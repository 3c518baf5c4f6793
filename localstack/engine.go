package localstack

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/truora/minidyn/core"
	"github.com/truora/minidyn/server"
	mtypes "github.com/truora/minidyn/types"
)

// engine serves minidyn's engine (a server.Client) over the DynamoDB JSON
// protocol exactly as minidyn's own server.Server does: the same operations,
// the same decoding, the same response and error bodies. Owning the client
// lets the front also call the engine directly, with decoded requests, on
// its hot paths (PutItem and the steps of a transaction), instead of
// encoding each step as JSON for minidyn to decode again and decoding
// minidyn's JSON answer.
type engine struct {
	c     *server.Client
	conds conditionCache
	// pending holds, by table, the keys of items that the engine's writes
	// added and that are not yet in the table's sorted key list (see
	// keepingKeyOrder).
	pending map[*core.Table][]string
}

func newEngine() *engine {
	if err := checkMinidynLayout(); err != nil {
		panic(err)
	}
	return &engine{c: server.NewClient()}
}

// putItem is minidyn's PutItem without minidyn's cost of keeping the
// table's key order (see keepingKeyOrder).
func (e *engine) putItem(ctx context.Context, in *server.PutItemInput) (out *server.PutItemOutput, err error) {
	e.keepingKeyOrder(aws.ToString(in.TableName), func() { out, err = e.c.PutItem(ctx, in) })
	return out, err
}

// put applies the PutItem in as putItem does and returns the error
// putItem returns, without putItem's output (minidyn's copy of the new
// item, which the front never answers with). It stores the request's
// item itself in minidyn's table (see typesItem), and evaluates a
// condition without minidyn's interpreter where that gives the
// interpreter's answer (see boundCondition and storedConvertible);
// anything else it leaves to putItem.
func (e *engine) put(ctx context.Context, in *server.PutItemInput) error {
	name := aws.ToString(in.TableName)
	t := e.table(name)
	if t == nil || len(in.Expected) > 0 || in.ConditionalOperator != "" ||
		in.ConditionExpression == nil && (len(in.ExpressionAttributeNames) > 0 || len(in.ExpressionAttributeValues) > 0) {
		_, err := e.putItem(ctx, in)
		return err
	}
	item := typesItem(in.Item)
	var cond *condition
	var values map[string]*mtypes.Item
	if in.ConditionExpression != nil {
		if cond, values = e.boundCondition(in); cond == nil {
			_, err := e.putItem(ctx, in)
			return err
		}
	}
	// minidyn's Table.Put's checks, in its order (its server's checks of
	// the placeholders pass: a bound condition uses exactly the request's).
	for _, m := range []map[string]*mtypes.Item{item, values} {
		if err := mtypes.ValidateItemMap(m); err != nil {
			return &smithy.GenericAPIError{Code: "ValidationException", Message: err.Error()}
		}
	}
	key, err := t.KeySchema.GetKey(t.AttributesDef, item)
	if err != nil {
		return &smithy.GenericAPIError{Code: "ValidationException", Message: err.Error()}
	}
	if cond != nil {
		stored := t.Data[key]
		held, ok := false, storedConvertible(stored)
		if ok {
			held, ok = cond.root.eval(&condEnv{item: stored, names: in.ExpressionAttributeNames, values: values})
		}
		switch {
		case !ok:
			_, err := e.putItem(ctx, in)
			return err
		case !held:
			return &ddbtypes.ConditionalCheckFailedException{Message: aws.String(core.ErrConditionalRequestFailed.Error())}
		}
	}
	if len(t.Indexes) > 0 {
		e.keepingKeyOrder(name, func() { _, err = t.Put(&mtypes.PutItemInput{TableName: in.TableName, Item: item}) })
		return minidynError(err)
	}
	// What minidyn's Table.Put then does for a table without secondary
	// indexes, without copying item again: store it.
	if _, exists := t.Data[key]; !exists {
		e.setAside(t, key)
	}
	t.Data[key] = item
	return nil
}

// minidynError is the error minidyn's server returns for the error err of
// its engine (its mapping of the engine's errors to the SDK's).
func minidynError(err error) error {
	me, ok := errors.AsType[mtypes.Error](err)
	if !ok {
		return err
	}
	switch me.Code() {
	case "ConditionalCheckFailedException":
		return &ddbtypes.ConditionalCheckFailedException{Message: aws.String(me.Message())}
	case "ResourceNotFoundException":
		return &ddbtypes.ResourceNotFoundException{Message: aws.String(me.Message())}
	}
	return &smithy.GenericAPIError{Code: me.Code(), Message: me.Message()}
}

// updateItem is minidyn's UpdateItem without minidyn's cost of keeping
// the table's key order (see keepingKeyOrder).
func (e *engine) updateItem(ctx context.Context, in *server.UpdateItemInput) (out *server.UpdateItemOutput, err error) {
	e.keepingKeyOrder(aws.ToString(in.TableName), func() { out, err = e.c.UpdateItem(ctx, in) })
	return out, err
}

// deleteItem is minidyn's DeleteItem, once the keys set aside are merged
// into their tables' sorted lists (see sortKeys): minidyn removes the
// item's key from its table's list by binary search.
func (e *engine) deleteItem(ctx context.Context, in *server.DeleteItemInput) (*server.DeleteItemOutput, error) {
	e.sortKeys()
	return e.c.DeleteItem(ctx, in)
}

// ServeHTTP implements http.Handler as server.Server does.
func (e *engine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.sortKeys()
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	defer func() {
		if err := r.Body.Close(); err != nil {
			log.Printf("error closing body: %v", err)
		}
	}()
	target := r.Header.Get("X-Amz-Target")
	op := target[strings.LastIndexByte(target, '.')+1:]
	c := e.c
	switch op {
	case "CreateTable":
		serveDecoded(w, r.Body, c.CreateTable)
	case "UpdateTable":
		serveDecoded(w, r.Body, c.UpdateTable)
	case "DeleteTable":
		serveDecoded(w, r.Body, c.DeleteTable)
	case "DescribeTable":
		serveDecoded(w, r.Body, c.DescribeTable)
	case "PutItem":
		serveDecoded(w, r.Body, e.putItem)
	case "DeleteItem":
		serveDecoded(w, r.Body, e.deleteItem)
	case "UpdateItem":
		serveDecoded(w, r.Body, e.updateItem)
	case "GetItem":
		serveDecoded(w, r.Body, c.GetItem)
	case "Query":
		serveDecoded(w, r.Body, c.Query)
	case "Scan":
		serveDecoded(w, r.Body, c.Scan)
	case "BatchWriteItem":
		serveDecoded(w, r.Body, c.BatchWriteItem)
	case "BatchGetItem":
		serveDecoded(w, r.Body, c.BatchGetItem)
	case "TransactWriteItems":
		serveDecoded(w, r.Body, c.TransactWriteItems)
	case "TransactGetItems":
		serveDecoded(w, r.Body, c.TransactGetItems)
	default:
		http.Error(w, "unsupported operation", http.StatusBadRequest)
	}
}

// serveDecoded decodes the request body into In, runs op on it and writes
// op's output or error.
func serveDecoded[In, Out any](w http.ResponseWriter, body io.Reader, op func(context.Context, *In) (Out, error)) {
	var in In
	if err := json.NewDecoder(body).Decode(&in); err != nil {
		writeEngineError(w, err)
		return
	}
	out, err := op(context.Background(), &in)
	if err != nil {
		writeEngineError(w, err)
		return
	}
	w.Header().Set("Content-Type", jsonContentType)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// writeEngineError writes err in the body minidyn's server writes for it:
// a TransactionCanceledException with its reasons, a
// ConditionalCheckFailedException with its Item, any other API error by its
// code and message (status 500 for InternalServerError, 400 otherwise), and
// anything else as an InternalFailure.
func writeEngineError(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", jsonContentType)
	if tce, ok := errors.AsType[*ddbtypes.TransactionCanceledException](err); ok {
		type reason struct {
			Code    string                            `json:"Code"`
			Message string                            `json:"Message,omitempty"`
			Item    map[string]*server.AttributeValue `json:"Item,omitempty"`
		}
		reasons := make([]reason, len(tce.CancellationReasons))
		for i, r := range tce.CancellationReasons {
			reasons[i] = reason{Code: aws.ToString(r.Code), Message: aws.ToString(r.Message)}
			if len(r.Item) > 0 {
				reasons[i].Item = wireItem(r.Item)
			}
		}
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(struct {
			Type                string   `json:"__type"`
			Message             string   `json:"message"`
			CancellationReasons []reason `json:"CancellationReasons"`
		}{codeTransactionCanceled, aws.ToString(tce.Message), reasons})
		return
	}
	if ccf, ok := errors.AsType[*ddbtypes.ConditionalCheckFailedException](err); ok {
		var item map[string]*server.AttributeValue
		if len(ccf.Item) > 0 {
			item = wireItem(ccf.Item)
		}
		writeConditionFailed(w, aws.ToString(ccf.Message), item)
		return
	}
	status, code, msg := http.StatusBadRequest, "InternalFailure", err.Error()
	if api, ok := err.(interface {
		ErrorCode() string
		ErrorMessage() string
	}); ok {
		code, msg = api.ErrorCode(), api.ErrorMessage()
	}
	if code == "InternalServerError" {
		status = http.StatusInternalServerError
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}{code, msg})
}

// engineErrorResponse is err as the engine answers it.
func engineErrorResponse(err error) *response {
	r := newResponse()
	writeEngineError(r, err)
	return r
}

// writeConditionFailed writes a ConditionalCheckFailedException with
// message and, unless it is empty, item as Item.
func writeConditionFailed(w http.ResponseWriter, message string, item map[string]*server.AttributeValue) {
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(struct {
		Type    string                            `json:"__type"`
		Message string                            `json:"message"`
		Item    map[string]*server.AttributeValue `json:"Item,omitempty"`
	}{codeConditionalCheck, message, item})
}

// conditionFailedResponse is the response writeConditionFailed writes.
func conditionFailedResponse(message string, item map[string]*server.AttributeValue) *response {
	r := newResponse()
	r.header.Set("Content-Type", jsonContentType)
	writeConditionFailed(r, message, item)
	return r
}

// wireItem converts an item of the SDK's types to minidyn's wire types.
func wireItem(m map[string]ddbtypes.AttributeValue) map[string]*server.AttributeValue {
	out := make(map[string]*server.AttributeValue, len(m))
	for k, v := range m {
		out[k] = wireValue(v)
	}
	return out
}

func wireValue(av ddbtypes.AttributeValue) *server.AttributeValue {
	switch v := av.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return &server.AttributeValue{S: aws.String(v.Value)}
	case *ddbtypes.AttributeValueMemberN:
		return &server.AttributeValue{N: aws.String(v.Value)}
	case *ddbtypes.AttributeValueMemberB:
		return &server.AttributeValue{B: v.Value}
	case *ddbtypes.AttributeValueMemberBOOL:
		return &server.AttributeValue{BOOL: aws.Bool(v.Value)}
	case *ddbtypes.AttributeValueMemberNULL:
		return &server.AttributeValue{NULL: aws.Bool(v.Value)}
	case *ddbtypes.AttributeValueMemberBS:
		return &server.AttributeValue{BS: v.Value}
	case *ddbtypes.AttributeValueMemberSS:
		return &server.AttributeValue{SS: stringPointers(v.Value)}
	case *ddbtypes.AttributeValueMemberNS:
		return &server.AttributeValue{NS: stringPointers(v.Value)}
	case *ddbtypes.AttributeValueMemberL:
		l := make([]*server.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = wireValue(e)
		}
		return &server.AttributeValue{L: l}
	case *ddbtypes.AttributeValueMemberM:
		return &server.AttributeValue{M: wireItem(v.Value)}
	}
	return nil
}

func stringPointers(ss []string) []*string {
	out := make([]*string, len(ss))
	for i := range ss {
		out[i] = aws.String(ss[i])
	}
	return out
}

// cloneItem returns a deep copy of item, sharing nothing with it, so that
// an image read from the engine stays as it was whatever the engine does
// later to the stored item.
func cloneItem(item map[string]*server.AttributeValue) map[string]*server.AttributeValue {
	if item == nil {
		return nil
	}
	out := make(map[string]*server.AttributeValue, len(item))
	for k, v := range item {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v *server.AttributeValue) *server.AttributeValue {
	if v == nil {
		return nil
	}
	c := &server.AttributeValue{
		B:    cloneBytes(v.B),
		BOOL: clonePointer(v.BOOL),
		N:    clonePointer(v.N),
		NULL: clonePointer(v.NULL),
		S:    clonePointer(v.S),
		SS:   cloneStrings(v.SS),
		NS:   cloneStrings(v.NS),
		M:    cloneItem(v.M),
	}
	if v.BS != nil {
		c.BS = make([][]byte, len(v.BS))
		for i, b := range v.BS {
			c.BS[i] = cloneBytes(b)
		}
	}
	if v.L != nil {
		c.L = make([]*server.AttributeValue, len(v.L))
		for i, e := range v.L {
			c.L[i] = cloneValue(e)
		}
	}
	return c
}

func clonePointer[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func cloneStrings(ss []*string) []*string {
	if ss == nil {
		return nil
	}
	out := make([]*string, len(ss))
	for i, s := range ss {
		out[i] = clonePointer(s)
	}
	return out
}

// typeless reports whether item holds a value that JSON encodes without a
// type, {}: an empty string set, number set, binary set, list, map or
// binary, at any depth. minidyn writes such values so, and they cannot be
// put back as they were.
func typeless(item map[string]*server.AttributeValue) bool {
	for _, v := range item {
		if typelessValue(v) {
			return true
		}
	}
	return false
}

func typelessValue(v *server.AttributeValue) bool {
	if v == nil {
		return true
	}
	switch {
	case v.S != nil, v.N != nil, v.BOOL != nil, v.NULL != nil,
		len(v.B) > 0, len(v.BS) > 0, len(v.SS) > 0, len(v.NS) > 0:
		return false
	case len(v.M) > 0:
		return typeless(v.M)
	case len(v.L) > 0:
		for _, e := range v.L {
			if typelessValue(e) {
				return true
			}
		}
		return false
	}
	return true
}
