package localstack

import (
	"context"
	"encoding/json"
	"fmt"
)

// writeAction is the part of a PutItem, UpdateItem or DeleteItem request, or
// of a Put, Update, Delete or ConditionCheck transaction action, that the
// front needs to find the item a condition was checked against.
type writeAction struct {
	TableName                           string
	Key                                 map[string]json.RawMessage
	Item                                map[string]json.RawMessage
	ReturnValuesOnConditionCheckFailure string
}

// afterItemWrite amends a ConditionalCheckFailedException from PutItem,
// UpdateItem or DeleteItem: it adds the item's current attributes as Item
// when the request asked for ALL_OLD and minidyn left Item out, or removes
// Item when DisableReturnOldItem is set.
func (f *front) afterItemWrite(ctx context.Context, body []byte, resp *response) error {
	if resp.errorCode() != codeConditionalCheck {
		return nil
	}
	out, err := decodeObject(resp.body.Bytes())
	if err != nil {
		return err
	}
	if f.opts.DisableReturnOldItem {
		if _, ok := out["Item"]; !ok {
			return nil
		}
		delete(out, "Item")
		return resp.setJSON(out)
	}
	var req writeAction
	if err := json.Unmarshal(body, &req); err != nil {
		return err
	}
	if req.ReturnValuesOnConditionCheckFailure != returnAllOld || out.has("Item") {
		return nil
	}
	item, err := f.currentItem(ctx, &req)
	if err != nil || item == nil {
		return err
	}
	out["Item"] = item
	return resp.setJSON(out)
}

// currentItem reads, with a consistent GetItem against minidyn, the item the
// action addresses. It returns nil when there is no such item.
func (f *front) currentItem(ctx context.Context, a *writeAction) (json.RawMessage, error) {
	key := a.Key
	if key == nil {
		// A Put names its item, not its key: project the item on the key.
		names, err := f.keyAttributes(ctx, a.TableName)
		if err != nil {
			return nil, err
		}
		key = make(map[string]json.RawMessage, len(names))
		for _, name := range names {
			v, ok := a.Item[name]
			if !ok {
				return nil, fmt.Errorf("item lacks key attribute %q", name)
			}
			key[name] = v
		}
	}
	resp := callJSON(ctx, f.inner, "GetItem", struct {
		TableName      string
		Key            map[string]json.RawMessage
		ConsistentRead bool
	}{a.TableName, key, true})
	if !resp.ok() {
		return nil, fmt.Errorf("GetItem: status %d: %s", resp.status, resp.body.String())
	}
	out, err := decodeObject(resp.body.Bytes())
	if err != nil {
		return nil, err
	}
	if !out.has("Item") {
		return nil, nil
	}
	return out["Item"], nil
}

// keyAttributes returns the names of the table's key attributes, the
// partition (HASH) key first, from minidyn's DescribeTable, cached until the
// table is created or deleted again through the front.
func (f *front) keyAttributes(ctx context.Context, table string) ([]string, error) {
	if names, ok := f.keys[table]; ok {
		return names, nil
	}
	resp := callJSON(ctx, f.inner, "DescribeTable", tableRequest{TableName: &table})
	if !resp.ok() {
		return nil, fmt.Errorf("DescribeTable: status %d: %s", resp.status, resp.body.String())
	}
	var out struct {
		Table struct {
			KeySchema []struct{ AttributeName, KeyType string }
		}
	}
	if err := json.Unmarshal(resp.body.Bytes(), &out); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(out.Table.KeySchema))
	for _, k := range out.Table.KeySchema {
		if k.KeyType == "HASH" {
			names = append([]string{k.AttributeName}, names...)
		} else {
			names = append(names, k.AttributeName)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("table %q has no key schema", table)
	}
	f.keys[table] = names
	return names, nil
}

// transactRequest is the part of a TransactWriteItems request the front uses.
type transactRequest struct {
	ClientRequestToken     *string
	ReturnConsumedCapacity string
	TransactItems          []struct {
		Put, Update, Delete, ConditionCheck *writeAction
	}
}

// action returns the i-th action of the request, or nil.
func (r *transactRequest) action(i int) *writeAction {
	if i < 0 || i >= len(r.TransactItems) {
		return nil
	}
	t := r.TransactItems[i]
	for _, a := range []*writeAction{t.Put, t.Update, t.Delete, t.ConditionCheck} {
		if a != nil {
			return a
		}
	}
	return nil
}

// afterTransactionCanceled amends the cancellation reasons of a
// TransactionCanceledException: each ConditionalCheckFailed reason whose
// action asked for ALL_OLD gets the item's current attributes as Item (minidyn
// has rolled the transaction back, so they are the attributes the condition
// was checked against), or, with DisableReturnOldItem, every reason loses
// its Item.
func (f *front) afterTransactionCanceled(ctx context.Context, req *transactRequest, resp *response) error {
	out, err := decodeObject(resp.body.Bytes())
	if err != nil {
		return err
	}
	var reasons []object
	if err := json.Unmarshal(out["CancellationReasons"], &reasons); err != nil {
		return fmt.Errorf("CancellationReasons: %w", err)
	}
	changed := false
	for i, reason := range reasons {
		if f.opts.DisableReturnOldItem {
			if _, ok := reason["Item"]; ok {
				delete(reason, "Item")
				changed = true
			}
			continue
		}
		var code string
		_ = json.Unmarshal(reason["Code"], &code)
		a := req.action(i)
		if code != reasonConditionalCheck || reason.has("Item") || a == nil || a.ReturnValuesOnConditionCheckFailure != returnAllOld {
			continue
		}
		item, err := f.currentItem(ctx, a)
		if err != nil {
			return fmt.Errorf("action %d: %w", i, err)
		}
		if item != nil {
			reason["Item"] = item
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if err := out.set("CancellationReasons", reasons); err != nil {
		return err
	}
	return resp.setJSON(out)
}

// putReturn carries what the front read before a PutItem to correct the
// Attributes of its response.
type putReturn struct {
	allOld bool
	old    json.RawMessage // the item before the put, nil if none
}

// beforePut prepares the correction of a PutItem response: with ReturnValues
// ALL_OLD it reads the item the put will replace. It returns nil when the
// request cannot be understood or the read fails; minidyn then reports the
// problem, or the response is left alone.
func (f *front) beforePut(ctx context.Context, body []byte) *putReturn {
	var req struct {
		writeAction
		ReturnValues string
	}
	if json.Unmarshal(body, &req) != nil {
		return nil
	}
	if req.ReturnValues != returnAllOld {
		return &putReturn{}
	}
	old, err := f.currentItem(ctx, &req.writeAction)
	if err != nil {
		return nil
	}
	return &putReturn{allOld: true, old: old}
}

// amend sets the Attributes of a successful PutItem response to the item as
// it was before the put when the request asked for ALL_OLD and there was
// one, and removes them otherwise.
func (p *putReturn) amend(resp *response) error {
	out, err := decodeObject(resp.body.Bytes())
	if err != nil {
		return err
	}
	if p.allOld && p.old != nil {
		out["Attributes"] = p.old
	} else {
		delete(out, "Attributes")
	}
	return resp.setJSON(out)
}
