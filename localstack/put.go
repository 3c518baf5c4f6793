package localstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/truora/minidyn/server"
)

// The PutItem fast path. A PutItem that minidyn answers is amended by the
// front (see beforePut and afterItemWrite): minidyn always returns the new
// item as Attributes, which the front replaces with the old item or
// removes, and it never returns the item with a
// ConditionalCheckFailedException, which the front adds. Done through
// minidyn's HTTP handler that costs a JSON round trip for each step. The
// fast path calls the engine with the request decoded once and writes the
// answer the slow path would write.

// decodePut decodes a PutItem request as minidyn does, or returns nil when
// it does not decode (minidyn then reports the error).
func (f *front) decodePut(body []byte) *server.PutItemInput {
	if in, ok := fastDecodePut(body); ok {
		return in
	}
	// Key is no member of PutItem, but the slow path decodes it (as
	// writeAction does): a body it fails on is left to the slow path.
	var in struct {
		server.PutItemInput
		Key map[string]json.RawMessage
	}
	if json.Unmarshal(body, &in) != nil {
		return nil
	}
	return &in.PutItemInput
}

// putItem answers the PutItem in. It reports false, having changed nothing,
// when the answer is to be left to the slow path: when ReturnValues or
// ReturnValuesOnConditionCheckFailure is ALL_OLD and the item cannot be
// read. The caller holds f.mu.
func (f *front) putItem(ctx context.Context, in *server.PutItemInput) (*response, bool) {
	var old map[string]*server.AttributeValue
	if in.ReturnValues == returnAllOld || in.ReturnValuesOnConditionCheckFailure == returnAllOld {
		var err error
		if old, err = f.currentWireItem(ctx, in); err != nil {
			return nil, false
		}
	}
	err := f.eng.put(ctx, in)
	switch {
	case err == nil && in.ReturnValues == returnAllOld && old != nil:
		return jsonResponse(struct {
			Attributes map[string]*server.AttributeValue
		}{old}), true
	case err == nil:
		return jsonResponse(struct{}{}), true
	}
	if ccf, ok := errors.AsType[*ddbtypes.ConditionalCheckFailedException](err); ok && len(ccf.Item) == 0 &&
		in.ReturnValuesOnConditionCheckFailure == returnAllOld && old != nil {
		// The answer a replayed claim gets: written at once, not as
		// minidyn's answer amended.
		return conditionFailedResponse(aws.ToString(ccf.Message), old), true
	}
	resp := engineErrorResponse(err)
	if in.ReturnValuesOnConditionCheckFailure != returnAllOld || old == nil || resp.errorCode() != codeConditionalCheck {
		return resp, true
	}
	out, derr := decodeObject(resp.body.Bytes())
	if derr == nil && !out.has("Item") {
		derr = out.set("Item", old)
		if derr == nil {
			derr = resp.setJSON(out)
		}
	}
	if derr != nil {
		return nil, false
	}
	return resp, true
}

// currentWireItem reads the item that the PutItem in replaces, as
// currentItem does; it returns nil when there is none.
func (f *front) currentWireItem(ctx context.Context, in *server.PutItemInput) (map[string]*server.AttributeValue, error) {
	if in.TableName == nil {
		return nil, errors.New("no TableName")
	}
	names, err := f.keyAttributes(ctx, *in.TableName)
	if err != nil {
		return nil, err
	}
	key := make(map[string]*server.AttributeValue, len(names))
	for _, name := range names {
		v, ok := in.Item[name]
		if !ok {
			return nil, fmt.Errorf("item lacks key attribute %q", name)
		}
		key[name] = v
	}
	item, ok := f.eng.storedItem(*in.TableName, key)
	if !ok {
		return nil, fmt.Errorf("the item of table %q cannot be read", *in.TableName)
	}
	return item, nil
}
