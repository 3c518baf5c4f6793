package localstack

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/truora/minidyn/server"
)

// Transactions in time proportional to their actions.
//
// minidyn applies a TransactWriteItems by snapshotting (deep-copying) every
// table the transaction writes and restoring the snapshots when an action
// fails, so each transaction costs time proportional to the size of those
// tables. The front applies it instead with minidyn's single-item
// operations, which is possible because the front serialises every request:
// no other request can observe or interleave with the steps. The steps call
// minidyn's engine directly: each action is decoded once, before the
// front's lock is taken, as the single-item request that applies it, and
// the items read are kept as minidyn's values (copied, so that no later
// write changes them), not as JSON.
//
//  1. Prepare: for each action, in order, read the item it addresses with a
//     consistent GetItem and remember it (its "old image").
//  2. Apply: send each action, in order, as the single-item request with the
//     same parameters (Put as PutItem, Update as UpdateItem, Delete as
//     DeleteItem; a ConditionCheck as a conditional DeleteItem whose item,
//     if the condition held and it existed, is put back at once). minidyn
//     checks each condition against the item as it was before the
//     transaction, since no two actions may address the same item.
//  3. When an action fails, restore the old image of every action applied
//     so far and of the failed one (a failed write may have changed its item
//     before failing), newest first: put the old item back, or delete the
//     item when there was none.
//
// The answers are those of minidyn's own TransactWriteItems, amended as
// afterTransactionCanceled does: a failed condition cancels the transaction
// with ConditionalCheckFailed as the reason of the first action (in request
// order) whose condition failed and None for all others, the reason carrying
// the action's old image as Item when the action asked for ALL_OLD; any other
// error is minidyn's answer to the failed action. Whenever the front cannot
// be sure of giving minidyn's answer, it leaves the whole request to minidyn:
// a request it cannot decode, an action on a table that does not exist or
// whose item cannot be read, two actions on one item, and an old image that
// JSON cannot restore exactly (minidyn writes an empty list, map, binary or
// set as a value without type, {}).

// transactAction is one action of a TransactWriteItems request: the parts
// the front uses, the action's JSON as the client sent it, and the action
// decoded as the single-item request that applies it (every member of a
// Put is a member of PutItem, and so on; minidyn ignores the others).
type transactAction struct {
	writeAction
	raw json.RawMessage

	item    itemRequest
	itemErr error // of decoding raw as the single-item request
}

// itemRequest is a single-item request of minidyn's engine; one member is
// set, or none when the action's JSON does not decode as the request.
type itemRequest struct {
	put    *server.PutItemInput
	update *server.UpdateItemInput
	del    *server.DeleteItemInput
}

// UnmarshalJSON implements json.Unmarshaler.
func (a *transactAction) UnmarshalJSON(b []byte) error {
	a.raw = append(a.raw[:0], b...)
	return json.Unmarshal(b, &a.writeAction)
}

// decodeItemRequest decodes the action's JSON as the single-item request of
// kind, as minidyn decodes the body of that request.
func (a *transactAction) decodeItemRequest(kind int) {
	switch kind {
	case kindPut:
		a.item.put = new(server.PutItemInput)
		a.itemErr = json.Unmarshal(a.raw, a.item.put)
	case kindUpdate:
		a.item.update = new(server.UpdateItemInput)
		a.itemErr = json.Unmarshal(a.raw, a.item.update)
	default:
		a.item.del = new(server.DeleteItemInput)
		a.itemErr = json.Unmarshal(a.raw, a.item.del)
	}
}

// Action kinds, in the order of their members in TransactWriteItem.
const (
	kindPut = iota
	kindUpdate
	kindDelete
	kindConditionCheck
)

// actionKind returns the kind and the action of a TransactWriteItem, and
// false unless exactly one of its members is set.
func actionKind(put, update, del, check *transactAction) (int, *transactAction, bool) {
	kind, action, n := 0, (*transactAction)(nil), 0
	for k, a := range [...]*transactAction{put, update, del, check} {
		if a != nil {
			kind, action = k, a
			n++
		}
	}
	return kind, action, n == 1
}

// preparedAction is an action with the item it addresses.
type preparedAction struct {
	kind    int
	a       *transactAction
	key     map[string]json.RawMessage
	wireKey map[string]*server.AttributeValue
	old     map[string]*server.AttributeValue // the item before the transaction; nil when absent
	table   string
}

// applyTransaction applies the TransactWriteItems request req (whose JSON is
// body) and returns the answer. The caller holds f.mu.
func (f *front) applyTransaction(ctx context.Context, header http.Header, body []byte, req *transactRequest) *response {
	actions, ok := f.prepareTransaction(ctx, req)
	if !ok {
		return f.minidynTransaction(ctx, header, body, req)
	}
	for i := range actions {
		p := &actions[i]
		err := f.applyAction(ctx, p)
		if err == nil {
			if p.kind == kindConditionCheck && p.old != nil {
				// The condition held and the item is deleted: put it back.
				if err := f.restore(ctx, actions[i:i+1]); err != nil {
					return rollbackFailed(err)
				}
			}
			continue
		}
		if msg, ok := conditionFailed(err); ok {
			// minidyn changed nothing for this action.
			if err := f.restore(ctx, actions[:i]); err != nil {
				return rollbackFailed(err)
			}
			return f.canceled(actions, i, msg)
		}
		if err := f.restore(ctx, actions[:i+1]); err != nil {
			return rollbackFailed(err)
		}
		return engineErrorResponse(err)
	}
	return jsonResponse(struct{}{})
}

// applyAction sends the action's single-item request to the engine.
func (f *front) applyAction(ctx context.Context, p *preparedAction) error {
	a := p.a
	if a.itemErr != nil {
		return a.itemErr
	}
	var err error
	switch {
	case a.item.put != nil:
		_, err = f.eng.c.PutItem(ctx, a.item.put)
	case a.item.update != nil:
		_, err = f.eng.c.UpdateItem(ctx, a.item.update)
	default:
		_, err = f.eng.c.DeleteItem(ctx, a.item.del)
	}
	return err
}

// conditionFailed reports whether the engine's error err is answered as a
// ConditionalCheckFailedException, and its message.
func conditionFailed(err error) (string, bool) {
	if ccf, ok := errors.AsType[*ddbtypes.ConditionalCheckFailedException](err); ok {
		return aws.ToString(ccf.Message), true
	}
	resp := engineErrorResponse(err)
	if resp.errorCode() != codeConditionalCheck {
		return "", false
	}
	var cause struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(resp.body.Bytes(), &cause)
	return cause.Message, true
}

// minidynTransaction leaves the request to minidyn's own TransactWriteItems
// and amends its cancellation reasons.
func (f *front) minidynTransaction(ctx context.Context, header http.Header, body []byte, req *transactRequest) *response {
	resp := call(ctx, f.inner, "TransactWriteItems", header, body)
	if resp.errorCode() == codeTransactionCanceled {
		if err := f.afterTransactionCanceled(ctx, req, resp); err != nil {
			return errorResponse(http.StatusInternalServerError, "InternalServerError",
				"localstack: amending the TransactWriteItems response: "+err.Error())
		}
	}
	return resp
}

// prepareTransaction reads the item of every action. It reports false when
// the request is to be left to minidyn (see the comment at the top of this
// file).
func (f *front) prepareTransaction(ctx context.Context, req *transactRequest) ([]preparedAction, bool) {
	actions := make([]preparedAction, len(req.TransactItems))
	seen := make(map[string]struct{}, len(actions))
	for i, t := range req.TransactItems {
		p := &actions[i]
		var ok bool
		p.kind, p.a, ok = actionKind(t.Put, t.Update, t.Delete, t.ConditionCheck)
		if !ok {
			return nil, false
		}
		if p.a.item == (itemRequest{}) && p.a.itemErr == nil {
			p.a.decodeItemRequest(p.kind)
		}
		p.table = p.a.TableName
		names, err := f.keyAttributes(ctx, p.table)
		if err != nil {
			return nil, false
		}
		p.key = p.a.Key
		if p.kind == kindPut {
			p.key = make(map[string]json.RawMessage, len(names))
			for _, name := range names {
				if v, ok := p.a.Item[name]; ok {
					p.key[name] = v
				}
			}
		}
		id, ok := itemIdentity(p.table, names, p.key)
		if !ok {
			return nil, false
		}
		if _, dup := seen[id]; dup {
			return nil, false
		}
		seen[id] = struct{}{}
		if p.wireKey, ok = wireKey(p.key); !ok {
			return nil, false
		}
		old, ok := f.readItem(ctx, p.table, p.wireKey)
		if !ok || typeless(old) {
			return nil, false
		}
		p.old = old
	}
	return actions, true
}

// wireKey decodes the values of key.
func wireKey(key map[string]json.RawMessage) (map[string]*server.AttributeValue, bool) {
	out := make(map[string]*server.AttributeValue, len(key))
	for name, raw := range key {
		v := new(server.AttributeValue)
		if json.Unmarshal(raw, v) != nil {
			return nil, false
		}
		out[name] = v
	}
	return out, true
}

// readItem reads a copy of an item with a consistent GetItem. It returns
// nil and true when there is no such item, and false when the read failed.
func (f *front) readItem(ctx context.Context, table string, key map[string]*server.AttributeValue) (map[string]*server.AttributeValue, bool) {
	out, err := f.eng.c.GetItem(ctx, &server.GetItemInput{TableName: &table, Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, false
	}
	if len(out.Item) == 0 {
		return nil, true
	}
	return cloneItem(out.Item), true
}

// itemIdentity returns the string by which minidyn tells items apart: the
// table and the key attributes' values in schema order (partition key
// first) joined by ".", each a string, a number as written, or a binary's
// bytes in Go's %v format. It reports false when key is not exactly the
// table's key attributes, each a string, number or binary.
func itemIdentity(table string, names []string, key map[string]json.RawMessage) (string, bool) {
	if len(key) != len(names) {
		return "", false
	}
	parts := make([]string, len(names))
	for i, name := range names {
		var v struct {
			S, N *string
			B    *string
		}
		raw, ok := key[name]
		if !ok || json.Unmarshal(raw, &v) != nil {
			return "", false
		}
		switch {
		case v.S != nil && v.N == nil && v.B == nil:
			parts[i] = *v.S
		case v.N != nil && v.S == nil && v.B == nil:
			parts[i] = *v.N
		case v.B != nil && v.S == nil && v.N == nil:
			b, err := base64.StdEncoding.DecodeString(*v.B)
			if err != nil {
				return "", false
			}
			parts[i] = fmt.Sprintf("%v", b)
		default:
			return "", false
		}
	}
	return table + "|" + strings.Join(parts, "."), true
}

// restore puts back the old images of actions, the last first: the old
// item, or no item when there was none.
func (f *front) restore(ctx context.Context, actions []preparedAction) error {
	for i := len(actions) - 1; i >= 0; i-- {
		p := &actions[i]
		var err error
		if p.old != nil {
			_, err = f.eng.c.PutItem(ctx, &server.PutItemInput{TableName: &p.table, Item: p.old})
		} else {
			_, err = f.eng.c.DeleteItem(ctx, &server.DeleteItemInput{TableName: &p.table, Key: p.wireKey})
		}
		if err != nil {
			return fmt.Errorf("restoring the item of action %d: %w", i, err)
		}
	}
	return nil
}

// cancellationReason is one member of CancellationReasons.
type cancellationReason struct {
	Code    string          `json:"Code"`
	Message string          `json:"Message,omitempty"`
	Item    json.RawMessage `json:"Item,omitempty"`
}

// canceled returns the TransactionCanceledException for a transaction whose
// action failed failed its condition, message being the message of minidyn's
// ConditionalCheckFailedException for it, in the shape minidyn writes.
func (f *front) canceled(actions []preparedAction, failed int, message string) *response {
	reasons := make([]cancellationReason, len(actions))
	for i := range reasons {
		reasons[i].Code = "None"
	}
	p := &actions[failed]
	reasons[failed] = cancellationReason{Code: reasonConditionalCheck, Message: message}
	if !f.opts.DisableReturnOldItem && p.a.ReturnValuesOnConditionCheckFailure == returnAllOld && p.old != nil {
		item, err := json.Marshal(p.old)
		if err != nil {
			return errorResponse(http.StatusInternalServerError, "InternalServerError", err.Error())
		}
		reasons[failed].Item = item
	}
	resp := newResponse()
	resp.header.Set("Content-Type", jsonContentType)
	resp.status = http.StatusBadRequest
	if err := resp.setJSON(struct {
		Type                string               `json:"__type"`
		Message             string               `json:"message"`
		CancellationReasons []cancellationReason `json:"CancellationReasons"`
	}{
		Type:                codeTransactionCanceled,
		Message:             "Transaction cancelled, please refer cancellation reasons for specific reasons [" + reasonConditionalCheck + "]",
		CancellationReasons: reasons,
	}); err != nil {
		return errorResponse(http.StatusInternalServerError, "InternalServerError", err.Error())
	}
	return resp
}

// rollbackFailed is the answer when an applied action could not be undone:
// the tables are then in a state no DynamoDB would show.
func rollbackFailed(err error) *response {
	return errorResponse(http.StatusInternalServerError, "InternalServerError",
		"localstack: rolling back TransactWriteItems: "+err.Error())
}
