package localstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/truora/minidyn/server"
	mtypes "github.com/truora/minidyn/types"
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
// the items read are kept as minidyn's values, not as JSON: the table's
// own item, which a put or delete replaces without changing it, and a copy
// for an update, which changes its item in place. Only a failed
// transaction copies the others, to restore them or to return them.
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

// itemTransaction is a TransactWriteItems request decoded in one pass
// with each action as the single-item request that applies it (every
// member of a Put is a member of PutItem, and so on; minidyn ignores the
// others). A ConditionCheck is applied as a conditional DeleteItem.
type itemTransaction struct {
	ClientRequestToken     *string
	ReturnConsumedCapacity string
	TransactItems          []itemAction
}

// itemAction is one member of TransactItems.
type itemAction struct {
	Put                    *server.PutItemInput
	Update                 *server.UpdateItemInput
	Delete, ConditionCheck *server.DeleteItemInput
}

// Action kinds, in the order of their members in TransactWriteItem.
const (
	kindPut = iota
	kindUpdate
	kindDelete
	kindConditionCheck
)

// actionKind returns the kind, the table, the key attributes (or for a
// Put, the item) and whether ReturnValuesOnConditionCheckFailure is
// ALL_OLD of the i-th action of t, and false unless exactly one of its
// members is set.
func (t *itemTransaction) actionKind(i int) (kind int, table string, attrs map[string]*server.AttributeValue, allOld bool, ok bool) {
	it := t.TransactItems[i]
	n := 0
	if it.Put != nil {
		kind, table, attrs, allOld = kindPut, aws.ToString(it.Put.TableName), it.Put.Item, it.Put.ReturnValuesOnConditionCheckFailure == returnAllOld
		n++
	}
	if it.Update != nil {
		kind, table, attrs, allOld = kindUpdate, aws.ToString(it.Update.TableName), it.Update.Key, it.Update.ReturnValuesOnConditionCheckFailure == returnAllOld
		n++
	}
	for _, d := range [...]struct {
		kind int
		in   *server.DeleteItemInput
	}{{kindDelete, it.Delete}, {kindConditionCheck, it.ConditionCheck}} {
		if d.in != nil {
			kind, table, attrs, allOld = d.kind, aws.ToString(d.in.TableName), d.in.Key, d.in.ReturnValuesOnConditionCheckFailure == returnAllOld
			n++
		}
	}
	return kind, table, attrs, allOld, n == 1
}

// preparedAction is an action with the item it addresses.
type preparedAction struct {
	kind    int
	index   int  // in the request
	allOld  bool // ReturnValuesOnConditionCheckFailure is ALL_OLD
	wireKey map[string]*server.AttributeValue
	// stored is the table's own item before the transaction, nil when
	// absent. A put replaces it and a delete removes it without changing
	// it, so it stays the old image; an update changes it in place, so
	// for an update old is copied from it before the action applies.
	stored map[string]*mtypes.Item
	old    map[string]*server.AttributeValue // the old image, copied when first needed
	table  string
}

// oldImage returns a copy of the action's item as it was before the
// transaction, nil when there was none.
func (p *preparedAction) oldImage() map[string]*server.AttributeValue {
	if p.old == nil {
		p.old = copyStoredItem(p.stored)
	}
	return p.old
}

// applyTransaction applies the TransactWriteItems request req (whose JSON is
// body) and returns the answer. The caller holds f.mu.
func (f *front) applyTransaction(ctx context.Context, header http.Header, body []byte, req *itemTransaction) *response {
	actions, ok := f.prepareTransaction(ctx, req)
	if !ok {
		return f.minidynTransaction(ctx, header, body)
	}
	for i := range actions {
		p := &actions[i]
		err := f.applyAction(ctx, req, p)
		if err == nil {
			if p.kind == kindConditionCheck && p.stored != nil {
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
func (f *front) applyAction(ctx context.Context, req *itemTransaction, p *preparedAction) error {
	it := req.TransactItems[p.index]
	var err error
	switch p.kind {
	case kindPut:
		err = f.eng.put(ctx, it.Put)
	case kindUpdate:
		_, err = f.eng.updateItem(ctx, it.Update)
	case kindDelete:
		_, err = f.eng.deleteItem(ctx, it.Delete)
	default:
		_, err = f.eng.deleteItem(ctx, it.ConditionCheck)
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
func (f *front) minidynTransaction(ctx context.Context, header http.Header, body []byte) *response {
	resp := call(ctx, f.inner, "TransactWriteItems", header, body)
	if resp.errorCode() == codeTransactionCanceled {
		var req transactRequest
		err := json.Unmarshal(body, &req)
		if err == nil {
			err = f.afterTransactionCanceled(ctx, &req, resp)
		}
		if err != nil {
			return errorResponse(http.StatusInternalServerError, "InternalServerError",
				"localstack: amending the TransactWriteItems response: "+err.Error())
		}
	}
	return resp
}

// prepareTransaction reads the item of every action. It reports false when
// the request is to be left to minidyn (see the comment at the top of this
// file).
func (f *front) prepareTransaction(ctx context.Context, req *itemTransaction) ([]preparedAction, bool) {
	actions := make([]preparedAction, len(req.TransactItems))
	seen := make(map[string]struct{}, len(actions))
	for i := range req.TransactItems {
		p := &actions[i]
		var attrs map[string]*server.AttributeValue
		var ok bool
		p.index = i
		p.kind, p.table, attrs, p.allOld, ok = req.actionKind(i)
		if !ok {
			return nil, false
		}
		names, err := f.keyAttributes(ctx, p.table)
		if err != nil {
			return nil, false
		}
		p.wireKey = attrs
		if p.kind == kindPut {
			p.wireKey = make(map[string]*server.AttributeValue, len(names))
			for _, name := range names {
				if v, ok := attrs[name]; ok {
					p.wireKey[name] = v
				}
			}
		}
		id, ok := itemIdentity(p.table, names, p.wireKey)
		if !ok {
			return nil, false
		}
		if _, dup := seen[id]; dup {
			return nil, false
		}
		seen[id] = struct{}{}
		stored, ok := f.eng.storedRef(p.table, p.wireKey)
		if !ok || typeless(wireView(stored)) {
			return nil, false
		}
		p.stored = stored
		if p.kind == kindUpdate {
			p.oldImage()
		}
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

// itemIdentity returns the string by which minidyn tells items apart: the
// table and the key attributes' values in schema order (partition key
// first) joined by ".", each a string, a number as written, or a binary's
// bytes in Go's %v format. It reports false when key is not exactly the
// table's key attributes, each a string, number or binary.
func itemIdentity(table string, names []string, key map[string]*server.AttributeValue) (string, bool) {
	if len(key) != len(names) {
		return "", false
	}
	parts := make([]string, len(names))
	for i, name := range names {
		v, ok := key[name]
		if !ok || v == nil {
			return "", false
		}
		switch {
		case v.S != nil && v.N == nil && v.B == nil:
			parts[i] = *v.S
		case v.N != nil && v.S == nil && v.B == nil:
			parts[i] = *v.N
		case v.B != nil && v.S == nil && v.N == nil:
			parts[i] = fmt.Sprintf("%v", v.B)
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
		if old := p.oldImage(); old != nil {
			err = f.eng.put(ctx, &server.PutItemInput{TableName: &p.table, Item: old})
		} else {
			_, err = f.eng.deleteItem(ctx, &server.DeleteItemInput{TableName: &p.table, Key: p.wireKey})
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
	if old := p.oldImage(); !f.opts.DisableReturnOldItem && p.allOld && old != nil {
		item, err := json.Marshal(old)
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
