package localstack

import (
	"math"
)

// Consumed capacity is estimated by DynamoDB's documented rules
// (developerguide/read-write-operations.html, GSI.html): a read is one unit
// per 4 KB, at least one, half when eventually consistent (Query and Scan:
// the entries evaluated before filtering, rounded once); a write one unit
// per 1 KB of the larger of the item before and after, twice in a
// transaction; each index one write per 1 KB of an entry put, removed or
// changed, two when its key changes.

// capacity accumulates the units of one request, by table.
type capacity struct {
	mode   string // "", TOTAL, INDEXES or NONE
	tables []*consumed
}

type consumed struct {
	table       string
	read, write float64
	indexes     map[string][2]float64 // read, write units by index
}

func newCapacity(mode string) *capacity { return &capacity{mode: mode} }

func (c *capacity) of(table string) *consumed {
	for _, u := range c.tables {
		if u.table == table {
			return u
		}
	}
	u := &consumed{table: table, indexes: map[string][2]float64{}}
	c.tables = append(c.tables, u)
	return u
}

func readUnits(bytes int, consistent bool) float64 {
	u := math.Max(math.Ceil(float64(bytes)/4096), 1)
	if !consistent {
		u /= 2
	}
	return u
}

func writeUnits(bytes int) float64 { return math.Max(math.Ceil(float64(bytes)/1024), 1) }

func (c *capacity) read(table, index string, bytes int, consistent bool) {
	u := c.of(table)
	if index == "" {
		u.read += readUnits(bytes, consistent)
		return
	}
	r := u.indexes[index]
	r[0] += readUnits(bytes, false)
	u.indexes[index] = r
}

// write adds the change w, factor times for the table.
func (c *capacity) write(w *change, factor float64) {
	u := c.of(w.t.name)
	u.write += factor * writeUnits(max(itemSize(w.old), itemSize(w.new)))
	for name, x := range w.t.indexes {
		before, bpart := w.t.entry(x, w.old)
		after, apart := w.t.entry(x, w.new)
		var n float64
		switch {
		case before == nil && after == nil:
			continue
		case before == nil:
			n = writeUnits(itemSize(after))
		case after == nil:
			n = writeUnits(itemSize(before))
		case bpart != apart || (x.rng != "" && !sameItem(item{x.rng: w.old[x.rng]}, item{x.rng: w.new[x.rng]})):
			n = writeUnits(itemSize(before)) + writeUnits(itemSize(after))
		case !sameItem(before, after):
			n = writeUnits(itemSize(after))
		}
		r := u.indexes[name]
		r[1] += n
		u.indexes[name] = r
	}
}

// add sets out's ConsumedCapacity: one entry, or a list when list.
func (c *capacity) add(out map[string]any, list bool) {
	if c.mode != "TOTAL" && c.mode != "INDEXES" {
		return
	}
	units := func(r, w float64) map[string]float64 {
		m := map[string]float64{"CapacityUnits": r + w}
		if r > 0 {
			m["ReadCapacityUnits"] = r
		}
		if w > 0 {
			m["WriteCapacityUnits"] = w
		}
		return m
	}
	all := []map[string]any{}
	for _, u := range c.tables {
		r, w := u.read, u.write
		gsi := map[string]any{}
		for name, x := range u.indexes {
			r, w = r+x[0], w+x[1]
			gsi[name] = units(x[0], x[1])
		}
		e := map[string]any{"TableName": u.table}
		for k, v := range units(r, w) {
			e[k] = v
		}
		if c.mode == "INDEXES" {
			e["Table"] = units(u.read, u.write)
			if len(gsi) > 0 {
				e["GlobalSecondaryIndexes"] = gsi
			}
		}
		all = append(all, e)
	}
	switch {
	case list:
		out["ConsumedCapacity"] = all
	case len(all) == 1:
		out["ConsumedCapacity"] = all[0]
	}
}
