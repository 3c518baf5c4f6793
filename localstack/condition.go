package localstack

import (
	"bytes"
	"strconv"
	"strings"
	"sync"

	"github.com/truora/minidyn/interpreter/language"
	"github.com/truora/minidyn/server"
	mtypes "github.com/truora/minidyn/types"
)

// Condition expressions evaluated without minidyn's interpreter.
//
// minidyn's PutItem lexes and parses its ConditionExpression on every call
// and converts the whole stored item and every expression attribute value
// into its interpreter's objects before evaluating it: for a claim of
// idemkey, most of the call. The engine instead compiles an expression
// once, keeps it, and evaluates it against the stored item in place.
//
// It does so only where it gives minidyn's answer: the expressions of a
// small grammar (comparisons with = <> < <= > >= of attribute paths and
// values, attribute_exists, attribute_not_exists, AND, OR, NOT and
// parentheses), whose placeholders are exactly the request's
// ExpressionAttributeNames and ExpressionAttributeValues, every value a
// string, number or binary and every compared attribute one of those or
// absent. Anything else (another function, a reserved word, a document
// path, a comparison minidyn reports as an error, an item attribute its
// interpreter cannot convert) is left to minidyn, which answers as before.
// FuzzConditionAgreesWithMinidyn checks the two against each other.

// condOp is the kind of a compiled condition node.
type condOp uint8

const (
	condOr condOp = iota
	condAnd
	condNot
	condExists    // attribute_exists(path)
	condNotExists // attribute_not_exists(path)
	condCompare
)

// condNode is a node of a compiled condition.
type condNode struct {
	op    condOp
	kids  []*condNode // condOr, condAnd: two or more; condNot: one
	cmp   string      // condCompare: = <> < <= > >=
	left  operand     // condCompare; the path of condExists and condNotExists
	right operand     // condCompare
}

// operand is a path or a value placeholder of a condition.
type operand struct {
	value bool   // a :placeholder of ExpressionAttributeValues
	name  string // the placeholder (#name or :value), or a plain attribute name
}

// condition is a compiled ConditionExpression with the placeholders it uses.
type condition struct {
	root   *condNode
	names  []string // #placeholders, each once
	values []string // :placeholders, each once
}

// conditionCache keeps compiled conditions by expression, a nil entry
// marking an expression outside the grammar. It holds at most
// maxCachedConditions entries and starts afresh when full.
type conditionCache struct {
	mu sync.Mutex
	m  map[string]*condition
}

const maxCachedConditions = 512

// get returns the compiled expr, or nil when it is left to minidyn.
func (c *conditionCache) get(expr string) *condition {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cond, ok := c.m[expr]; ok {
		return cond
	}
	if c.m == nil || len(c.m) >= maxCachedConditions {
		c.m = make(map[string]*condition)
	}
	cond := compileCondition(expr)
	c.m[expr] = cond
	return cond
}

// condToken is a token of a condition expression as minidyn's lexer
// splits it: an identifier (a run of letters, digits, _, : and #), a
// comparator, or one of ( ) ,.
type condToken struct {
	ident bool
	text  string
}

// lexCondition splits expr as minidyn's lexer does; it reports false for
// a character outside the grammar.
func lexCondition(expr string) ([]condToken, bool) {
	var toks []condToken
	for i := 0; i < len(expr); {
		ch := expr[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r':
			i++
		case ch == '(' || ch == ')' || ch == ',' || ch == '=':
			toks = append(toks, condToken{text: expr[i : i+1]})
			i++
		case ch == '<' || ch == '>':
			n := 1
			if i+1 < len(expr) && (expr[i+1] == '=' || ch == '<' && expr[i+1] == '>') {
				n = 2
			}
			toks = append(toks, condToken{text: expr[i : i+n]})
			i += n
		case identByte(ch):
			j := i
			for j < len(expr) && identByte(expr[j]) {
				j++
			}
			toks = append(toks, condToken{ident: true, text: expr[i:j]})
			i = j
		default:
			return nil, false
		}
	}
	return toks, true
}

func identByte(ch byte) bool {
	return 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' || ch == '_' || ch == ':' || ch == '#'
}

// placeholderName reports whether s is a placeholder of the form minidyn
// and DynamoDB accept: the sigil and one or more letters, digits or _.
func placeholderName(s string, sigil byte) bool {
	if len(s) < 2 || s[0] != sigil {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// plainName reports whether s is an attribute name that a condition may
// use without a placeholder: a letter or _ and then letters, digits or _,
// and no reserved word.
func plainName(s string) bool {
	if s == "" || '0' <= s[0] && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == ':' || c == '#' {
			return false
		}
	}
	return !language.IsReservedWord(strings.ToUpper(s))
}

// condParser is a recursive-descent parser of the grammar, with DynamoDB's
// (and minidyn's) precedence: OR below AND below NOT below comparisons.
type condParser struct {
	toks   []condToken
	pos    int
	names  map[string]bool
	values map[string]bool
}

// maxConditionLength is DynamoDB's limit on an expression's length, in
// bytes; a longer one is left to minidyn (which DynamoDB would refuse),
// so that the parser's recursion stays shallow.
const maxConditionLength = 4096

// compileCondition compiles expr, or returns nil when it is outside the
// grammar.
func compileCondition(expr string) *condition {
	if len(expr) > maxConditionLength {
		return nil
	}
	toks, ok := lexCondition(expr)
	if !ok || len(toks) == 0 {
		return nil
	}
	p := &condParser{toks: toks, names: map[string]bool{}, values: map[string]bool{}}
	root := p.or()
	if root == nil || p.pos != len(p.toks) {
		return nil
	}
	c := &condition{root: root}
	for n := range p.names {
		c.names = append(c.names, n)
	}
	for v := range p.values {
		c.values = append(c.values, v)
	}
	return c
}

func (p *condParser) peek() (condToken, bool) {
	if p.pos < len(p.toks) {
		return p.toks[p.pos], true
	}
	return condToken{}, false
}

// keyword reports whether the next token is the keyword kw (in any case,
// as minidyn's lexer reads keywords) and consumes it if so.
func (p *condParser) keyword(kw string) bool {
	if t, ok := p.peek(); ok && t.ident && strings.EqualFold(t.text, kw) {
		p.pos++
		return true
	}
	return false
}

// punct reports whether the next token is s and consumes it if so.
func (p *condParser) punct(s string) bool {
	if t, ok := p.peek(); ok && !t.ident && t.text == s {
		p.pos++
		return true
	}
	return false
}

func (p *condParser) or() *condNode  { return p.chain(condOr, "OR", p.and) }
func (p *condParser) and() *condNode { return p.chain(condAnd, "AND", p.not) }
func (p *condParser) chain(op condOp, kw string, next func() *condNode) *condNode {
	first := next()
	if first == nil {
		return nil
	}
	kids := []*condNode{first}
	for p.keyword(kw) {
		k := next()
		if k == nil {
			return nil
		}
		kids = append(kids, k)
	}
	if len(kids) == 1 {
		return first
	}
	return &condNode{op: op, kids: kids}
}

func (p *condParser) not() *condNode {
	if p.keyword("NOT") {
		// minidyn reports NOT before a bare path as a syntax error, and
		// DynamoDB and minidyn might read NOT before a comparison
		// differently: only NOT before ( or a function is taken.
		next, ok := p.peek()
		paren := ok && !next.ident && next.text == "("
		not := ok && next.ident && strings.EqualFold(next.text, "NOT")
		if !paren && !not && !p.isCall() {
			return nil
		}
		k := p.not()
		if k == nil {
			return nil
		}
		return &condNode{op: condNot, kids: []*condNode{k}}
	}
	return p.primary()
}

// isCall reports whether the next tokens are an identifier and (.
func (p *condParser) isCall() bool {
	return p.pos+1 < len(p.toks) && p.toks[p.pos].ident && !p.toks[p.pos+1].ident && p.toks[p.pos+1].text == "("
}

func (p *condParser) primary() *condNode {
	if p.punct("(") {
		n := p.or()
		if n == nil || !p.punct(")") {
			return nil
		}
		return n
	}
	if p.isCall() {
		var op condOp
		switch p.toks[p.pos].text {
		case "attribute_exists":
			op = condExists
		case "attribute_not_exists":
			op = condNotExists
		default:
			return nil
		}
		p.pos += 2
		path, ok := p.operand()
		if !ok || path.value || !p.punct(")") {
			return nil
		}
		return &condNode{op: op, left: path}
	}
	left, ok := p.operand()
	if !ok {
		return nil
	}
	t, ok := p.peek()
	if !ok || t.ident {
		return nil
	}
	switch t.text {
	case "=", "<>", "<", "<=", ">", ">=":
	default:
		return nil
	}
	p.pos++
	right, ok := p.operand()
	if !ok {
		return nil
	}
	return &condNode{op: condCompare, cmp: t.text, left: left, right: right}
}

// operand reads a path (#name or a plain name) or a :value.
func (p *condParser) operand() (operand, bool) {
	t, ok := p.peek()
	if !ok || !t.ident || p.isCall() {
		return operand{}, false
	}
	if language.LookupIdent(t.text) != language.IDENT {
		return operand{}, false // a keyword
	}
	p.pos++
	switch t.text[0] {
	case '#':
		if !placeholderName(t.text, '#') {
			return operand{}, false
		}
		p.names[t.text] = true
		return operand{name: t.text}, true
	case ':':
		if !placeholderName(t.text, ':') {
			return operand{}, false
		}
		p.values[t.text] = true
		return operand{value: true, name: t.text}, true
	}
	if !plainName(t.text) {
		return operand{}, false
	}
	return operand{name: t.text}, true
}

// condEnv is what a condition is evaluated against.
type condEnv struct {
	item   map[string]*mtypes.Item // the stored item; empty when there is none
	names  map[string]string
	values map[string]*mtypes.Item
}

// bind reports whether c can be evaluated natively with the request's
// names and values: each placeholder c uses declared, nothing declared
// that c does not use, every name's attribute a plain one, every value a
// string, number or binary minidyn converts.
func (c *condition) bind(names map[string]string, values map[string]*mtypes.Item) bool {
	if len(names) != len(c.names) || len(values) != len(c.values) {
		return false
	}
	for _, n := range c.names {
		target, ok := names[n]
		if !ok || target == "" || strings.ContainsAny(target, ".#:") {
			return false
		}
	}
	for _, v := range c.values {
		val, ok := values[v]
		if !ok {
			return false
		}
		if k := valueKind(val); k != kindString && k != kindNumber && k != kindBinary {
			return false
		}
	}
	return true
}

// storedConvertible reports whether minidyn's interpreter takes item as
// it is: no attribute it cannot convert, and no attribute named like a
// #placeholder (which it would file under the placeholder's attribute).
func storedConvertible(item map[string]*mtypes.Item) bool {
	for name, v := range item {
		if strings.HasPrefix(name, "#") || !convertible(v) {
			return false
		}
	}
	return true
}

// Value kinds in the order minidyn's interpreter tells them apart.
const (
	kindInvalid = iota
	kindBool
	kindNumber
	kindString
	kindNull
	kindBinary
	kindMap
	kindList
	kindStringSet
	kindBinarySet
	kindNumberSet
)

// valueKind returns the kind minidyn's interpreter converts v to, or
// kindInvalid when it reports an error for it.
func valueKind(v *mtypes.Item) int {
	switch {
	case v == nil:
		return kindInvalid
	case v.BOOL != nil:
		return kindBool
	case v.N != nil:
		if _, err := strconv.ParseFloat(*v.N, 64); err != nil {
			return kindInvalid
		}
		return kindNumber
	case v.S != nil:
		return kindString
	case v.NULL != nil && *v.NULL:
		return kindNull
	case len(v.B) != 0:
		return kindBinary
	case v.M != nil:
		return kindMap
	case v.L != nil:
		return kindList
	case v.SS != nil:
		return kindStringSet
	case v.BS != nil:
		return kindBinarySet
	case v.NS != nil:
		return kindNumberSet
	}
	return kindInvalid
}

// convertible reports whether minidyn's interpreter converts v without an
// error: scalars by valueKind, documents and sets by converting them.
func convertible(v *mtypes.Item) bool {
	switch valueKind(v) {
	case kindInvalid:
		return false
	case kindMap, kindList, kindStringSet, kindBinarySet, kindNumberSet:
		_, err := language.MapToObject(v)
		return err == nil
	}
	return true
}

// eval evaluates n in env. It reports false when minidyn's interpreter
// would not give a boolean for it (an error): every node is evaluated,
// as minidyn evaluates both sides of AND and OR.
func (n *condNode) eval(env *condEnv) (result, ok bool) {
	switch n.op {
	case condOr, condAnd:
		result = n.op == condAnd
		for _, k := range n.kids {
			r, ok := k.eval(env)
			if !ok {
				return false, false
			}
			if n.op == condAnd {
				result = result && r
			} else {
				result = result || r
			}
		}
		return result, true
	case condNot:
		r, ok := n.kids[0].eval(env)
		return !r, ok
	case condExists, condNotExists:
		_, present := env.item[env.attribute(n.left)]
		return present == (n.op == condExists), true
	}
	l, r := env.operand(n.left), env.operand(n.right)
	if l == nil || r == nil {
		// An absent attribute: minidyn's comparison with its undefined
		// value, provided the other side is comparable.
		other := l
		if other == nil {
			other = r
		}
		if other != nil {
			if k := valueKind(other); k != kindString && k != kindNumber && k != kindBinary {
				return false, false
			}
		}
		return n.cmp == "<>", true
	}
	lk, rk := valueKind(l), valueKind(r)
	if lk != rk {
		return false, false
	}
	var c int
	switch lk {
	case kindString:
		c = strings.Compare(*l.S, *r.S)
	case kindBinary:
		c = bytes.Compare(l.B, r.B)
	case kindNumber:
		a, _ := strconv.ParseFloat(*l.N, 64)
		b, _ := strconv.ParseFloat(*r.N, 64)
		switch {
		case a < b:
			c = -1
		case a > b:
			c = 1
		case a != b:
			return false, false // NaN is no number DynamoDB stores
		}
	default:
		return false, false
	}
	switch n.cmp {
	case "=":
		return c == 0, true
	case "<>":
		return c != 0, true
	case "<":
		return c < 0, true
	case "<=":
		return c <= 0, true
	case ">":
		return c > 0, true
	}
	return c >= 0, true
}

// attribute returns the item attribute a path names.
func (env *condEnv) attribute(o operand) string {
	if strings.HasPrefix(o.name, "#") {
		return env.names[o.name]
	}
	return o.name
}

// operand returns the value of o: the item's attribute, nil when absent,
// or the expression attribute value.
func (env *condEnv) operand(o operand) *mtypes.Item {
	if o.value {
		return env.values[o.name]
	}
	return env.item[env.attribute(o)]
}

// boundCondition returns the compiled ConditionExpression of the PutItem
// in, bound to its names and values (see bind), and the values as
// minidyn's types;
// nil when the condition is left to minidyn's interpreter.
func (e *engine) boundCondition(in *server.PutItemInput) (*condition, map[string]*mtypes.Item) {
	if *in.ConditionExpression == "" {
		return nil, nil
	}
	cond := e.conds.get(*in.ConditionExpression)
	if cond == nil {
		return nil, nil
	}
	values := typesItem(in.ExpressionAttributeValues)
	if !cond.bind(in.ExpressionAttributeNames, values) {
		return nil, nil
	}
	return cond, values
}
