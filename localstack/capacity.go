package localstack

import (
	"encoding/json"
	"math"
	"sort"

	"github.com/truora/minidyn/core"
	"github.com/truora/minidyn/server"
	mtypes "github.com/truora/minidyn/types"
)

// Consumed capacity. DynamoDB reports the capacity units a call consumed
// when it asks (ReturnConsumedCapacity TOTAL or INDEXES); minidyn never
// does. The front adds an estimate by DynamoDB's documented rules, with
// item sizes computed as DynamoDB computes them (see itemSize):
//
//   - Reads (Developer Guide, "DynamoDB read consumption",
//     https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html):
//     GetItem is charged the size of the whole item (whatever its
//     projection), rounded up to 4 KB, at least 4 KB even when there is no
//     item; Scan and Query the sum of the sizes of the items read (all the
//     items evaluated, before any filter, whole whatever the projection),
//     rounded up to 4 KB once per request, at least 4 KB. One unit per
//     4 KB, half for eventually consistent reads.
//   - A Query on a global secondary index ("Provisioned throughput
//     considerations for global secondary indexes", Reads,
//     https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations.Reads)
//     is charged as a Query of a table, on the sizes of the index entries
//     (the attributes the index projects) instead of the items; it is
//     always eventually consistent.
//   - Writes (same guide, "DynamoDB write consumption"): PutItem and
//     UpdateItem are charged the larger of the item before and after the
//     write, DeleteItem the item deleted, one unit per 1 KB rounded up, at
//     least one. Each action of TransactWriteItems costs twice that.
//   - Index writes (GSI.html#GSI.ThroughputConsiderations.Writes): for each
//     global secondary index, a write that puts an item into the index (a
//     new item with both index key attributes, or an update that adds
//     them) costs one index write; one that removes it from the index
//     costs one; one that changes its index key value costs two (a delete
//     of the old entry and a put of the new); one that changes only
//     attributes the index projects costs one; one that leaves the entry
//     as it was costs none. Each index write costs one unit per 1 KB of
//     the index entry, at least one. DynamoDB propagates a transaction's
//     changes to its indexes after the transaction (Developer Guide,
//     "Amazon DynamoDB Transactions: How it works"), so the front charges
//     them as standard writes there too.
//
// TOTAL reports the sum in CapacityUnits and in ReadCapacityUnits or
// WriteCapacityUnits; INDEXES adds Table and GlobalSecondaryIndexes with
// each part. A failed request reports nothing. It is an estimate for code
// that reports capacity (the sweeper, benchmarks), not a bill.

type capacityRequest struct {
	TableName              string                            `json:"TableName"`
	IndexName              string                            `json:"IndexName"`
	ReturnConsumedCapacity string                            `json:"ReturnConsumedCapacity"`
	ConsistentRead         bool                              `json:"ConsistentRead"`
	Item                   map[string]*server.AttributeValue `json:"Item"`
	Key                    map[string]*server.AttributeValue `json:"Key"`
	ExclusiveStartKey      map[string]*server.AttributeValue `json:"ExclusiveStartKey"`
	TransactItems          []struct {
		Put, Update, Delete, ConditionCheck *struct {
			TableName string                            `json:"TableName"`
			Item      map[string]*server.AttributeValue `json:"Item"`
			Key       map[string]*server.AttributeValue `json:"Key"`
		}
	} `json:"TransactItems"`
}

// units is the capacity of one table in a response.
type units struct {
	CapacityUnits      float64 `json:"CapacityUnits"`
	ReadCapacityUnits  float64 `json:"ReadCapacityUnits,omitempty"`
	WriteCapacityUnits float64 `json:"WriteCapacityUnits,omitempty"`
}

type consumed struct {
	TableName string `json:"TableName"`
	units
	Table                  *units           `json:"Table,omitempty"`
	GlobalSecondaryIndexes map[string]units `json:"GlobalSecondaryIndexes,omitempty"`
}

// footprint is what a write's capacity depends on of one item, before or
// after the write.
type footprint struct {
	exists  bool
	size    int
	entries map[string]indexEntry // by index name; absent: not in the index
}

type indexEntry struct {
	key     string // the index key, as minidyn spells it
	size    int
	content string // the projected entry, as canonical JSON
}

// writeTarget is one item a write request changes.
type writeTarget struct {
	table  string
	key    string
	factor float64 // 2 in a transaction
	check  bool    // a ConditionCheck: charged as a write of nothing
	before footprint
}

// meter measures the capacity of one request. The caller holds f.mu from
// startMeter to finish.
type meter struct {
	op      string
	req     capacityRequest
	targets []writeTarget
}

// startMeter returns the meter of a request that asked for consumed
// capacity, having taken the footprints of the items it will write, or nil.
func (f *front) startMeter(op string, body []byte) *meter {
	m := &meter{op: op}
	if json.Unmarshal(body, &m.req) != nil || (m.req.ReturnConsumedCapacity != "TOTAL" && m.req.ReturnConsumedCapacity != "INDEXES") {
		return nil
	}
	add := func(table string, key map[string]*server.AttributeValue, factor float64, check bool) {
		t := f.eng.table(table)
		w := writeTarget{table: table, factor: factor, check: check}
		if t != nil {
			if k, ok := tableKey(t, typesItem(key)); ok {
				w.key = k
				w.before = footprintOf(t, t.Data[k])
			}
		}
		m.targets = append(m.targets, w)
	}
	switch op {
	case "PutItem":
		add(m.req.TableName, m.req.Item, 1, false)
	case "UpdateItem", "DeleteItem":
		add(m.req.TableName, m.req.Key, 1, false)
	case "TransactWriteItems":
		for _, it := range m.req.TransactItems {
			switch {
			case it.Put != nil:
				add(it.Put.TableName, it.Put.Item, 2, false)
			case it.Update != nil:
				add(it.Update.TableName, it.Update.Key, 2, false)
			case it.Delete != nil:
				add(it.Delete.TableName, it.Delete.Key, 2, false)
			case it.ConditionCheck != nil:
				add(it.ConditionCheck.TableName, it.ConditionCheck.Key, 2, true)
			}
		}
	}
	return m
}

// footprintOf returns the footprint of item (nil: no item) in table t.
func footprintOf(t *core.Table, item map[string]*mtypes.Item) footprint {
	if item == nil {
		return footprint{}
	}
	fp := footprint{exists: true, size: itemSize(item)}
	for name := range t.Indexes {
		x, ok := indexOf(t, name)
		if !ok || !x.global {
			continue
		}
		key, in := x.entry(t, item)
		if !in {
			continue
		}
		projected := x.project(item)
		content, _ := json.Marshal(wireFromTypes(projected))
		if fp.entries == nil {
			fp.entries = map[string]indexEntry{}
		}
		fp.entries[name] = indexEntry{key: key, size: itemSize(projected), content: string(content)}
	}
	return fp
}

func readUnits(bytes int, consistent bool) float64 {
	u := math.Max(math.Ceil(float64(bytes)/4096), 1)
	if !consistent {
		u /= 2
	}
	return u
}

func writeUnits(bytes int) float64 { return math.Max(math.Ceil(float64(bytes)/1024), 1) }

// indexWrites returns the write units the change from b to a costs index
// name.
func indexWrites(b, a footprint, name string) float64 {
	be, bin := b.entries[name]
	ae, ain := a.entries[name]
	switch {
	case !bin && !ain:
		return 0
	case !bin:
		return writeUnits(ae.size)
	case !ain:
		return writeUnits(be.size)
	case be.key != ae.key:
		return writeUnits(be.size) + writeUnits(ae.size)
	case be.content != ae.content:
		return writeUnits(ae.size)
	}
	return 0
}

// finish adds ConsumedCapacity to a successful response. read is the
// number of bytes a Query or Scan answered by the front itself read (-1:
// minidyn answered it).
func (m *meter) finish(f *front, resp *response, read int) {
	if !resp.ok() {
		return
	}
	out, err := decodeObject(resp.body.Bytes())
	if err != nil {
		return
	}
	req := &m.req
	indexes := req.ReturnConsumedCapacity == "INDEXES"
	t := f.eng.table(req.TableName)
	var value any
	switch m.op {
	case "GetItem":
		size := 0
		if t != nil {
			if k, ok := tableKey(t, typesItem(req.Key)); ok {
				size = itemSize(t.Data[k])
			}
		}
		value = readConsumed(req.TableName, "", readUnits(size, req.ConsistentRead), indexes)
	case "Scan", "Query":
		if read < 0 {
			read = minidynRead(t, m.op, req, out)
		}
		consistent := req.ConsistentRead && req.IndexName == ""
		value = readConsumed(req.TableName, req.IndexName, readUnits(read, consistent), indexes)
	case "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems":
		value = m.writeConsumed(f, indexes)
	default:
		return
	}
	if out.set("ConsumedCapacity", value) == nil {
		_ = resp.setJSON(out)
	}
}

// readConsumed is the ConsumedCapacity of a read of u units of table (or
// of its index, when index is set).
func readConsumed(table, index string, u float64, indexes bool) consumed {
	c := consumed{TableName: table, units: units{CapacityUnits: u, ReadCapacityUnits: u}}
	if indexes {
		if index == "" {
			c.Table = &units{CapacityUnits: u, ReadCapacityUnits: u}
		} else {
			c.Table = &units{}
			c.GlobalSecondaryIndexes = map[string]units{index: {CapacityUnits: u, ReadCapacityUnits: u}}
		}
	}
	return c
}

// writeConsumed is the ConsumedCapacity of a write request whose targets
// have been applied: one entry for PutItem, UpdateItem and DeleteItem, a
// list by table for TransactWriteItems.
func (m *meter) writeConsumed(f *front, indexes bool) any {
	type sum struct {
		table float64
		index map[string]float64
	}
	per := map[string]*sum{}
	var order []string
	for _, w := range m.targets {
		s := per[w.table]
		if s == nil {
			s = &sum{index: map[string]float64{}}
			per[w.table] = s
			order = append(order, w.table)
		}
		if w.check {
			s.table += w.factor * writeUnits(0)
			continue
		}
		var after footprint
		if t := f.eng.table(w.table); t != nil && w.key != "" {
			after = footprintOf(t, t.Data[w.key])
		}
		s.table += w.factor * writeUnits(max(w.before.size, after.size))
		names := map[string]bool{}
		for name := range w.before.entries {
			names[name] = true
		}
		for name := range after.entries {
			names[name] = true
		}
		for name := range names {
			s.index[name] += indexWrites(w.before, after, name)
		}
	}
	list := make([]consumed, 0, len(order))
	for _, table := range order {
		s := per[table]
		total := s.table
		c := consumed{TableName: table}
		if indexes {
			c.Table = &units{CapacityUnits: s.table, WriteCapacityUnits: s.table}
		}
		names := make([]string, 0, len(s.index))
		for name := range s.index {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			u := s.index[name]
			total += u
			if indexes {
				if c.GlobalSecondaryIndexes == nil {
					c.GlobalSecondaryIndexes = map[string]units{}
				}
				c.GlobalSecondaryIndexes[name] = units{CapacityUnits: u, WriteCapacityUnits: u}
			}
		}
		c.units = units{CapacityUnits: total, WriteCapacityUnits: total}
		list = append(list, c)
	}
	if m.op != "TransactWriteItems" && len(list) == 1 {
		return list[0]
	}
	return list
}

// minidynRead returns the bytes read by a Scan or Query that minidyn
// answered. A Scan of a table read the ScannedCount items that follow
// ExclusiveStartKey in minidyn's order, whole; for a Query of a table, or a
// Scan of an index, the front counts the whole items of the items returned
// (an underestimate when a filter rejected some), or, when their keys are
// not in the response, the items returned as they are.
func minidynRead(t *core.Table, op string, req *capacityRequest, out object) int {
	if t == nil {
		return 0
	}
	if op == "Scan" && req.IndexName == "" {
		scanned := int(countMember(out, "ScannedCount"))
		if scanned == 0 {
			scanned = int(countMember(out, "Count"))
		}
		i := 0
		if len(req.ExclusiveStartKey) > 0 {
			start, ok := tableKey(t, typesItem(req.ExclusiveStartKey))
			if !ok {
				return 0
			}
			i = sort.SearchStrings(t.SortedKeys, start)
			if i < len(t.SortedKeys) && t.SortedKeys[i] == start {
				i++
			}
		}
		n := 0
		for j := i; j < len(t.SortedKeys) && j < i+scanned; j++ {
			n += itemSize(t.Data[t.SortedKeys[j]])
		}
		return n
	}
	var items []map[string]*server.AttributeValue
	_ = json.Unmarshal(out["Items"], &items)
	n := 0
	for _, it := range items {
		item := typesItem(it)
		if k, ok := tableKey(t, item); ok && t.Data[k] != nil {
			n += itemSize(t.Data[k])
		} else {
			n += itemSize(item)
		}
	}
	return n
}
