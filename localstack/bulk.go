package localstack

import (
	"encoding/json"
	"net/http"
	"sort"

	"github.com/truora/minidyn/server"
	mtypes "github.com/truora/minidyn/types"
)

// bulkLoadTarget is the X-Amz-Target of the embedded emulator's bulk load,
// an operation of the front's own, for benchmarks that need large tables
// (package internal/emuload sends it). minidyn inserts each new item into a sorted
// slice of the table's keys, and of each index's keys, by re-sorting it, so
// loading N items one request at a time takes time quadratic in N
// (minutes for 200,000 items). The request body is
//
//	{"TableName": "...", "Items": [{"pk": {"S": "..."}, ...}, ...]}
//
// or, for many items alike, {"TableName": "...", "Template": {...},
// "Overrides": [{...}, ...]}, which stands for one item per override: the
// template with the override's attributes added or replaced (both forms
// may be combined; Items are stored first). Each item is stored as a
// PutItem without condition would store it
// (replacing an item with the same key), all under one lock, with the keys
// sorted once and every secondary index rebuilt once. An item without the
// table's key attributes (of the defined types) fails the whole request
// with a ValidationException before anything is stored. The answer is
// {"Count": <items stored>}. It reports no consumed capacity and is not a
// DynamoDB operation: the same request to any other endpoint fails.
const bulkLoadTarget = "IdemkeyLocalstack.BulkPutItems"

// bulkPut answers a bulk load. The caller holds f.mu.
func (f *front) bulkPut(body []byte) *response {
	var req struct {
		TableName string
		Items     []map[string]*server.AttributeValue
		Template  map[string]*server.AttributeValue
		Overrides []map[string]*server.AttributeValue
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return errorResponse(http.StatusBadRequest, codeSerialization, err.Error())
	}
	for _, o := range req.Overrides {
		it := cloneItem(req.Template)
		for k, v := range o {
			it[k] = v
		}
		req.Items = append(req.Items, it)
	}
	t := f.eng.table(req.TableName)
	if t == nil {
		return errorResponse(http.StatusBadRequest, codeResourceNotFound, "Requested resource not found")
	}
	keys := make([]string, len(req.Items))
	items := make([]map[string]*mtypes.Item, len(req.Items))
	for i, it := range req.Items {
		items[i] = typesItem(it)
		k, ok := tableKey(t, items[i])
		if !ok {
			return validationError("One of the required keys was not given a value (item %d)", i)
		}
		keys[i] = k
	}
	added := false
	for i, k := range keys {
		if _, exists := t.Data[k]; !exists {
			t.SortedKeys = append(t.SortedKeys, k)
			added = true
		}
		t.Data[k] = items[i]
	}
	if added {
		sort.Strings(t.SortedKeys)
	}
	rebuildIndexes(t)
	return jsonResponse(struct{ Count int }{len(items)})
}
