package localstack

import (
	"context"
	"encoding/json"
	"regexp"
)

// searchRequest is the part of a Scan or Query request the front inspects.
type searchRequest struct {
	FilterExpression *string
	Select           string
}

// afterSearch amends a successful Scan or Query response. With Select COUNT
// it removes Items. When minidyn reported ScannedCount 0 it fills it in: with
// Count when the request has no filter, because then every item evaluated
// is returned; otherwise with the Count of the same request run again
// without FilterExpression, which evaluates the same items and returns them
// all. A response the front cannot amend is left as minidyn wrote it.
func (f *front) afterSearch(ctx context.Context, op string, body []byte, resp *response) {
	if f.opts.DisableScanCounts || !resp.ok() {
		return
	}
	var req searchRequest
	if json.Unmarshal(body, &req) != nil {
		return
	}
	out, err := decodeObject(resp.body.Bytes())
	if err != nil {
		return
	}
	changed := false
	if req.Select == selectCount {
		if _, ok := out["Items"]; ok {
			delete(out, "Items")
			changed = true
		}
	}
	if countMember(out, "ScannedCount") == 0 {
		scanned := countMember(out, "Count")
		filtered := req.FilterExpression != nil && *req.FilterExpression != ""
		if filtered {
			scanned = f.unfilteredCount(ctx, op, body)
		}
		if scanned > 0 {
			if out.set("ScannedCount", scanned) == nil {
				changed = true
			}
		}
	}
	if changed {
		_ = resp.setJSON(out)
	}
}

// countMember returns the integer member k of o, or 0.
func countMember(o object, k string) int64 {
	var v int64
	_ = json.Unmarshal(o[k], &v)
	return v
}

// placeholder matches expression attribute name and value placeholders.
var placeholder = regexp.MustCompile(`[#:][A-Za-z0-9_]+`)

// unfilteredCount runs the Scan or Query (op) request body again without its
// filter, projection and Select, dropping the expression attribute names
// and values only the filter used, and returns the Count of that response,
// or 0 when it fails.
func (f *front) unfilteredCount(ctx context.Context, op string, body []byte) int64 {
	req, err := decodeObject(body)
	if err != nil {
		return 0
	}
	for _, k := range []string{"FilterExpression", "ProjectionExpression", "AttributesToGet", "Select", "ReturnConsumedCapacity"} {
		delete(req, k)
	}
	var keyCondition string
	_ = json.Unmarshal(req["KeyConditionExpression"], &keyCondition)
	used := map[string]bool{}
	for _, p := range placeholder.FindAllString(keyCondition, -1) {
		used[p] = true
	}
	for _, member := range []string{"ExpressionAttributeNames", "ExpressionAttributeValues"} {
		var m map[string]json.RawMessage
		if json.Unmarshal(req[member], &m) != nil {
			delete(req, member)
			continue
		}
		for k := range m {
			if !used[k] {
				delete(m, k)
			}
		}
		if len(m) == 0 {
			delete(req, member)
		} else if req.set(member, m) != nil {
			return 0
		}
	}
	resp := callJSON(ctx, f.inner, op, req)
	if !resp.ok() {
		return 0
	}
	out, err := decodeObject(resp.body.Bytes())
	if err != nil {
		return 0
	}
	return countMember(out, "Count")
}
