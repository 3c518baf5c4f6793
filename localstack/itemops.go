package localstack

import (
	"errors"
	"net/http"
	"regexp"
	"strings"

	"github.com/truora/minidyn/interpreter"
	"github.com/truora/minidyn/interpreter/language"
	"github.com/truora/minidyn/types"
)

type expressions struct {
	ConditionExpression       string
	UpdateExpression          string
	FilterExpression          string
	KeyConditionExpression    string
	ProjectionExpression      string
	ExpressionAttributeNames  map[string]string
	ExpressionAttributeValues item
}

var placeholderPattern = regexp.MustCompile(`:[A-Za-z0-9_]+`)

// check refuses invalid values and undefined :values before anything is read.
func (x *expressions) check() error {
	if msg := checkItem(x.ExpressionAttributeValues); msg != "" {
		return validation("%s", msg)
	}
	for _, e := range []struct{ name, expr string }{{"ConditionExpression", x.ConditionExpression},
		{"UpdateExpression", x.UpdateExpression}, {"FilterExpression", x.FilterExpression},
		{"KeyConditionExpression", x.KeyConditionExpression}} {
		for _, p := range placeholderPattern.FindAllString(e.expr, -1) {
			if _, ok := x.ExpressionAttributeValues[p]; !ok {
				return validation("Invalid %s: An expression attribute value used in expression is not defined; attribute value: %s", e.name, p)
			}
		}
	}
	return nil
}

var interpret interpreter.Language

// matches evaluates expr on it (nil: no item) as interpreter.Language.Match
// does, parsing each expression once; an empty expression matches.
func (e *emulator) matches(x *expressions, expr string, typ interpreter.ExpressionType, it map[string]*types.Item) (bool, error) {
	if expr == "" {
		return true, nil
	}
	invalid := func(msg string) error { return validation("Invalid %s: %s", expressionName(typ), msg) }
	cond, ok := e.parsed[expr]
	if !ok {
		p := language.NewParser(language.NewLexer(expr))
		cond = p.ParseConditionalExpression()
		if errs := p.Errors(); len(errs) > 0 || cond.Expression == nil {
			return false, invalid("Syntax error; " + strings.Join(errs, "; "))
		}
		if len(e.parsed) >= 1000 {
			clear(e.parsed)
		}
		e.parsed[expr] = cond
	}
	if err := interpreter.ValidateExpressionAttributeNamesDeclared(expressionName(typ), expr, x.ExpressionAttributeNames); err != nil {
		return false, validation("%v", err)
	}
	env, err := x.environment(it)
	if err != nil {
		return false, invalid(err.Error())
	}
	result := language.Eval(cond, env)
	if result.Type() == language.ObjectTypeError {
		return false, invalid(result.Inspect())
	}
	return result == language.TRUE, nil
}

// environment holds it and the request's names and values.
func (x *expressions) environment(it map[string]*types.Item) (*language.Environment, error) {
	env := language.NewEnvironment()
	env.Aliases = x.ExpressionAttributeNames
	if err := env.AddAttributes(it); err != nil {
		return nil, err
	}
	return env, env.AddAttributes(x.ExpressionAttributeValues)
}

func expressionName(typ interpreter.ExpressionType) string {
	switch typ {
	case interpreter.ExpressionTypeFilter:
		return "FilterExpression"
	case interpreter.ExpressionTypeKey:
		return "KeyConditionExpression"
	}
	return "ConditionExpression"
}

// projectedName matches a projection's attribute names (not placeholders).
var projectedName = regexp.MustCompile(`(?:^|[,.\s])([A-Za-z][A-Za-z0-9_]*)`)

// project applies ProjectionExpression to it, refusing reserved words.
func (x *expressions) project(it map[string]*types.Item) (item, error) {
	if x.ProjectionExpression == "" {
		return it, nil
	}
	for _, m := range projectedName.FindAllStringSubmatch(x.ProjectionExpression, -1) {
		if language.IsReservedWord(strings.ToUpper(m[1])) {
			return nil, validation("Invalid ProjectionExpression: Attribute name is a reserved keyword; reserved keyword: %s", m[1])
		}
	}
	if it == nil {
		return nil, nil
	}
	out, err := interpret.Project(interpreter.ProjectInput{Expression: x.ProjectionExpression, Item: it, Aliases: x.ExpressionAttributeNames})
	if err != nil {
		return nil, validation("Invalid ProjectionExpression: %v", err)
	}
	return out, nil
}

// writeRequest is a PutItem, UpdateItem, DeleteItem or transaction action.
type writeRequest struct {
	expressions
	TableName                           string
	Item                                item // PutItem
	Key                                 item // UpdateItem, DeleteItem
	ReturnValues                        string
	ReturnValuesOnConditionCheckFailure string
	ReturnConsumedCapacity              string
}

// change is a prepared write: the item under key before and after (nil: absent).
type change struct {
	t        *table
	key      string
	old, new map[string]*types.Item
}

var errConditionFailed = errors.New("The conditional request failed")

// checkKey validates k and returns its item key: k holds exactly t's key
// attributes (exact: a Key) or at least them (an Item).
func (t *table) checkKey(k map[string]*types.Item, exact bool) (string, error) {
	if msg := checkItem(k); msg != "" {
		return "", validation("%s", msg)
	}
	for _, name := range []string{t.primary.hash, t.primary.rng} {
		if name == "" {
			continue
		}
		v, ok := k[name]
		switch {
		case !ok && exact:
			return "", validation("The provided key element does not match the schema")
		case !ok:
			return "", validation("One or more parameter values were invalid: Missing the key %s in the item", name)
		case scalarType(v) != t.attrs[name]:
			if exact {
				return "", validation("The provided key element does not match the schema")
			}
			return "", validation("One or more parameter values were invalid: Type mismatch for key %s expected: %s actual: %s", name, t.attrs[name], typeName(v))
		case (v.S != nil && *v.S == "") || (v.B != nil && len(v.B) == 0):
			return "", validation("One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty string value. Key: %s", name)
		}
	}
	if exact && len(k) != len(t.keyAttrs(k)) {
		return "", validation("The provided key element does not match the schema")
	}
	key, _ := t.keyOf(k)
	return key, nil
}

// prepare computes the change of op (Put, Update, Delete, ConditionCheck),
// or errConditionFailed with it.
func (e *emulator) prepare(op string, r *writeRequest) (*change, error) {
	t, err := e.table(r.TableName)
	if err != nil {
		return nil, err
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	c := &change{t: t}
	if op == "Put" {
		c.key, err = t.checkKey(r.Item, false)
		c.new = r.Item // decoded for this request alone
	} else {
		c.key, err = t.checkKey(r.Key, true)
	}
	if err != nil {
		return nil, err
	}
	c.old = t.items[c.key]
	switch op {
	case "Update":
		base := c.old
		if base == nil {
			base = r.Key
		}
		if c.new, err = e.update(t, r, copyItem(base)); err != nil {
			return nil, err
		}
	case "ConditionCheck":
		c.new = c.old
	}
	if c.new != nil && itemSize(c.new) > maxItemSize {
		return nil, validation("Item size has exceeded the maximum allowed size")
	}
	ok, err := e.matches(&r.expressions, r.ConditionExpression, interpreter.ExpressionTypeConditional, c.old)
	if err != nil {
		return nil, err
	}
	if !ok {
		return c, errConditionFailed
	}
	return c, nil
}

// update applies r's UpdateExpression as interpreter.Language.Update does,
// but into a new item, so that what REMOVE removes is gone.
func (e *emulator) update(t *table, r *writeRequest, it map[string]*types.Item) (map[string]*types.Item, error) {
	if r.UpdateExpression == "" {
		return it, nil
	}
	invalid := func(msg string) error { return validation("Invalid UpdateExpression: %s", msg) }
	if err := interpreter.ValidateExpressionAttributeNamesDeclared("UpdateExpression", r.UpdateExpression, r.ExpressionAttributeNames); err != nil {
		return nil, validation("%v", err)
	}
	p := language.NewUpdateParser(language.NewLexer(r.UpdateExpression))
	statement := p.ParseUpdateExpression()
	if errs := p.Errors(); len(errs) > 0 {
		return nil, invalid(strings.Join(errs, "; "))
	}
	values := map[string]bool{}
	for name := range r.ExpressionAttributeValues {
		values[name] = true
	}
	env, err := r.environment(it)
	if err != nil {
		return nil, invalid(err.Error())
	}
	if result := language.EvalUpdate(statement, env); result.Type() == language.ObjectTypeError {
		return nil, invalid(result.Inspect())
	}
	out := map[string]*types.Item{}
	env.Apply(out, r.ExpressionAttributeNames, values)
	if !sameItem(t.keyAttrs(it), t.keyAttrs(out)) {
		return nil, validation("One or more parameter values were invalid: Cannot update attribute %s. This attribute is part of the key", t.primary.hash)
	}
	return out, nil
}

func (c *change) apply() { c.t.set(c.key, c.new) }

func (e *emulator) write(op string, body []byte) (any, error) {
	var r writeRequest
	if err := decode(body, &r); err != nil {
		return nil, err
	}
	c, err := e.prepare(op, &r)
	if errors.Is(err, errConditionFailed) {
		ae := &apiError{status: http.StatusBadRequest, code: "ConditionalCheckFailedException", message: err.Error()}
		if r.ReturnValuesOnConditionCheckFailure == "ALL_OLD" {
			ae.item = c.old
		}
		return nil, ae
	}
	if err != nil {
		return nil, err
	}
	c.apply()
	out := map[string]any{}
	if a := returned(r.ReturnValues, c.old, c.new); a != nil {
		out["Attributes"] = a
	}
	cap := newCapacity(r.ReturnConsumedCapacity)
	cap.write(c, 1)
	cap.add(out, false)
	return out, nil
}

func (e *emulator) putItem(body []byte) (any, error)    { return e.write("Put", body) }
func (e *emulator) updateItem(body []byte) (any, error) { return e.write("Update", body) }
func (e *emulator) deleteItem(body []byte) (any, error) { return e.write("Delete", body) }

// returned is the Attributes a write returns for ReturnValues.
func returned(mode string, old, new map[string]*types.Item) item {
	changed := func(from, to map[string]*types.Item) item {
		out := item{}
		for name, v := range from {
			if w, ok := to[name]; !ok || !sameItem(item{name: v}, item{name: w}) {
				out[name] = v
			}
		}
		return out
	}
	var a item
	switch mode {
	case "ALL_OLD":
		a = old
	case "ALL_NEW":
		a = new
	case "UPDATED_OLD":
		a = changed(old, new)
	case "UPDATED_NEW":
		a = changed(new, old)
	}
	if len(a) == 0 {
		return nil
	}
	return a
}

func (e *emulator) getItem(body []byte) (any, error) {
	var in struct {
		expressions
		TableName              string
		Key                    item
		ConsistentRead         bool
		ReturnConsumedCapacity string
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	t, err := e.table(in.TableName)
	if err != nil {
		return nil, err
	}
	key, err := t.checkKey(in.Key, true)
	if err != nil {
		return nil, err
	}
	it := t.items[key]
	p, err := in.project(it)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	if p != nil {
		out["Item"] = p
	}
	cap := newCapacity(in.ReturnConsumedCapacity)
	cap.read(t.name, "", itemSize(it), in.ConsistentRead)
	cap.add(out, false)
	return out, nil
}
