package localstack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"

	"github.com/truora/minidyn/interpreter"
	"github.com/truora/minidyn/server"
	mtypes "github.com/truora/minidyn/types"
)

// maxPageBytes is the size of the items a Query or Scan page reads at most,
// from the DynamoDB API reference: 1 MB.
const maxPageBytes = 1 << 20

// indexQueryRequest is a Query request as the front answers it on a global
// secondary index.
type indexQueryRequest struct {
	TableName                 *string
	IndexName                 *string
	KeyConditionExpression    *string
	FilterExpression          *string
	ProjectionExpression      *string
	ExpressionAttributeNames  map[string]string
	ExpressionAttributeValues map[string]*server.AttributeValue
	ExclusiveStartKey         map[string]*server.AttributeValue
	Limit                     *int64
	ScanIndexForward          *bool
	ConsistentRead            *bool
	Select                    string
	// Legacy parameters: the front leaves such requests to minidyn.
	AttributesToGet, KeyConditions, QueryFilter json.RawMessage
}

// indexQuery answers a Query on a global secondary index, which minidyn
// answers in time proportional to the whole index (it sorts every entry
// and evaluates the key condition on each, for every page) and orders by
// the string form of the sort key (so that 10 sorts before 9). The front
// reads the index partition named by the key condition directly from the
// table's items and orders it as DynamoDB does: by sort key value (numbers
// numerically, strings and binaries bytewise), then by table key.
//
// The key condition must be an equality on the index's partition key,
// optionally AND one condition on its sort key (=, <, <=, >, >=, BETWEEN,
// begins_with), with attribute names and values given directly or by
// placeholder. Limit counts the entries read (before FilterExpression), a
// page also ends after 1 MB of entries read, and LastEvaluatedKey (the
// table key and the index key of the last entry read) is returned when a
// page ends so; an ExclusiveStartKey resumes after its position whether or
// not its item still exists. FilterExpression and ProjectionExpression
// apply to the entries as the index projects them. ConsistentRead is
// refused as DynamoDB refuses it on a global secondary index. It returns
// nil, leaving the request to minidyn, for anything else (a local index,
// a legacy parameter, another form of key condition, a value of the wrong
// type), and the number of bytes of entries it read, for consumed
// capacity.
func (f *front) indexQuery(body []byte) (*response, int) {
	var req indexQueryRequest
	if json.Unmarshal(body, &req) != nil || req.IndexName == nil || req.TableName == nil || req.KeyConditionExpression == nil ||
		req.AttributesToGet != nil || req.KeyConditions != nil || req.QueryFilter != nil {
		return nil, 0
	}
	t := f.eng.table(*req.TableName)
	if t == nil {
		return nil, 0
	}
	x, ok := indexOf(t, *req.IndexName)
	if !ok {
		return validationError("The table does not have the specified index: %s", *req.IndexName), 0
	}
	if !x.global {
		return nil, 0
	}
	if req.ConsistentRead != nil && *req.ConsistentRead {
		return validationError("Consistent reads are not supported on global secondary indexes"), 0
	}
	if req.Select != "" && req.Select != "ALL_PROJECTED_ATTRIBUTES" && req.Select != selectCount &&
		!(req.Select == "SPECIFIC_ATTRIBUTES" && req.ProjectionExpression != nil) {
		return nil, 0
	}
	if resp := unusedPlaceholders(&req); resp != nil {
		return resp, 0
	}
	cond, ok := parseKeyCondition(*req.KeyConditionExpression, req.ExpressionAttributeNames, req.ExpressionAttributeValues)
	if !ok || cond.hashName != x.hash || (cond.rngName != "" && cond.rngName != x.rng) ||
		!sameType(cond.hashValue, t.AttributesDef[x.hash]) {
		return nil, 0
	}
	for _, v := range cond.rngValues {
		if !sameType(v, t.AttributesDef[x.rng]) {
			return nil, 0
		}
	}

	type entry struct {
		pk   string
		rng  *mtypes.Item
		item map[string]*mtypes.Item
	}
	var part []entry
	for pk := range f.partitionOf(t, *req.IndexName, x, cond.hashValue) {
		item := t.Data[pk]
		if v := item[x.hash]; v == nil || !sameScalar(v, cond.hashValue) {
			continue
		}
		if !hasKeyAttribute(t, item, x.hash) || (x.rng != "" && !hasKeyAttribute(t, item, x.rng)) {
			continue
		}
		var rng *mtypes.Item
		if x.rng != "" {
			rng = item[x.rng]
			if !cond.matchRange(rng) {
				continue
			}
		}
		part = append(part, entry{pk, rng, item})
	}
	less := func(a, b entry) bool {
		if c := compareValues(a.rng, b.rng); c != 0 {
			return c < 0
		}
		return a.pk < b.pk
	}
	forward := req.ScanIndexForward == nil || *req.ScanIndexForward
	sort.Slice(part, func(i, j int) bool {
		if forward {
			return less(part[i], part[j])
		}
		return less(part[j], part[i])
	})

	start := 0
	if len(req.ExclusiveStartKey) > 0 {
		sk := typesItem(req.ExclusiveStartKey)
		pk, ok := tableKey(t, sk)
		if !ok || (x.rng != "" && sk[x.rng] == nil) {
			return validationError("The provided starting key is invalid: The provided key element does not match the schema"), 0
		}
		after := entry{pk: pk, rng: sk[x.rng]}
		start = sort.Search(len(part), func(i int) bool {
			if forward {
				return less(after, part[i])
			}
			return less(part[i], after)
		})
	}
	limit := len(part)
	if req.Limit != nil && *req.Limit > 0 && int(*req.Limit) < limit {
		limit = int(*req.Limit)
	}

	items := []map[string]*server.AttributeValue{}
	read, evaluated, count := 0, 0, 0
	var last map[string]*mtypes.Item
	for i := start; i < len(part) && evaluated < limit && read < maxPageBytes; i++ {
		projected := x.project(part[i].item)
		read += itemSize(projected)
		evaluated++
		last = part[i].item
		if req.FilterExpression != nil && *req.FilterExpression != "" {
			ok, err := t.InterpreterMatch(interpreter.MatchInput{
				TableName: t.Name, Expression: *req.FilterExpression, ExpressionType: interpreter.ExpressionTypeFilter,
				Item: projected, Aliases: req.ExpressionAttributeNames, Attributes: typesItem(req.ExpressionAttributeValues),
			})
			if err != nil {
				return validationError("%s", err.Error()), 0
			}
			if !ok {
				continue
			}
		}
		count++
		if req.Select == selectCount && !f.opts.DisableScanCounts {
			continue
		}
		out := projected
		if req.ProjectionExpression != nil && *req.ProjectionExpression != "" {
			p, err := t.LangInterpreter.Project(interpreter.ProjectInput{Expression: *req.ProjectionExpression, Item: projected, Aliases: req.ExpressionAttributeNames})
			if err != nil {
				return validationError("%s", err.Error()), 0
			}
			out = p
		}
		items = append(items, wireFromTypes(out))
	}

	resp := object{}
	_ = resp.set("Count", count)
	if req.Select != selectCount || f.opts.DisableScanCounts {
		_ = resp.set("Items", items)
	}
	if !f.opts.DisableScanCounts {
		_ = resp.set("ScannedCount", evaluated)
	}
	limited := req.Limit != nil && *req.Limit > 0 && int64(evaluated) == *req.Limit
	if last != nil && (start+evaluated < len(part) || limited) {
		key := map[string]*mtypes.Item{}
		for _, name := range []string{t.KeySchema.HashKey, t.KeySchema.RangeKey, x.hash, x.rng} {
			if name != "" {
				key[name] = last[name]
			}
		}
		_ = resp.set("LastEvaluatedKey", wireFromTypes(key))
	}
	return jsonResponse(resp), read
}

// keyCondition is a parsed KeyConditionExpression: an equality on hashName
// and an optional condition op on rngName.
type keyCondition struct {
	hashName  string
	hashValue *mtypes.Item
	rngName   string
	op        string // "=", "<", "<=", ">", ">=", "BETWEEN", "begins_with"
	rngValues []*mtypes.Item
}

// matchRange reports whether the sort key value v satisfies the condition.
func (c *keyCondition) matchRange(v *mtypes.Item) bool {
	if c.rngName == "" {
		return true
	}
	cmp := compareValues(v, c.rngValues[0])
	switch c.op {
	case "=":
		return cmp == 0
	case "<":
		return cmp < 0
	case "<=":
		return cmp <= 0
	case ">":
		return cmp > 0
	case ">=":
		return cmp >= 0
	case "BETWEEN":
		return cmp >= 0 && compareValues(v, c.rngValues[1]) <= 0
	case "begins_with":
		switch {
		case v.S != nil && c.rngValues[0].S != nil:
			return strings.HasPrefix(*v.S, *c.rngValues[0].S)
		case v.B != nil && c.rngValues[0].B != nil:
			return bytes.HasPrefix(v.B, c.rngValues[0].B)
		}
	}
	return false
}

// parseKeyCondition parses the key conditions indexQuery answers. It
// reports false for any other expression.
func parseKeyCondition(expr string, names map[string]string, values map[string]*server.AttributeValue) (*keyCondition, bool) {
	toks, ok := tokenize(expr)
	if !ok {
		return nil, false
	}
	name := func(tok string) (string, bool) {
		if strings.HasPrefix(tok, "#") {
			n, ok := names[tok]
			return n, ok
		}
		if tok == "" || strings.ContainsAny(tok[:1], ":()<>=,") {
			return "", false
		}
		return tok, true
	}
	value := func(tok string) (*mtypes.Item, bool) {
		v, ok := values[tok]
		if !strings.HasPrefix(tok, ":") || !ok || v == nil {
			return nil, false
		}
		return typesValue(v), true
	}
	type term struct {
		name   string
		op     string
		values []*mtypes.Item
	}
	var terms []term
	for len(toks) > 0 {
		// Strip balanced parentheses around a term.
		depth := 0
		for len(toks) > 0 && toks[0] == "(" {
			toks, depth = toks[1:], depth+1
		}
		var tm term
		switch {
		case len(toks) >= 6 && toks[0] == "begins_with" && toks[1] == "(" && toks[3] == "," && toks[5] == ")":
			n, ok1 := name(toks[2])
			v, ok2 := value(toks[4])
			if !ok1 || !ok2 {
				return nil, false
			}
			tm, toks = term{n, "begins_with", []*mtypes.Item{v}}, toks[6:]
		case len(toks) >= 5 && strings.EqualFold(toks[1], "BETWEEN") && strings.EqualFold(toks[3], "AND"):
			n, ok1 := name(toks[0])
			a, ok2 := value(toks[2])
			b, ok3 := value(toks[4])
			if !ok1 || !ok2 || !ok3 {
				return nil, false
			}
			tm, toks = term{n, "BETWEEN", []*mtypes.Item{a, b}}, toks[5:]
		case len(toks) >= 3 && comparators[toks[1]]:
			n, ok1 := name(toks[0])
			v, ok2 := value(toks[2])
			if !ok1 || !ok2 {
				return nil, false
			}
			tm, toks = term{n, toks[1], []*mtypes.Item{v}}, toks[3:]
		default:
			return nil, false
		}
		for ; depth > 0; depth-- {
			if len(toks) == 0 || toks[0] != ")" {
				return nil, false
			}
			toks = toks[1:]
		}
		terms = append(terms, tm)
		if len(toks) > 0 {
			if !strings.EqualFold(toks[0], "AND") || len(toks) == 1 {
				return nil, false
			}
			toks = toks[1:]
		}
	}
	if len(terms) == 0 || len(terms) > 2 {
		return nil, false
	}
	// The equality on the partition key may come first or second.
	for i, tm := range terms {
		if tm.op != "=" {
			continue
		}
		c := &keyCondition{hashName: tm.name, hashValue: tm.values[0]}
		if len(terms) == 2 {
			o := terms[1-i]
			c.rngName, c.op, c.rngValues = o.name, o.op, o.values
			if o.name == tm.name {
				continue
			}
		}
		return c, true
	}
	return nil, false
}

// tokenize splits a key condition into names, placeholders, keywords,
// operators, parentheses and commas.
func tokenize(s string) ([]string, bool) {
	var toks []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(' || c == ')' || c == ',' || c == '=':
			toks = append(toks, string(c))
			i++
		case c == '<' || c == '>':
			if i+1 < len(s) && s[i+1] == '=' {
				toks = append(toks, s[i:i+2])
				i += 2
			} else if c == '<' && i+1 < len(s) && s[i+1] == '>' {
				return nil, false // <> is not a key condition
			} else {
				toks = append(toks, string(c))
				i++
			}
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n\r(),=<>", rune(s[j])) {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		}
	}
	return toks, true
}

// sameType reports whether v is a scalar of the attribute type typ.
func sameType(v *mtypes.Item, typ string) bool {
	switch typ {
	case "S":
		return v.S != nil
	case "N":
		return v.N != nil && validNumber(*v.N)
	case "B":
		return v.B != nil
	}
	return false
}

func validNumber(s string) bool {
	_, ok := parseNumber(s)
	return ok
}

// parseNumber parses a DynamoDB number.
func parseNumber(s string) (*big.Rat, bool) { return new(big.Rat).SetString(s) }

// compareValues orders two scalar values of the same type as DynamoDB
// orders keys: numbers by value, strings by their UTF-8 bytes, binaries
// bytewise. A nil value sorts first.
func compareValues(a, b *mtypes.Item) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	case a.N != nil && b.N != nil:
		x, okx := new(big.Rat).SetString(*a.N)
		y, oky := new(big.Rat).SetString(*b.N)
		if okx && oky {
			return x.Cmp(y)
		}
		return strings.Compare(*a.N, *b.N)
	case a.S != nil && b.S != nil:
		return strings.Compare(*a.S, *b.S)
	case a.B != nil && b.B != nil:
		return bytes.Compare(a.B, b.B)
	}
	return strings.Compare(typeTag(a), typeTag(b))
}

func typeTag(v *mtypes.Item) string {
	switch {
	case v.N != nil:
		return "N"
	case v.S != nil:
		return "S"
	case v.B != nil:
		return "B"
	}
	return fmt.Sprint(v)
}

// comparators are the comparison operators of a sort key condition.
var comparators = map[string]bool{"=": true, "<": true, "<=": true, ">": true, ">=": true}

// unusedPlaceholders returns the ValidationException DynamoDB answers to a
// request with expression attribute names or values that none of its
// expressions uses, or nil.
func unusedPlaceholders(req *indexQueryRequest) *response {
	used := map[string]bool{}
	for _, e := range []*string{req.KeyConditionExpression, req.FilterExpression, req.ProjectionExpression} {
		if e != nil {
			for _, p := range placeholder.FindAllString(*e, -1) {
				used[p] = true
			}
		}
	}
	var names, values []string
	for k := range req.ExpressionAttributeNames {
		if !used[k] {
			names = append(names, k)
		}
	}
	for k := range req.ExpressionAttributeValues {
		if !used[k] {
			values = append(values, k)
		}
	}
	sort.Strings(names)
	sort.Strings(values)
	switch {
	case len(names) > 0:
		return validationError("Value provided in ExpressionAttributeNames unused in expressions: keys: {%s}", strings.Join(names, ", "))
	case len(values) > 0:
		return validationError("Value provided in ExpressionAttributeValues unused in expressions: keys: {%s}", strings.Join(values, ", "))
	}
	return nil
}

// sameScalar reports whether a and b are the same string, number (as
// written) or binary value.
func sameScalar(a, b *mtypes.Item) bool {
	switch {
	case b.S != nil:
		return a.S != nil && *a.S == *b.S
	case b.B != nil:
		return a.B != nil && bytes.Equal(a.B, b.B)
	case b.N != nil:
		return a.N != nil && (*a.N == *b.N || compareValues(a, b) == 0)
	}
	return false
}
