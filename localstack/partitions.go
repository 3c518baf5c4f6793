package localstack

import (
	"encoding/json"

	"github.com/truora/minidyn/core"
	"github.com/truora/minidyn/server"
	mtypes "github.com/truora/minidyn/types"
)

// The partitions of global secondary indexes, for Query. Reading a
// partition by looking at every item of the table costs a memory access
// per item (a fifth of a second per Query at 200,000 items), so the front
// keeps, for each index it has answered a Query on, the table keys of the
// items of each partition key value. It is built on the first Query of the
// index and kept current from the keys each write request names: after
// every PutItem, UpdateItem, DeleteItem, BatchWriteItem and
// TransactWriteItems the items of the keys it names are looked at again
// (their entry may have moved, appeared or gone); a bulk load, and any
// CreateTable, UpdateTable or DeleteTable, drops the table's partitions.
// The members of a partition are candidates: indexQuery checks each
// against the item itself, so a member whose item changed in a way the
// front missed is never answered wrongly; only an item added behind the
// front's back would be missed, and every write reaches minidyn through
// the front.

// tableParts are the partitions of one table's indexes, and the table
// keys written since they were last brought up to date.
type tableParts struct {
	byIndex map[string]*partitions
	dirty   map[string]struct{}
}

// partitions maps each partition key value (hashKey) to the table keys of
// its items, and each item to its partition key value.
type partitions struct {
	members map[string]map[string]struct{}
	of      map[string]string
}

// hashKey is the partition key value v as a map key.
func hashKey(v *mtypes.Item) string {
	switch {
	case v.S != nil:
		return "S" + *v.S
	case v.N != nil:
		return "N" + canonicalNumber(*v.N)
	case v.B != nil:
		return "B" + string(v.B)
	}
	return ""
}

// canonicalNumber spells equal numbers alike.
func canonicalNumber(s string) string {
	if r, ok := parseNumber(s); ok {
		return r.RatString()
	}
	return s
}

// partitionOf returns the members of the partition value of index x of
// table t, building or updating the front's copy first. The caller holds
// f.mu.
func (f *front) partitionOf(t *core.Table, name string, x indexInfo, value *mtypes.Item) map[string]struct{} {
	tp := f.parts[t.Name]
	if tp == nil {
		tp = &tableParts{byIndex: map[string]*partitions{}, dirty: map[string]struct{}{}}
		f.parts[t.Name] = tp
	}
	p := tp.byIndex[name]
	if p == nil {
		p = &partitions{members: map[string]map[string]struct{}{}, of: map[string]string{}}
		for pk, item := range t.Data {
			p.place(t, x, pk, item)
		}
		tp.byIndex[name] = p
	}
	if len(tp.dirty) > 0 {
		for iname, ip := range tp.byIndex {
			ix, ok := indexOf(t, iname)
			for pk := range tp.dirty {
				ip.remove(pk)
				if ok {
					ip.place(t, ix, pk, t.Data[pk])
				}
			}
		}
		clear(tp.dirty)
	}
	return p.members[hashKey(value)]
}

func (p *partitions) place(t *core.Table, x indexInfo, pk string, item map[string]*mtypes.Item) {
	if item == nil {
		return
	}
	if _, in := x.entry(t, item); !in {
		return
	}
	h := hashKey(item[x.hash])
	m := p.members[h]
	if m == nil {
		m = map[string]struct{}{}
		p.members[h] = m
	}
	m[pk] = struct{}{}
	p.of[pk] = h
}

func (p *partitions) remove(pk string) {
	h, ok := p.of[pk]
	if !ok {
		return
	}
	delete(p.of, pk)
	delete(p.members[h], pk)
	if len(p.members[h]) == 0 {
		delete(p.members, h)
	}
}

// written records the table keys a request may have changed, so that the
// partitions are updated before the next Query. The caller holds f.mu.
func (f *front) written(op string, body []byte) {
	switch op {
	case "CreateTable", "UpdateTable", "DeleteTable", "BulkPutItems":
		var req tableRequest
		if json.Unmarshal(body, &req) == nil && req.TableName != nil {
			delete(f.parts, *req.TableName)
		}
		return
	case "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems":
	default:
		return
	}
	if len(f.parts) == 0 {
		return
	}
	type keyed struct {
		TableName string
		Item, Key map[string]*server.AttributeValue
	}
	var req struct {
		keyed
		RequestItems map[string][]struct {
			PutRequest *struct {
				Item map[string]*server.AttributeValue
			}
			DeleteRequest *struct {
				Key map[string]*server.AttributeValue
			}
		}
		TransactItems []struct{ Put, Update, Delete *keyed }
	}
	if json.Unmarshal(body, &req) != nil {
		return
	}
	mark := func(table string, key map[string]*server.AttributeValue) {
		tp := f.parts[table]
		t := f.eng.table(table)
		if tp == nil || t == nil || key == nil {
			return
		}
		if k, ok := tableKey(t, typesItem(key)); ok {
			tp.dirty[k] = struct{}{}
		} else {
			delete(f.parts, table) // a key the front cannot read: start again
		}
	}
	mark(req.TableName, req.Item)
	mark(req.TableName, req.Key)
	for table, reqs := range req.RequestItems {
		for _, r := range reqs {
			if r.PutRequest != nil {
				mark(table, r.PutRequest.Item)
			}
			if r.DeleteRequest != nil {
				mark(table, r.DeleteRequest.Key)
			}
		}
	}
	for _, it := range req.TransactItems {
		for _, a := range []*keyed{it.Put, it.Update, it.Delete} {
			if a != nil {
				mark(a.TableName, a.Item)
				mark(a.TableName, a.Key)
			}
		}
	}
}
