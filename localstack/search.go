package localstack

import (
	"hash/fnv"
	"iter"
	"regexp"
	"sort"
	"strings"

	"github.com/truora/minidyn/interpreter"
	"github.com/truora/minidyn/types"
)

// maxPage is the data a Query or Scan reads before it ends its page.
const maxPage = 1 << 20

type searchInput struct {
	expressions
	TableName              string
	IndexName              string
	Limit                  *int
	ExclusiveStartKey      item
	ScanIndexForward       *bool
	Select                 string
	ConsistentRead         bool
	ReturnConsumedCapacity string
	Segment, TotalSegments *int

	t *table
	x *view // the primary key or the index read
}

// candidate is an item a search may read, as its view holds it.
type candidate struct {
	key   string
	entry map[string]*types.Item
	err   error // of the key condition
}

// start decodes and checks a search.
func (e *emulator) start(body []byte) (*searchInput, error) {
	var in searchInput
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	t, err := e.table(in.TableName)
	if err != nil {
		return nil, err
	}
	if err := in.check(); err != nil {
		return nil, err
	}
	if _, err := in.project(nil); err != nil { // refuses reserved words
		return nil, err
	}
	if msg := checkItem(in.ExclusiveStartKey); msg != "" {
		return nil, validation("%s", msg)
	}
	if in.Limit != nil && *in.Limit < 1 {
		return nil, validation("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1", *in.Limit)
	}
	in.t, in.x = t, t.primary
	if in.IndexName != "" {
		if in.x = t.indexes[in.IndexName]; in.x == nil {
			return nil, validation("The table does not have the specified index: %s", in.IndexName)
		}
		if in.ConsistentRead {
			return nil, validation("Consistent reads are not supported on global secondary indexes")
		}
	}
	return &in, nil
}

var equalityPattern = regexp.MustCompile(`(#?[A-Za-z0-9_.]+)\s*=\s*(:[A-Za-z0-9_]+)`)

func (e *emulator) query(body []byte) (any, error) {
	in, err := e.start(body)
	if err != nil {
		return nil, err
	}
	t, x := in.t, in.x
	if in.KeyConditionExpression == "" {
		return nil, validation("Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.")
	}
	var part string
	for _, m := range equalityPattern.FindAllStringSubmatch(in.KeyConditionExpression, -1) {
		name := m[1]
		if alias, ok := in.ExpressionAttributeNames[name]; ok {
			name = alias
		}
		if name == x.hash {
			part, _ = t.keyPart(item{x.hash: in.ExpressionAttributeValues[m[2]]}, x.hash)
		}
	}
	if part == "" {
		return nil, validation("Query condition missed key schema element: %s", x.hash)
	}
	if in.ScanIndexForward != nil && !*in.ScanIndexForward {
		return nil, validation("localstack: the embedded emulator reads a partition forward only (ScanIndexForward false is not modelled)")
	}
	keys := x.partition(t, part)
	first := 0
	if in.ExclusiveStartKey != nil {
		key, ok := t.keyOf(in.ExclusiveStartKey)
		if !ok || (x.rng != "" && scalarType(in.ExclusiveStartKey[x.rng]) == "") {
			return nil, validation("The provided starting key is invalid")
		}
		// The first key read after the start key, whose item may be gone.
		first = sort.Search(len(keys), func(i int) bool {
			k := keys[i]
			c := 0
			if x.rng != "" {
				c = compareKeys(k.rng, in.ExclusiveStartKey[x.rng])
			}
			if c == 0 {
				c = strings.Compare(k.key, key)
			}
			return c > 0
		})
	}
	return e.page(in, func(yield func(candidate) bool) {
		for i := first; i < len(keys); i++ {
			key := keys[i].key
			if _, ok := x.parts[part][key]; !ok {
				continue // left the partition since it was ordered
			}
			entry, _ := t.entry(x, t.items[key])
			ok, err := e.matches(&in.expressions, in.KeyConditionExpression, interpreter.ExpressionTypeKey, entry)
			if (ok || err != nil) && !yield(candidate{key, entry, err}) {
				return
			}
		}
	})
}

func (e *emulator) scan(body []byte) (any, error) {
	in, err := e.start(body)
	if err != nil {
		return nil, err
	}
	t, x := in.t, in.x
	segment, total := 0, 1
	switch {
	case (in.Segment == nil) != (in.TotalSegments == nil):
		return nil, validation("The TotalSegments parameter is required but was not present in the request when Segment parameter is present")
	case in.TotalSegments != nil:
		segment, total = *in.Segment, *in.TotalSegments
		if total < 1 || total > 1000000 || segment < 0 || segment >= total {
			return nil, validation("1 validation error detected: Value '%d' at 'segment' failed to satisfy constraint: Member must be between 0 and TotalSegments - 1 (%d)", segment, total)
		}
	}
	order := t.sorted()
	if in.ExclusiveStartKey != nil {
		key, ok := t.keyOf(in.ExclusiveStartKey)
		if !ok {
			return nil, validation("The provided starting key is invalid")
		}
		if total > 1 && segmentOf(t, in.ExclusiveStartKey, total) != segment {
			return nil, validation("The provided Exclusive start key does not map to the provided segment")
		}
		order = order[sort.Search(len(order), func(i int) bool { return order[i] > key }):]
	}
	return e.page(in, func(yield func(candidate) bool) {
		for _, key := range order {
			it := t.items[key]
			if it == nil || (total > 1 && segmentOf(t, it, total) != segment) {
				continue
			}
			if entry, _ := t.entry(x, it); entry != nil && !yield(candidate{key, entry, nil}) {
				return
			}
		}
	})
}

// segmentOf is FNV-1a-64 of its partition key, modulo total.
func segmentOf(t *table, it map[string]*types.Item, total int) int {
	part, _ := t.keyPart(it, t.primary.hash)
	h := fnv.New64a()
	_, _ = h.Write([]byte(part))
	return int(h.Sum64() % uint64(total))
}

// page reads candidates up to Limit or 1 MB and answers the search.
func (e *emulator) page(in *searchInput, list iter.Seq[candidate]) (any, error) {
	t, x := in.t, in.x
	items := []item{}
	scanned, read := 0, 0
	var last map[string]*types.Item
	var err error
	for c := range list {
		if err = c.err; err != nil {
			break
		}
		if (in.Limit != nil && scanned == *in.Limit) || read >= maxPage {
			break
		}
		last = c.entry
		scanned++
		read += itemSize(c.entry)
		var ok bool
		if ok, err = e.matches(&in.expressions, in.FilterExpression, interpreter.ExpressionTypeFilter, c.entry); err != nil {
			break
		}
		if !ok {
			continue
		}
		var p item
		if p, err = in.project(c.entry); err != nil {
			break
		}
		items = append(items, p)
	}
	if err != nil {
		return nil, err
	}
	out := map[string]any{"Count": len(items), "ScannedCount": scanned}
	if in.Select != "COUNT" {
		out["Items"] = items
	}
	if last != nil && ((in.Limit != nil && scanned == *in.Limit) || read >= maxPage) {
		k := t.keyAttrs(last)
		k[x.hash] = last[x.hash]
		if x.rng != "" {
			k[x.rng] = last[x.rng]
		}
		out["LastEvaluatedKey"] = item(k)
	}
	cap := newCapacity(in.ReturnConsumedCapacity)
	index := ""
	if x != t.primary {
		index = x.name
	}
	cap.read(t.name, index, read, in.ConsistentRead)
	cap.add(out, false)
	return out, nil
}
