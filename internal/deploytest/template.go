// Package deploytest checks the repository's SAM templates against the
// code: statically, what moto's CloudFormation does not build or check
// (alarms, the HTTP API and its authorizer, parameter constraints and
// rules), and on moto, the stacks it builds (stack.go) and the functions
// under the Runtime Interface Emulator (rie.go).
//
// The static reader understands the subset of CloudFormation
// template.yaml uses: resources with Type, Condition and Properties,
// parameters with their constraints, rules, conditions, and the intrinsic
// functions Resolve lists.
package deploytest

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Template is template.yaml as plain values (maps, lists and strings),
// each intrinsic in its long form: {"Ref": name}, {"Fn::Sub": text},
// {"Fn::GetAtt": [id, attribute]}, ...
type Template map[string]any

// Load reads the template at the repository root.
func Load() (Template, error) {
	b, err := os.ReadFile(filepath.Join(Root(), "template.yaml"))
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("template.yaml: %w", err)
	}
	t, ok := plain(&doc).(map[string]any)
	if !ok || t["Resources"] == nil {
		return nil, fmt.Errorf("template.yaml: no Resources")
	}
	return t, nil
}

// plain converts a YAML node; a short-form tag becomes the long form.
func plain(n *yaml.Node) any {
	var v any
	switch n.Kind {
	case yaml.DocumentNode:
		return plain(n.Content[0])
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = plain(n.Content[i+1])
		}
		v = m
	case yaml.SequenceNode:
		l := []any{}
		for _, c := range n.Content {
			l = append(l, plain(c))
		}
		v = l
	default:
		v = n.Value
	}
	tag, ok := strings.CutPrefix(n.Tag, "!")
	switch {
	case !ok || strings.HasPrefix(tag, "!"):
		return v
	case tag == "Ref" || tag == "Condition":
		return map[string]any{tag: v}
	case tag == "GetAtt":
		if s, ok := v.(string); ok {
			id, attr, _ := strings.Cut(s, ".")
			v = []any{id, attr}
		}
	}
	return map[string]any{"Fn::" + tag: v}
}

// At returns the value at a path of mapping keys from the top of the
// template, nil when absent.
func (t Template) At(keys ...string) any {
	var v any = map[string]any(t)
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// Type returns a resource's Type.
func (t Template) Type(resource string) any { return t.At("Resources", resource, "Type") }

// Resources returns the sorted logical ids of the resources of a type.
func (t Template) Resources(typ string) []string {
	var out []string
	for id := range t.At("Resources").(map[string]any) {
		if t.Type(id) == typ {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Actions returns, per logical id of a table the function's inline
// policies name, the sorted actions an Allow statement grants on it for a
// deployment with parameters p. A statement's Resource must be
// !GetAtt <Table>.Arn or !Sub "${<Table>.Arn}/index/<name>" (counted as
// the table): least privilege names the table.
func (t Template) Actions(function string, p Params) (map[string][]string, error) {
	policies, err := t.Property(p, function, "Properties", "Policies")
	if err != nil {
		return nil, err
	}
	list, ok := policies.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: no inline Policies", function)
	}
	out := map[string][]string{}
	for _, policy := range list {
		stmts, _ := policy.(map[string]any)["Statement"].([]any)
		if len(stmts) == 0 {
			return nil, fmt.Errorf("%s: a policy without Statement", function)
		}
		for _, s := range stmts {
			s := s.(map[string]any)
			if s["Effect"] != "Allow" {
				continue
			}
			for _, r := range strs(s["Resource"]) {
				id, ok := tableOf(r)
				if !ok {
					return nil, fmt.Errorf("%s: resource %q is not !GetAtt <table>.Arn: least privilege means naming the table", function, r)
				}
				for _, a := range strs(s["Action"]) {
					if !slices.Contains(out[id], a) {
						out[id] = append(out[id], a)
					}
				}
			}
		}
	}
	for id := range out {
		slices.Sort(out[id])
	}
	return out, nil
}

var tableARN = regexp.MustCompile(`^<GetAtt (\w+)\.Arn>(/index/[\w.-]+)?$`)

func tableOf(resource string) (string, bool) {
	m := tableARN.FindStringSubmatch(resource)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// NoValue is what Resolve returns for AWS::NoValue: the property is absent.
var NoValue = noValue{}

type noValue struct{}

// Params are the values of a deployment: parameters by name (a parameter
// missing from the map takes its Default) and pseudo parameters such as
// AWS::Region and AWS::StackName.
type Params map[string]string

func (t Template) value(name string, p Params) (string, error) {
	if v, ok := p[name]; ok {
		return v, nil
	}
	spec, ok := t.At("Parameters", name).(map[string]any)
	if !ok {
		return "", fmt.Errorf("no value for %s", name)
	}
	d, ok := spec["Default"].(string)
	if !ok {
		return "", fmt.Errorf("parameter %s has no Default and no value", name)
	}
	return d, nil
}

// Resolve evaluates a value of the template for a deployment: Ref of a
// parameter or pseudo parameter gives its value, Ref of a resource gives
// "<Ref LogicalId>", GetAtt gives "<GetAtt LogicalId.Attr>", Ref
// AWS::NoValue gives NoValue; Sub (its one-argument form), If (with the
// template's Conditions), Equals, Not, And, Or and Split are evaluated;
// mappings and lists are resolved member by member, leaving out the
// NoValue ones. Scalars are strings.
func (t Template) Resolve(v any, p Params) (any, error) {
	switch v := v.(type) {
	case []any:
		out := []any{}
		for _, e := range v {
			r, err := t.Resolve(e, p)
			if err != nil {
				return nil, err
			}
			if r != NoValue {
				out = append(out, r)
			}
		}
		return out, nil
	case map[string]any:
		if len(v) == 1 {
			for fn, arg := range v {
				if fn == "Ref" || strings.HasPrefix(fn, "Fn::") {
					return t.intrinsic(fn, arg, p)
				}
			}
		}
		out := map[string]any{}
		for k, e := range v {
			r, err := t.Resolve(e, p)
			if err != nil {
				return nil, err
			}
			if r != NoValue {
				out[k] = r
			}
		}
		return out, nil
	}
	return v, nil
}

func (t Template) intrinsic(fn string, arg any, p Params) (any, error) {
	args, _ := arg.([]any)
	want := map[string]int{"Fn::If": 3, "Fn::Equals": 2, "Fn::Not": 1, "Fn::Split": 2}[fn]
	if want > 0 && len(args) != want {
		return nil, fmt.Errorf("%s wants %d arguments", fn, want)
	}
	switch fn {
	case "Ref":
		name := fmt.Sprint(arg)
		switch {
		case name == "AWS::NoValue":
			return NoValue, nil
		case t.At("Resources", name) != nil:
			return "<Ref " + name + ">", nil
		}
		return t.value(name, p)
	case "Fn::GetAtt":
		return fmt.Sprintf("<GetAtt %v.%v>", args...), nil
	case "Fn::Sub":
		return t.sub(fmt.Sprint(arg), p)
	case "Fn::If":
		ok, err := t.Condition(fmt.Sprint(args[0]), p)
		if err != nil {
			return nil, err
		}
		if ok {
			return t.Resolve(args[1], p)
		}
		return t.Resolve(args[2], p)
	case "Fn::Equals":
		x, err := t.Resolve(args[0], p)
		if err != nil {
			return nil, err
		}
		y, err := t.Resolve(args[1], p)
		return fmt.Sprint(x) == fmt.Sprint(y), err
	case "Fn::Not":
		v, err := t.truth(args[0], p)
		return !v, err
	case "Fn::And", "Fn::Or":
		and := fn == "Fn::And"
		for _, a := range args {
			v, err := t.truth(a, p)
			if err != nil || v != and {
				return v, err
			}
		}
		return and, nil
	case "Fn::Split":
		s, err := t.Resolve(args[1], p)
		return strings.Split(fmt.Sprint(s), fmt.Sprint(args[0])), err
	}
	return nil, fmt.Errorf("intrinsic %s is not supported", fn)
}

func (t Template) truth(v any, p Params) (bool, error) {
	if m, ok := v.(map[string]any); ok && len(m) == 1 && m["Condition"] != nil {
		return t.Condition(fmt.Sprint(m["Condition"]), p)
	}
	r, err := t.Resolve(v, p)
	if err != nil {
		return false, err
	}
	b, ok := r.(bool)
	if !ok {
		return false, fmt.Errorf("%v is not a condition", r)
	}
	return b, nil
}

var subName = regexp.MustCompile(`\$\{([^}]*)\}`)

// sub substitutes ${Name}: a parameter's value, "<Ref Id>" for a resource,
// "<GetAtt Id.Attr>" for a resource's attribute.
func (t Template) sub(s string, p Params) (string, error) {
	var err error
	out := subName.ReplaceAllStringFunc(s, func(ref string) string {
		name := ref[2 : len(ref)-1]
		if id, attr, ok := strings.Cut(name, "."); ok && t.At("Resources", id) != nil {
			return "<GetAtt " + id + "." + attr + ">"
		}
		if t.At("Resources", name) != nil {
			return "<Ref " + name + ">"
		}
		v, e := t.value(name, p)
		err = cmp.Or(err, e)
		return v
	})
	return out, err
}

// Condition evaluates a condition of the Conditions section.
func (t Template) Condition(name string, p Params) (bool, error) {
	c := t.At("Conditions", name)
	if c == nil {
		return false, fmt.Errorf("no condition %s", name)
	}
	return t.truth(c, p)
}

// Property resolves a resource's value at a path of mapping keys (see
// Resolve); NoValue when the resource is not created (its Condition is
// false) or the value is absent.
func (t Template) Property(p Params, resource string, keys ...string) (any, error) {
	if t.At("Resources", resource) == nil {
		return nil, fmt.Errorf("no resource %s", resource)
	}
	if c, ok := t.At("Resources", resource, "Condition").(string); ok {
		if ok, err := t.Condition(c, p); err != nil || !ok {
			return NoValue, err
		}
	}
	v := t.At(append([]string{"Resources", resource}, keys...)...)
	if v == nil {
		return NoValue, nil
	}
	return t.Resolve(v, p)
}

// Check reports the first parameter value the stack would refuse: a value
// outside a parameter's AllowedValues, AllowedPattern (matching the whole
// value), MinValue, MaxValue or MaxLength, or a rule whose RuleCondition
// holds and an assertion of which does not.
func (t Template) Check(p Params) error {
	for _, name := range slices.Sorted(maps.Keys(t.At("Parameters").(map[string]any))) {
		v, err := t.value(name, p)
		if err != nil {
			return err
		}
		if err := t.Allowed(name, v); err != nil {
			return fmt.Errorf("parameter %s=%q: %w", name, v, err)
		}
	}
	rules, _ := t.At("Rules").(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(rules)) {
		rule := rules[name].(map[string]any)
		if c, ok := rule["RuleCondition"]; ok {
			holds, err := t.truth(c, p)
			if err != nil {
				return fmt.Errorf("rule %s: %w", name, err)
			}
			if !holds {
				continue
			}
		}
		for _, a := range rule["Assertions"].([]any) {
			a := a.(map[string]any)
			ok, err := t.truth(a["Assert"], p)
			if err != nil {
				return fmt.Errorf("rule %s: %w", name, err)
			}
			if !ok {
				return fmt.Errorf("rule %s: %s", name, a["AssertDescription"])
			}
		}
	}
	return nil
}

// Allowed reports whether the stack accepts a value of one parameter, as
// Check does for every parameter, rules aside.
func (t Template) Allowed(name, v string) error {
	spec, ok := t.At("Parameters", name).(map[string]any)
	if !ok {
		return fmt.Errorf("no parameter %s", name)
	}
	if vs, ok := spec["AllowedValues"]; ok && !slices.Contains(strs(vs), v) {
		return fmt.Errorf("not one of %v", vs)
	}
	if pat, ok := spec["AllowedPattern"].(string); ok {
		re, err := regexp.Compile(`^(?:` + pat + `)$`)
		if err != nil {
			return err
		}
		if !re.MatchString(v) {
			return fmt.Errorf("does not match %s", pat)
		}
	}
	number := func(k string) float64 { f, _ := strconv.ParseFloat(fmt.Sprint(spec[k]), 64); return f }
	if _, ok := spec["MaxLength"]; ok && float64(len(v)) > number("MaxLength") {
		return fmt.Errorf("longer than %v", spec["MaxLength"])
	}
	if spec["Type"] != "Number" {
		return nil
	}
	x, err := strconv.ParseFloat(v, 64)
	switch _, lo := spec["MinValue"]; {
	case err != nil:
		return fmt.Errorf("not a number")
	case lo && x < number("MinValue"):
		return fmt.Errorf("below %v", spec["MinValue"])
	}
	if _, hi := spec["MaxValue"]; hi && x > number("MaxValue") {
		return fmt.Errorf("above %v", spec["MaxValue"])
	}
	return nil
}

// Environment returns a function's environment variables for a
// deployment: those of the Globals section, overridden by the function's
// own, each resolved (see Resolve) and formatted as a string.
func (t Template) Environment(p Params, function string) (map[string]string, error) {
	out := map[string]string{}
	for _, vars := range []any{
		t.At("Globals", "Function", "Environment", "Variables"),
		t.At("Resources", function, "Properties", "Environment", "Variables"),
	} {
		if vars == nil {
			continue
		}
		r, err := t.Resolve(vars, p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", function, err)
		}
		for k, v := range r.(map[string]any) {
			out[k] = fmt.Sprint(v)
		}
	}
	return out, nil
}

// Env serves a function's environment (from Environment) to the
// function's own configuration code, as its getenv, and records which
// variables that code read. A "<Ref LogicalId>" value reads as the
// LogicalId: a table's name stands for the table.
type Env struct {
	vars map[string]string
	read map[string]bool
}

// NewEnv returns an Env over vars.
func NewEnv(vars map[string]string) *Env {
	return &Env{vars: vars, read: map[string]bool{}}
}

// Getenv returns the value of a variable, "" when it is not set.
func (e *Env) Getenv(name string) string {
	e.read[name] = true
	v := e.vars[name]
	if id, ok := strings.CutPrefix(v, "<Ref "); ok {
		return strings.TrimSuffix(id, ">")
	}
	return v
}

// Unread returns, sorted, the variables set that Getenv was never asked
// for.
func (e *Env) Unread() []string {
	var out []string
	for name := range e.vars {
		if !e.read[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
