package localstack

import (
	"cmp"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/truora/minidyn/types"
)

// table is one table: its items by item key, the primary key and each
// index as a view by partition, and the item keys in scan order.
type table struct {
	name    string
	created time.Time
	attrs   map[string]string // attribute definitions: name -> S, N or B
	primary *view
	indexes map[string]*view // global secondary indexes by name
	items   map[string]map[string]*types.Item
	billing string

	ttlAttribute string // "" when time to live is disabled
	bytes        int    // the items' total size

	order []string // item keys in scan order; may hold deleted keys
	added []string // keys of items added since order was sorted
}

type view struct {
	name      string // "" for the primary key
	hash, rng string // key attribute names; rng is "" without a sort key
	project   string // ALL, KEYS_ONLY or INCLUDE
	include   []string
	parts     map[string]map[string]struct{} // partition key -> item keys
	count     int                            // entries in the view
	// ordered caches partitions in sort key order, dropped when an item
	// enters one; it may hold items that left since.
	ordered map[string][]sorted
}

// keyOf returns the item key of it, or false if it lacks a typed key.
func (t *table) keyOf(it map[string]*types.Item) (string, bool) {
	h, ok := t.keyPart(it, t.primary.hash)
	if !ok {
		return "", false
	}
	if t.primary.rng == "" {
		return h, true
	}
	r, ok := t.keyPart(it, t.primary.rng)
	return h + "\x00" + r, ok
}

func (t *table) keyPart(it map[string]*types.Item, name string) (string, bool) {
	v := it[name]
	if scalarType(v) == "" || scalarType(v) != t.attrs[name] {
		return "", false
	}
	k := keyString(v)
	return strconv.Itoa(len(k)) + ":" + k, true
}

func (t *table) keyAttrs(it map[string]*types.Item) map[string]*types.Item {
	k := map[string]*types.Item{}
	for _, name := range []string{t.primary.hash, t.primary.rng} {
		if v := it[name]; v != nil {
			k[name] = v
		}
	}
	return k
}

// entry returns it as x holds it (nil: not in x) and its partition.
func (t *table) entry(x *view, it map[string]*types.Item) (map[string]*types.Item, string) {
	part, ok := t.keyPart(it, x.hash)
	if !ok || (x.rng != "" && scalarType(it[x.rng]) != t.attrs[x.rng]) {
		return nil, ""
	}
	if x.project == "ALL" {
		return it, part
	}
	e := t.keyAttrs(it)
	e[x.hash] = it[x.hash]
	if x.rng != "" {
		e[x.rng] = it[x.rng]
	}
	for _, name := range x.include {
		if v, ok := it[name]; ok {
			e[name] = v
		}
	}
	return e, part
}

func (t *table) views() []*view {
	vs := []*view{t.primary}
	for _, name := range t.indexNames() {
		vs = append(vs, t.indexes[name])
	}
	return vs
}

func (t *table) indexNames() []string { return slices.Sorted(maps.Keys(t.indexes)) }

// set stores it (nil: deletes) under key, keeping the views.
func (t *table) set(key string, it map[string]*types.Item) {
	old, existed := t.items[key]
	for _, x := range t.views() {
		if existed {
			if _, part := t.entry(x, old); part != "" {
				x.count--
				delete(x.parts[part], key)
				if len(x.parts[part]) == 0 {
					delete(x.parts, part)
				}
			}
		}
		if it != nil {
			x.place(t, key, it)
		}
	}
	t.bytes -= itemSize(old)
	if it == nil {
		delete(t.items, key)
		return
	}
	t.bytes += itemSize(it)
	t.items[key] = it
	if !existed {
		t.added = append(t.added, key)
	}
}

func (x *view) place(t *table, key string, it map[string]*types.Item) {
	if _, part := t.entry(x, it); part != "" {
		if x.parts[part] == nil {
			x.parts[part] = map[string]struct{}{}
		}
		x.parts[part][key] = struct{}{}
		x.count++
		delete(x.ordered, part)
	}
}

type sorted struct {
	key string
	rng *types.Item
	num *big.Rat // rng's value when it is a number
}

// partition returns x's partition part in sort key order, then by item
// key, perhaps with items that left it since.
func (x *view) partition(t *table, part string) []sorted {
	if list, ok := x.ordered[part]; ok {
		return list
	}
	list := make([]sorted, 0, len(x.parts[part]))
	for key := range x.parts[part] {
		e := sorted{key: key, rng: t.items[key][x.rng]}
		if e.rng != nil && e.rng.N != nil {
			e.num, _ = new(big.Rat).SetString(*e.rng.N)
		}
		list = append(list, e)
	}
	slices.SortFunc(list, func(a, b sorted) int {
		c := 0
		if a.num != nil {
			c = a.num.Cmp(b.num)
		} else if a.rng != nil {
			c = compareKeys(a.rng, b.rng)
		}
		return cmp.Or(c, strings.Compare(a.key, b.key))
	})
	x.ordered[part] = list
	return list
}

// sorted returns the item keys in scan order, perhaps with deleted ones.
func (t *table) sorted() []string {
	if len(t.added) == 0 && len(t.order) <= 2*len(t.items)+64 {
		return t.order // may hold deleted keys, which readers skip
	}
	merged := slices.Concat(t.order, t.added)
	slices.Sort(merged)
	t.order = slices.DeleteFunc(slices.Compact(merged), func(k string) bool { return t.items[k] == nil })
	t.added = nil
	return t.order
}
