package localstack

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Transactions in time proportional to their actions.
//
// minidyn applies a TransactWriteItems by snapshotting (deep-copying) every
// table the transaction writes and restoring the snapshots when an action
// fails, so each transaction costs time proportional to the size of those
// tables. The front applies it instead with minidyn's single-item
// operations, which is possible because the front serialises every request:
// no other request can observe or interleave with the steps.
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
// the front uses and the action's JSON as the client sent it, which is also
// a valid body for the single-item request that applies it (every member of
// a Put is a member of PutItem, and so on; minidyn ignores the others).
type transactAction struct {
	writeAction
	raw json.RawMessage
}

// UnmarshalJSON implements json.Unmarshaler.
func (a *transactAction) UnmarshalJSON(b []byte) error {
	a.raw = append(a.raw[:0], b...)
	return json.Unmarshal(b, &a.writeAction)
}

// Action kinds, in the order of their members in TransactWriteItem.
const (
	kindPut = iota
	kindUpdate
	kindDelete
	kindConditionCheck
)

// itemOperation is the single-item operation that applies each action kind.
var itemOperation = [...]string{
	kindPut:            "PutItem",
	kindUpdate:         "UpdateItem",
	kindDelete:         "DeleteItem",
	kindConditionCheck: "DeleteItem",
}

// preparedAction is an action with the item it addresses.
type preparedAction struct {
	kind  int
	a     *transactAction
	key   map[string]json.RawMessage
	old   json.RawMessage // the item before the transaction; nil when absent
	table string
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
		resp := call(ctx, f.inner, itemOperation[p.kind], nil, p.a.raw)
		switch {
		case resp.ok() && p.kind == kindConditionCheck && p.old != nil:
			// The condition held and the item is deleted: put it back.
			if err := f.restore(ctx, actions[i:i+1]); err != nil {
				return rollbackFailed(err)
			}
		case resp.ok():
		case resp.errorCode() == codeConditionalCheck:
			// minidyn changed nothing for this action.
			if err := f.restore(ctx, actions[:i]); err != nil {
				return rollbackFailed(err)
			}
			return f.canceled(actions, i, resp)
		default:
			if err := f.restore(ctx, actions[:i+1]); err != nil {
				return rollbackFailed(err)
			}
			return resp
		}
	}
	return jsonResponse(struct{}{})
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
		n := 0
		for kind, a := range []*transactAction{t.Put, t.Update, t.Delete, t.ConditionCheck} {
			if a != nil {
				p.kind, p.a = kind, a
				n++
			}
		}
		if n != 1 {
			return nil, false
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
		old, ok := f.readItem(ctx, p.table, p.key)
		if !ok || bytes.Contains(old, []byte("{}")) {
			return nil, false
		}
		p.old = old
	}
	return actions, true
}

// readItem reads an item with a consistent GetItem. It returns nil and true
// when there is no such item, and false when the read failed.
func (f *front) readItem(ctx context.Context, table string, key map[string]json.RawMessage) (json.RawMessage, bool) {
	resp := callJSON(ctx, f.inner, "GetItem", struct {
		TableName      string
		Key            map[string]json.RawMessage
		ConsistentRead bool
	}{table, key, true})
	if !resp.ok() {
		return nil, false
	}
	var out struct{ Item json.RawMessage }
	if json.Unmarshal(resp.body.Bytes(), &out) != nil {
		return nil, false
	}
	switch string(bytes.TrimSpace(out.Item)) {
	case "", "null", "{}":
		return nil, true
	}
	return out.Item, true
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
		var resp *response
		if p.old != nil {
			resp = callJSON(ctx, f.inner, "PutItem", struct {
				TableName string
				Item      json.RawMessage
			}{p.table, p.old})
		} else {
			resp = callJSON(ctx, f.inner, "DeleteItem", struct {
				TableName string
				Key       map[string]json.RawMessage
			}{p.table, p.key})
		}
		if !resp.ok() {
			return fmt.Errorf("restoring the item of action %d: status %d: %s", i, resp.status, resp.body.String())
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
// action failed failed its condition, ccf being minidyn's
// ConditionalCheckFailedException for it, in the shape minidyn writes.
func (f *front) canceled(actions []preparedAction, failed int, ccf *response) *response {
	var cause struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(ccf.body.Bytes(), &cause)
	reasons := make([]cancellationReason, len(actions))
	for i := range reasons {
		reasons[i].Code = "None"
	}
	p := &actions[failed]
	reasons[failed] = cancellationReason{Code: reasonConditionalCheck, Message: cause.Message}
	if !f.opts.DisableReturnOldItem && p.a.ReturnValuesOnConditionCheckFailure == returnAllOld {
		reasons[failed].Item = p.old
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
