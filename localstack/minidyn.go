package localstack

import (
	"fmt"
	"reflect"
	"sort"
	"unsafe"

	"github.com/truora/minidyn/core"
	"github.com/truora/minidyn/server"
	mtypes "github.com/truora/minidyn/types"
)

// Direct access to minidyn's tables. minidyn v0.8.2 keeps its tables in an
// unexported field of server.Client and each secondary index's entries in
// unexported fields of its index type. The front reads them, under its own
// mutex (every request that reaches the engine holds it, so nothing else
// touches the tables meanwhile), for what minidyn's API cannot give in
// time independent of the table's size: the items a Scan read (consumed
// capacity), the items a write replaced (index write capacity), the
// entries of one index partition (Query on a global secondary index), and
// an index's entries rebuilt in one pass (bulk loading, and backfilling an
// index that UpdateTable added, which minidyn leaves empty). These
// accessors are tied to minidyn v0.8.2's layout; the front's tests
// compare their results with minidyn's own answers.

// checkMinidynLayout reports whether minidyn's unexported fields that the
// front reads are there with the types it reads them as: a build with
// another minidyn than v0.8.2 fails when the engine is made, naming the
// field, instead of misreading memory at the first request.
func checkMinidynLayout() error {
	field := func(t reflect.Type, name string, want reflect.Type, kind reflect.Kind) error {
		f, ok := t.FieldByName(name)
		switch {
		case !ok:
			return fmt.Errorf("localstack: minidyn's %s has no field %s: this package reads github.com/truora/minidyn v0.8.2's layout", t, name)
		case want != nil && f.Type != want, want == nil && f.Type.Kind() != kind:
			return fmt.Errorf("localstack: minidyn's %s.%s is a %s: this package reads github.com/truora/minidyn v0.8.2's layout", t, name, f.Type)
		}
		return nil
	}
	str := reflect.TypeOf("")
	idx := reflect.TypeOf(core.Table{}.Indexes).Elem().Elem()
	ks, _ := idx.FieldByName("keySchema")
	for _, err := range []error{
		sameValueLayout(),
		field(reflect.TypeOf(server.Client{}), "tables", reflect.TypeOf(map[string]*core.Table(nil)), 0),
		field(idx, "keySchema", nil, reflect.Struct),
		field(idx, "typ", nil, reflect.String),
		field(idx, "refs", reflect.TypeOf(map[string]string(nil)), 0),
		field(idx, "sortedKeys", reflect.TypeOf([]string(nil)), 0),
	} {
		if err != nil {
			return err
		}
	}
	for _, name := range []string{"HashKey", "RangeKey"} {
		if err := field(ks.Type, name, str, 0); err != nil {
			return err
		}
	}
	return nil
}

// tables returns minidyn's tables by name.
func (e *engine) tables() map[string]*core.Table {
	f := reflect.ValueOf(e.c).Elem().FieldByName("tables")
	return *(*map[string]*core.Table)(unsafe.Pointer(f.UnsafeAddr()))
}

// table returns minidyn's table name, or nil.
func (e *engine) table(name string) *core.Table { return e.tables()[name] }

// keepingKeyOrder runs write, a single PutItem or UpdateItem on table,
// without minidyn's cost of keeping the table's sorted list of item keys
// (minidyn's order of Scan and Query results): minidyn appends a new
// item's key to the list and sorts the whole list again, and even an
// insertion at its place moves half the list, on every item a table
// gains. The list is set aside while write runs, so that minidyn appends
// to and sorts a list of at most the one key write adds, which is then
// kept aside, unsorted, until something reads the list (see sortKeys).
// Neither write reads the list or removes from it; a write that panics
// leaves the list as it was, and the key it added, if any, aside.
func (e *engine) keepingKeyOrder(table string, write func()) {
	t := e.table(table)
	if t == nil {
		write()
		return
	}
	keys := t.SortedKeys
	t.SortedKeys = nil
	defer func() {
		for _, k := range t.SortedKeys {
			e.setAside(t, k)
		}
		t.SortedKeys = keys
	}()
	write()
}

// setAside keeps the key of an item added to t aside, until sortKeys
// merges it into t's sorted list.
func (e *engine) setAside(t *core.Table, key string) {
	if e.pending == nil {
		e.pending = make(map[*core.Table][]string)
	}
	e.pending[t] = append(e.pending[t], key)
}

// sortKeys merges the keys that writes set aside into their tables'
// sorted lists, in time proportional to the list and the keys added
// since. Whatever reads or removes from a list calls it first: the
// engine before minidyn's DeleteItem and before every request it serves
// through minidyn's handler, and the front before every request but
// PutItem and TransactWriteItems (which read no list; their deletes go
// through the engine). minidyn's PutItem and UpdateItem only add to a
// list, which keepingKeyOrder sets aside.
func (e *engine) sortKeys() {
	for t, added := range e.pending {
		sort.Strings(added)
		merged := make([]string, 0, len(t.SortedKeys)+len(added))
		old := t.SortedKeys
		for len(old) > 0 && len(added) > 0 {
			if old[0] <= added[0] {
				merged, old = append(merged, old[0]), old[1:]
			} else {
				merged, added = append(merged, added[0]), added[1:]
			}
		}
		t.SortedKeys = append(append(merged, old...), added...)
	}
	clear(e.pending)
}

// storedItem returns the item of table whose key attributes are key as a
// consistent GetItem of minidyn returns it, copied so that it shares
// nothing with the table, or nil when there is none. It reports false
// where that GetItem fails: no such table, or key is not a valid key of
// it. It reads the table directly, without converting the item twice.
func (e *engine) storedItem(table string, key map[string]*server.AttributeValue) (map[string]*server.AttributeValue, bool) {
	item, ok := e.storedRef(table, key)
	return copyStoredItem(item), ok
}

// storedRef is storedItem without the copy: it returns the table's own
// item, which the caller must not change.
func (e *engine) storedRef(table string, key map[string]*server.AttributeValue) (map[string]*mtypes.Item, bool) {
	t := e.table(table)
	if t == nil {
		return nil, false
	}
	for _, v := range key {
		if v == nil {
			return nil, false // minidyn's GetItem panics on a null key value
		}
	}
	k := typesItem(key)
	if mtypes.ValidateItemMap(k) != nil || t.ValidatePrimaryKeyMap(k) != nil {
		return nil, false
	}
	id, err := t.KeySchema.GetKey(t.AttributesDef, k)
	if err != nil {
		return nil, false
	}
	item := t.Data[id]
	if len(item) == 0 {
		return nil, true
	}
	return item, true
}

// copyStoredItem converts a stored item to a wire item that shares
// nothing with it; nil stays nil.
func copyStoredItem(item map[string]*mtypes.Item) map[string]*server.AttributeValue {
	if item == nil {
		return nil
	}
	out := make(map[string]*server.AttributeValue, len(item))
	for name, v := range item {
		out[name] = copyStored(v)
	}
	return out
}

// copyStored converts a stored value to a wire value that shares nothing
// with it.
func copyStored(v *mtypes.Item) *server.AttributeValue {
	if v == nil {
		return nil
	}
	w := &server.AttributeValue{
		B: cloneBytes(v.B), BOOL: clonePointer(v.BOOL), N: clonePointer(v.N), NULL: clonePointer(v.NULL),
		S: clonePointer(v.S), SS: cloneStrings(v.SS), NS: cloneStrings(v.NS),
	}
	if v.BS != nil {
		w.BS = make([][]byte, len(v.BS))
		for i, b := range v.BS {
			w.BS[i] = cloneBytes(b)
		}
	}
	if v.L != nil {
		w.L = make([]*server.AttributeValue, len(v.L))
		for i, e := range v.L {
			w.L[i] = copyStored(e)
		}
	}
	if v.M != nil {
		w.M = make(map[string]*server.AttributeValue, len(v.M))
		for name, e := range v.M {
			w.M[name] = copyStored(e)
		}
	}
	return w
}

// indexInfo is what the front needs of one of minidyn's secondary indexes.
type indexInfo struct {
	hash, rng string // key attribute names; rng is "" without a sort key
	global    bool
	project   func(map[string]*mtypes.Item) map[string]*mtypes.Item
}

// indexOf returns the schema of t's secondary index name.
func indexOf(t *core.Table, name string) (indexInfo, bool) {
	idx, ok := t.Indexes[name]
	if !ok || idx == nil {
		return indexInfo{}, false
	}
	v := reflect.ValueOf(idx).Elem()
	ks := v.FieldByName("keySchema")
	return indexInfo{
		hash:    ks.FieldByName("HashKey").String(),
		rng:     ks.FieldByName("RangeKey").String(),
		global:  v.FieldByName("typ").String() == "global",
		project: idx.ProjectItem,
	}, true
}

// entry reports whether item has an entry in the index (both key
// attributes, of the types the table defines) and returns the entry's key
// as minidyn spells it.
func (x indexInfo) entry(t *core.Table, item map[string]*mtypes.Item) (string, bool) {
	if !hasKeyAttribute(t, item, x.hash) || (x.rng != "" && !hasKeyAttribute(t, item, x.rng)) {
		return "", false
	}
	if x.rng == "" {
		return keyPart(item[x.hash]), true
	}
	return keyPart(item[x.hash]) + "." + keyPart(item[x.rng]), true
}

// hasKeyAttribute reports whether item has attribute name with the scalar
// type the table's attribute definitions give it.
func hasKeyAttribute(t *core.Table, item map[string]*mtypes.Item, name string) bool {
	v, ok := item[name]
	if !ok || v == nil {
		return false
	}
	switch t.AttributesDef[name] {
	case "S":
		return v.S != nil
	case "N":
		return v.N != nil
	case "B":
		return v.B != nil
	}
	return false
}

// keyPart is a key attribute value as minidyn writes it into its key
// strings (fmt's %v of the value).
func keyPart(v *mtypes.Item) string {
	switch {
	case v.S != nil:
		return *v.S
	case v.N != nil:
		return *v.N
	}
	return fmt.Sprintf("%v", v.B)
}

// tableKey returns the table key string of item as minidyn spells it, or
// false when item lacks a key attribute.
func tableKey(t *core.Table, item map[string]*mtypes.Item) (string, bool) {
	for _, name := range []string{t.KeySchema.HashKey, t.KeySchema.RangeKey} {
		if v, ok := item[name]; ok && v == nil {
			return "", false // minidyn's GetKey panics on a null value
		}
	}
	key, err := t.KeySchema.GetKey(t.AttributesDef, item)
	return key, err == nil && key != ""
}

// rebuildIndexes recomputes every secondary index of t from t's items, in
// time O(N log N): the entries minidyn would hold had each item been put
// one at a time, without the inconsistencies its incremental updates can
// leave (an UpdateItem that adds the index attributes to an item not yet
// in the index overwrites the first entry of the index).
func rebuildIndexes(t *core.Table) {
	for name, idx := range t.Indexes {
		x, _ := indexOf(t, name)
		refs := make(map[string]string, len(t.Data))
		keys := make([]string, 0, len(t.Data))
		for pk, item := range t.Data {
			if k, ok := x.entry(t, item); ok {
				refs[pk] = k
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		v := reflect.ValueOf(idx).Elem()
		setField(v, "refs", reflect.ValueOf(refs))
		setField(v, "sortedKeys", reflect.ValueOf(keys))
	}
}

// setField sets the unexported field name of the struct v to x.
func setField(v reflect.Value, name string, x reflect.Value) {
	f := v.FieldByName(name)
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(x)
}

// typesItem returns the wire item m as minidyn's core types. It copies
// nothing: the two types of attribute value have the same layout (see
// sameValueLayout), so the result is m itself, seen through the other
// type, and what is stored from it shares m's memory. Nothing that decodes
// a request keeps or changes its items once it has been applied.
func typesItem(m map[string]*server.AttributeValue) map[string]*mtypes.Item {
	return *(*map[string]*mtypes.Item)(unsafe.Pointer(&m))
}

// wireView returns a stored item as minidyn's wire type, sharing its
// memory, as typesItem does the other way.
func wireView(m map[string]*mtypes.Item) map[string]*server.AttributeValue {
	return *(*map[string]*server.AttributeValue)(unsafe.Pointer(&m))
}

// typesValue returns v as minidyn's core type, as typesItem does.
func typesValue(v *server.AttributeValue) *mtypes.Item {
	return (*mtypes.Item)(unsafe.Pointer(v))
}

// sameValueLayout reports whether minidyn's wire and core attribute values
// have the same layout, which typesItem relies on (see sameLayout).
func sameValueLayout() error {
	return sameLayout(reflect.TypeFor[server.AttributeValue](), reflect.TypeFor[mtypes.Item]())
}

// sameLayout reports whether the structs wire and core have the same
// fields at the same offsets, of the same types but for each one's
// references to itself, and core's blank fields take no space.
func sameLayout(wire, core reflect.Type) error {
	var same func(a, b reflect.Type) bool
	same = func(a, b reflect.Type) bool {
		switch {
		case a == wire && b == core:
			return true
		case a.Kind() != b.Kind():
			return false
		case a.Kind() == reflect.Pointer || a.Kind() == reflect.Slice:
			return same(a.Elem(), b.Elem())
		case a.Kind() == reflect.Map:
			return a.Key() == b.Key() && same(a.Elem(), b.Elem())
		}
		return a == b
	}
	fields := 0
	for f := range core.Fields() {
		if f.Name == "_" {
			if f.Type.Size() != 0 {
				return fmt.Errorf("localstack: minidyn's %s has a blank field of %d bytes: this package reads github.com/truora/minidyn v0.8.2's layout", core, f.Type.Size())
			}
			continue
		}
		fields++
		w, ok := wire.FieldByName(f.Name)
		if !ok || w.Offset != f.Offset || !same(w.Type, f.Type) {
			return fmt.Errorf("localstack: minidyn's %s.%s does not match %s.%s: this package reads github.com/truora/minidyn v0.8.2's layout", core, f.Name, wire, f.Name)
		}
	}
	if fields != wire.NumField() || wire.Size() != core.Size() {
		return fmt.Errorf("localstack: minidyn's %s and %s differ in their fields: this package reads github.com/truora/minidyn v0.8.2's layout", core, wire)
	}
	return nil
}

// wireFromTypes converts an item of minidyn's core types to a wire item.
func wireFromTypes(m map[string]*mtypes.Item) map[string]*server.AttributeValue {
	if m == nil {
		return nil
	}
	out := make(map[string]*server.AttributeValue, len(m))
	for k, v := range m {
		out[k] = wireFromTypesValue(v)
	}
	return out
}

func wireFromTypesValue(v *mtypes.Item) *server.AttributeValue {
	if v == nil {
		return nil
	}
	w := &server.AttributeValue{B: v.B, BOOL: v.BOOL, BS: v.BS, N: v.N, NS: v.NS, NULL: v.NULL, S: v.S, SS: v.SS, M: wireFromTypes(v.M)}
	if v.L != nil {
		w.L = make([]*server.AttributeValue, len(v.L))
		for i, e := range v.L {
			w.L[i] = wireFromTypesValue(e)
		}
	}
	return w
}
