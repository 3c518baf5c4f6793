package localstack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"net/http"
	"strconv"
)

// Limits of a parallel Scan, from the DynamoDB API reference.
const (
	maxTotalSegments = 1000000
	maxSegment       = maxTotalSegments - 1
)

// keyListLimit is the Limit of each Scan with which the front lists the keys
// after a parallel Scan's start position.
const keyListLimit = 1000

// search answers a Scan or Query. It holds a placeholder for a deleted
// ExclusiveStartKey item while the request runs (see holdStartKey), answers
// a parallel Scan itself (see segmentScan) and passes everything else to
// minidyn, amending the counts of the response (see afterSearch).
func (f *front) search(ctx context.Context, op string, header http.Header, body []byte, in *decoded) *response {
	if resp := f.missingIndex(body); resp != nil {
		return resp
	}
	if op == "Query" && !f.minidynIndexQuery {
		if resp, read := f.indexQuery(body); resp != nil {
			in.read = read
			return resp
		}
	}
	var release func() error
	if !f.opts.DisableStartKeyResume {
		release = f.holdStartKey(ctx, body)
	}
	var resp *response
	if op == "Scan" && !f.opts.DisableScanSegments {
		resp = f.segmentScan(ctx, body, &in.read)
	}
	if resp == nil {
		resp = call(ctx, f.inner, op, header, body)
		f.afterSearch(ctx, op, body, resp)
	}
	if release != nil {
		if err := release(); err != nil {
			return errorResponse(http.StatusInternalServerError, "InternalServerError", fmt.Sprintf("localstack: %s: %v", op, err))
		}
	}
	return resp
}

// missingIndex returns DynamoDB's ValidationException for a Scan or Query
// that names an index the table does not have (minidyn dereferences the
// missing index), or nil.
func (f *front) missingIndex(body []byte) *response {
	var req struct{ TableName, IndexName *string }
	if json.Unmarshal(body, &req) != nil || req.TableName == nil || req.IndexName == nil {
		return nil
	}
	t := f.eng.table(*req.TableName)
	if t == nil {
		return nil
	}
	if _, ok := indexOf(t, *req.IndexName); !ok {
		return validationError("The table does not have the specified index: %s", *req.IndexName)
	}
	return nil
}

// holdStartKey makes a Scan or Query resume after its ExclusiveStartKey
// when the item that key names has been deleted since the key was returned.
// minidyn finds the start position by looking the key up among the keys it
// holds, so without the item it never starts: it returns no items and no
// LastEvaluatedKey, which ends a paginated scan silently. DynamoDB instead
// continues after the key's position.
//
// When the request has an ExclusiveStartKey whose item (looked up by the
// table's key attributes with a consistent GetItem) does not exist,
// holdStartKey puts a placeholder item made of exactly the attributes of
// ExclusiveStartKey (so that, for a scan of an index, it also sorts into
// the index) and returns the function that deletes it again. The caller
// holds f.mu for the whole request, so no other request sees the
// placeholder, and the request never returns it: the start key is
// exclusive. holdStartKey returns nil when there is nothing to hold or the
// key cannot be understood; minidyn then answers the request as it is.
//
// An item that still exists but left the index since (its index key was
// removed or changed) is not held: minidyn then starts at its new position,
// or not at all.
func (f *front) holdStartKey(ctx context.Context, body []byte) func() error {
	var req struct {
		TableName         string
		ExclusiveStartKey map[string]json.RawMessage
	}
	if json.Unmarshal(body, &req) != nil || len(req.ExclusiveStartKey) == 0 {
		return nil
	}
	names, err := f.keyAttributes(ctx, req.TableName)
	if err != nil {
		return nil
	}
	key := make(map[string]json.RawMessage, len(names))
	for _, name := range names {
		v, ok := req.ExclusiveStartKey[name]
		if !ok {
			return nil
		}
		key[name] = v
	}
	current, err := f.currentItem(ctx, &writeAction{TableName: req.TableName, Key: key})
	if err != nil || current != nil {
		return nil
	}
	put := callJSON(ctx, f.inner, "PutItem", struct {
		TableName string
		Item      map[string]json.RawMessage
	}{req.TableName, req.ExclusiveStartKey})
	if !put.ok() {
		return nil
	}
	return func() error {
		del := callJSON(context.WithoutCancel(ctx), f.inner, "DeleteItem", struct {
			TableName string
			Key       map[string]json.RawMessage
		}{req.TableName, key})
		if !del.ok() {
			return fmt.Errorf("deleting the placeholder item of the ExclusiveStartKey: status %d: %s", del.status, del.body.String())
		}
		return nil
	}
}

// scanRequest is the part of a Scan request the front inspects to answer a
// parallel Scan.
type scanRequest struct {
	TableName         *string
	IndexName         *string
	Segment           *int64
	TotalSegments     *int64
	Limit             *int64
	Select            string
	ExclusiveStartKey map[string]json.RawMessage
}

// segmentScan answers a parallel Scan (one with Segment or TotalSegments),
// which minidyn answers with the whole table for every segment. It returns
// nil for a request that is not a parallel Scan, has TotalSegments 1 (the
// whole table) or cannot be decoded; minidyn then answers it.
//
// It validates Segment and TotalSegments as DynamoDB does. An item belongs
// to segment segmentOf(partition key value, TotalSegments); a scan of an
// index uses the partition key of the table, which every index holds. The
// segment is read in minidyn's order (that of the whole scan, restricted to
// the segment), so ExclusiveStartKey and LastEvaluatedKey work within it;
// an ExclusiveStartKey whose partition key belongs to another segment is a
// ValidationException, as on DynamoDB. Limit counts the items of the
// segment evaluated, before FilterExpression, as DynamoDB does; the page
// ends with LastEvaluatedKey when Limit items were evaluated. Count is the
// number of items returned, ScannedCount the number evaluated, and Select
// COUNT returns no Items (unless DisableScanCounts, which leaves
// ScannedCount out and Items in, as minidyn would).
//
// How: a probe (the request without segments, Limit 1) lets minidyn
// validate the request and report a missing table; key-only Scans of
// keyListLimit items list the keys after ExclusiveStartKey until Limit
// items of the segment are found or the table ends; then each of those
// items is evaluated by one Scan of the request without segments, with
// Limit 1 and ExclusiveStartKey the key listed just before it, which
// applies FilterExpression and ProjectionExpression to exactly that item.
// This is simple rather than fast. minidyn walks its sorted keys from the
// first to find an ExclusiveStartKey, so every request to it costs O(N) in
// a table of N items. A page that evaluates L items of a segment of T costs
// L+2 such requests plus one per keyListLimit items listed (about L·T of
// them), and a whole parallel scan, all segments, about N+2·T·pages, so
// O(N²) key comparisons in all. That is fine for test tables of thousands
// of items, not for millions.
func (f *front) segmentScan(ctx context.Context, body []byte, read *int) *response {
	var req scanRequest
	if json.Unmarshal(body, &req) != nil || (req.Segment == nil && req.TotalSegments == nil) {
		return nil
	}
	if resp := checkSegments(req.Segment, req.TotalSegments); resp != nil {
		return resp
	}
	segment, total := *req.Segment, *req.TotalSegments
	if total == 1 || req.TableName == nil {
		return nil
	}
	plain, err := decodeObject(body)
	if err != nil {
		return nil
	}
	delete(plain, "Segment")
	delete(plain, "TotalSegments")
	probe := maps.Clone(plain)
	probe["Limit"] = json.RawMessage("1")
	if resp := callJSON(ctx, f.inner, "Scan", probe); !resp.ok() {
		return resp
	}
	names, err := f.keyAttributes(ctx, *req.TableName)
	if err != nil {
		return errorResponse(http.StatusInternalServerError, "InternalServerError", "localstack: parallel Scan: "+err.Error())
	}
	if len(req.ExclusiveStartKey) > 0 {
		s, ok := segmentOf(req.ExclusiveStartKey[names[0]], total)
		if !ok {
			return validationError("The provided starting key is invalid: The provided key element does not match the schema")
		}
		if s != segment {
			return validationError("The provided Exclusive start key does not map to the provided Segment and TotalSegments values.")
		}
	}
	var limit int
	if req.Limit != nil && *req.Limit > 0 {
		limit = int(min(*req.Limit, math.MaxInt32))
	}

	todo, resp := f.segmentKeys(ctx, &req, names, segment, total, limit)
	if resp != nil {
		return resp
	}
	items := []json.RawMessage{}
	var last map[string]json.RawMessage
	for _, e := range todo {
		got, lastKey, resp := f.evaluateOne(ctx, plain, e, names)
		if resp != nil {
			return resp
		}
		items = append(items, got...)
		last = lastKey
	}

	out := object{}
	counts := !f.opts.DisableScanCounts
	if err := out.set("Count", len(items)); err != nil {
		return errorResponse(http.StatusInternalServerError, "InternalServerError", err.Error())
	}
	if !counts || req.Select != selectCount {
		_ = out.set("Items", items)
	}
	if counts {
		_ = out.set("ScannedCount", len(todo))
	}
	if limit > 0 && len(todo) == limit {
		_ = out.set("LastEvaluatedKey", last)
	}
	*read = f.itemsSize(*req.TableName, todo)
	return jsonResponse(out)
}

// checkSegments validates the Segment and TotalSegments of a Scan as
// DynamoDB does, returning the ValidationException to send, or nil.
func checkSegments(segment, total *int64) *response {
	var problems []string
	if total != nil && *total < 1 {
		problems = append(problems, fmt.Sprintf("Value '%d' at 'totalSegments' failed to satisfy constraint: Member must have value greater than or equal to 1", *total))
	}
	if total != nil && *total > maxTotalSegments {
		problems = append(problems, fmt.Sprintf("Value '%d' at 'totalSegments' failed to satisfy constraint: Member must have value less than or equal to %d", *total, maxTotalSegments))
	}
	if segment != nil && *segment < 0 {
		problems = append(problems, fmt.Sprintf("Value '%d' at 'segment' failed to satisfy constraint: Member must have value greater than or equal to 0", *segment))
	}
	if segment != nil && *segment > maxSegment {
		problems = append(problems, fmt.Sprintf("Value '%d' at 'segment' failed to satisfy constraint: Member must have value less than or equal to %d", *segment, maxSegment))
	}
	if resp := validationErrors(problems); resp != nil {
		return resp
	}
	switch {
	case total == nil:
		return validationError("The TotalSegments parameter is required but was not present in the request when Segment parameter is present")
	case segment == nil:
		return validationError("The Segment parameter is required but was not present in the request when parameter TotalSegments is present")
	case *segment >= *total:
		return validationError("The Segment parameter is zero-based and must be less than parameter TotalSegments: Segment: %d is not less than TotalSegments: %d", *segment, *total)
	}
	return nil
}

// segmentItem is an item of a segment to evaluate: its table key, and the
// table key of the item scanned just before it in minidyn's order (nil for
// the first item of the table), or the request's ExclusiveStartKey.
type segmentItem struct {
	after, key map[string]json.RawMessage
}

// segmentKeys lists, with key-only Scans of minidyn, the items of the
// segment after the request's ExclusiveStartKey: at most limit of them
// (all when limit is 0). It returns them, or the error response of a Scan.
func (f *front) segmentKeys(ctx context.Context, req *scanRequest, names []string, segment, total int64, limit int) ([]segmentItem, *response) {
	aliases := make(map[string]string, len(names))
	projection := ""
	for i, name := range names {
		alias := "#k" + strconv.Itoa(i)
		aliases[alias] = name
		if i > 0 {
			projection += ", "
		}
		projection += alias
	}
	var todo []segmentItem
	prev := req.ExclusiveStartKey
	start := req.ExclusiveStartKey
	for {
		resp := callJSON(ctx, f.inner, "Scan", struct {
			TableName                *string
			IndexName                *string                    `json:",omitempty"`
			ExclusiveStartKey        map[string]json.RawMessage `json:",omitempty"`
			Limit                    int
			ProjectionExpression     string
			ExpressionAttributeNames map[string]string
		}{req.TableName, req.IndexName, start, keyListLimit, projection, aliases})
		if !resp.ok() {
			return nil, resp
		}
		var page struct {
			Items            []map[string]json.RawMessage
			LastEvaluatedKey map[string]json.RawMessage
		}
		if err := json.Unmarshal(resp.body.Bytes(), &page); err != nil {
			return nil, errorResponse(http.StatusInternalServerError, "InternalServerError", "localstack: parallel Scan: listing keys: "+err.Error())
		}
		for _, key := range page.Items {
			if s, ok := segmentOf(key[names[0]], total); ok && s == segment {
				todo = append(todo, segmentItem{after: prev, key: key})
				if len(todo) == limit {
					return todo, nil
				}
			}
			prev = key
		}
		if len(page.LastEvaluatedKey) == 0 || len(page.Items) == 0 {
			return todo, nil
		}
		start = page.LastEvaluatedKey
	}
}

// evaluateOne runs the Scan plain (a request without segments) on exactly
// the item e.key: from e.after with Limit 1. It returns the items of that
// Scan (none when FilterExpression rejected the item), the key minidyn
// reports as LastEvaluatedKey (for a scan of an index, with the index's
// key attributes), or the error response.
func (f *front) evaluateOne(ctx context.Context, plain object, e segmentItem, names []string) ([]json.RawMessage, map[string]json.RawMessage, *response) {
	one := maps.Clone(plain)
	delete(one, "Select")
	one["Limit"] = json.RawMessage("1")
	delete(one, "ExclusiveStartKey")
	if e.after != nil {
		if err := one.set("ExclusiveStartKey", e.after); err != nil {
			return nil, nil, errorResponse(http.StatusInternalServerError, "InternalServerError", err.Error())
		}
	}
	resp := callJSON(ctx, f.inner, "Scan", one)
	if !resp.ok() {
		return nil, nil, resp
	}
	var page struct {
		Items            []json.RawMessage
		LastEvaluatedKey map[string]json.RawMessage
	}
	if err := json.Unmarshal(resp.body.Bytes(), &page); err != nil {
		return nil, nil, errorResponse(http.StatusInternalServerError, "InternalServerError", "localstack: parallel Scan: "+err.Error())
	}
	for _, name := range names {
		if !bytes.Equal(page.LastEvaluatedKey[name], e.key[name]) {
			return nil, nil, errorResponse(http.StatusInternalServerError, "InternalServerError",
				fmt.Sprintf("localstack: parallel Scan: evaluated the item after %s, not %s", page.LastEvaluatedKey[name], e.key[name]))
		}
	}
	return page.Items, page.LastEvaluatedKey, nil
}

// segmentOf returns the segment, of total, of an item whose partition key
// has the value v (a DynamoDB JSON attribute value): the 64-bit FNV-1a hash
// of its type and value (the string, the number as written, the bytes),
// modulo total. It returns false when v is not a string, number or binary
// value.
func segmentOf(v json.RawMessage, total int64) (int64, bool) {
	var av struct {
		S, N *string
		B    []byte
	}
	if json.Unmarshal(v, &av) != nil {
		return 0, false
	}
	h := fnv.New64a()
	switch {
	case av.S != nil:
		h.Write([]byte{'S', 0})
		h.Write([]byte(*av.S))
	case av.N != nil:
		h.Write([]byte{'N', 0})
		h.Write([]byte(*av.N))
	case av.B != nil:
		h.Write([]byte{'B', 0})
		h.Write(av.B)
	default:
		return 0, false
	}
	return int64(h.Sum64() % uint64(total)), true
}

// itemsSize returns the sum of the sizes of the whole items of table whose
// keys are listed in todo.
func (f *front) itemsSize(table string, todo []segmentItem) int {
	t := f.eng.table(table)
	if t == nil {
		return 0
	}
	n := 0
	for _, e := range todo {
		key, ok := wireKey(e.key)
		if !ok {
			continue
		}
		if k, ok := tableKey(t, typesItem(key)); ok {
			n += itemSize(t.Data[k])
		}
	}
	return n
}
