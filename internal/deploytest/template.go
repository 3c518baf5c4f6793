// Package deploytest reads the repository's SAM template for tests that
// check it against the code: the TTL attribute of the key table, the IAM
// actions each function is granted on each table, the environment each
// function gets for given parameter values, the values the stack refuses,
// the alarms, log groups and the HTTP API's authorizer.
//
// It understands the subset of CloudFormation the template uses: resources
// with Type, Condition and Properties, inline policy statements whose
// Resource is !GetAtt <LogicalId>.Arn (or a list of them), parameters with
// their constraints, rules, conditions, and the intrinsic functions Resolve
// lists.
package deploytest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Template is a parsed template.yaml.
type Template struct {
	top  *yaml.Node // the document's mapping
	root *yaml.Node // the Resources mapping
}

// Load reads the template at the repository root.
func Load() (*Template, error) {
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "template.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("template.yaml: %w", err)
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("template.yaml: empty")
	}
	res := get(doc.Content[0], "Resources")
	if res == nil {
		return nil, fmt.Errorf("template.yaml: no Resources")
	}
	return &Template{top: doc.Content[0], root: res}, nil
}

func get(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// Path returns the node at a path of mapping keys below a resource.
func (t *Template) Path(resource string, keys ...string) *yaml.Node {
	n := get(t.root, resource)
	for _, k := range keys {
		n = get(n, k)
	}
	return n
}

// Section returns the node at a path of mapping keys from the top of the
// template (Parameters, Conditions, Rules, ...), nil when absent.
func (t *Template) Section(keys ...string) *yaml.Node {
	n := t.top
	for _, k := range keys {
		n = get(n, k)
	}
	return n
}

// Scalar returns the value of a scalar property, "" when absent.
func (t *Template) Scalar(resource string, keys ...string) string {
	if n := t.Path(resource, keys...); n != nil && n.Kind == yaml.ScalarNode {
		return n.Value
	}
	return ""
}

// Type returns a resource's Type.
func (t *Template) Type(resource string) string { return t.Scalar(resource, "Type") }

// Resources returns the logical ids of the resources of a type, in the
// template's order.
func (t *Template) Resources(typ string) []string {
	var out []string
	for i := 0; i+1 < len(t.root.Content); i += 2 {
		if id := t.root.Content[i].Value; t.Type(id) == typ {
			out = append(out, id)
		}
	}
	return out
}

// Actions returns, per logical id of a resource the statements name, the
// sorted actions an Allow statement of the function's inline policies
// grants on it.
func (t *Template) Actions(function string) (map[string][]string, error) {
	return t.ActionsFor(function, nil)
}

// ActionsFor is Actions for a deployment with parameters p: a statement
// written as !If [condition, statement, !Ref AWS::NoValue] counts when the
// condition holds for p. A resource !Sub "${Table.Arn}/index/<name>" (an
// index of the table) counts as the table.
func (t *Template) ActionsFor(function string, params Params) (map[string][]string, error) {
	stmts, err := t.Statements(function, params)
	if err != nil {
		return nil, err
	}
	sets := map[string]map[string]bool{}
	for _, s := range stmts {
		for _, target := range s.Resources {
			target, _, _ = strings.Cut(target, "/index/")
			if sets[target] == nil {
				sets[target] = map[string]bool{}
			}
			for _, a := range s.Actions {
				sets[target][a] = true
			}
		}
	}
	out := map[string][]string{}
	for target, set := range sets {
		for a := range set {
			out[target] = append(out[target], a)
		}
		sort.Strings(out[target])
	}
	return out, nil
}

// Statement is one Allow statement of a function's inline policies.
type Statement struct {
	// Actions are the statement's actions.
	Actions []string
	// Resources are the logical ids of the resources it names, an index
	// of a table as "<table>/index/<name>".
	Resources []string
	// Condition is the statement's Condition, resolved (nil without one).
	Condition any
}

// Statements returns the Allow statements of the function's inline
// policies for a deployment with parameters p (see ActionsFor).
func (t *Template) Statements(function string, params Params) ([]Statement, error) {
	policies := t.Path(function, "Properties", "Policies")
	if policies == nil || policies.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s: no inline Policies", function)
	}
	var out []Statement
	for _, p := range policies.Content {
		stmts := get(p, "Statement")
		if stmts == nil {
			return nil, fmt.Errorf("%s: a policy without Statement", function)
		}
		for _, s := range stmts.Content {
			if s.Tag == "!If" {
				if s.Kind != yaml.SequenceNode || len(s.Content) != 3 {
					return nil, fmt.Errorf("%s: a statement !If wants 3 arguments", function)
				}
				ok, err := t.Condition(s.Content[0].Value, params)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", function, err)
				}
				branches := s.Content
				if s = branches[2]; ok {
					s = branches[1]
				}
				if s.Tag == "!Ref" && s.Value == "AWS::NoValue" {
					continue
				}
			}
			if get(s, "Effect").Value != "Allow" {
				continue
			}
			targets, err := resources(get(s, "Resource"))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", function, err)
			}
			stmt := Statement{Actions: scalars(get(s, "Action")), Resources: targets}
			if c := get(s, "Condition"); c != nil {
				if stmt.Condition, err = t.Resolve(c, params); err != nil {
					return nil, fmt.Errorf("%s: %w", function, err)
				}
			}
			out = append(out, stmt)
		}
	}
	return out, nil
}

func scalars(n *yaml.Node) []string {
	switch {
	case n == nil:
		return nil
	case n.Kind == yaml.ScalarNode:
		return []string{n.Value}
	}
	var out []string
	for _, c := range n.Content {
		out = append(out, scalars(c)...)
	}
	return out
}

// resources resolves a statement's Resource: each must be
// !GetAtt <LogicalId>.Arn, which names the resource by logical id.
func resources(n *yaml.Node) ([]string, error) {
	if n == nil {
		return nil, fmt.Errorf("statement without Resource")
	}
	if n.Kind == yaml.SequenceNode {
		var out []string
		for _, c := range n.Content {
			r, err := resources(c)
			if err != nil {
				return nil, err
			}
			out = append(out, r...)
		}
		return out, nil
	}
	if n.Tag == "!Sub" && strings.HasPrefix(n.Value, "${") {
		if table, rest, ok := strings.Cut(strings.TrimPrefix(n.Value, "${"), ".Arn}/index/"); ok && rest != "" && !strings.ContainsAny(rest, "${}*") {
			return []string{table + "/index/" + rest}, nil
		}
	}
	if n.Tag != "!GetAtt" || !strings.HasSuffix(n.Value, ".Arn") {
		return nil, fmt.Errorf("resource %q is not !GetAtt <table>.Arn: least privilege means naming the table", n.Value)
	}
	return []string{strings.TrimSuffix(n.Value, ".Arn")}, nil
}

// NoValue is what Resolve returns for AWS::NoValue: the property is absent.
var NoValue = noValue{}

type noValue struct{}

// Params are the values of a deployment: parameters by name (a parameter
// missing from the map takes its Default) and pseudo parameters such as
// AWS::Region and AWS::StackName.
type Params map[string]string

// value returns the value of a parameter or pseudo parameter.
func (t *Template) value(name string, p Params) (string, error) {
	if v, ok := p[name]; ok {
		return v, nil
	}
	if d := t.Section("Parameters", name, "Default"); d != nil {
		return d.Value, nil
	}
	if t.Section("Parameters", name) != nil {
		return "", fmt.Errorf("parameter %s has no Default and no value", name)
	}
	return "", fmt.Errorf("no value for %s", name)
}

// Resolve evaluates a node of the template for a deployment: !Ref of a
// parameter or pseudo parameter gives its value, !Ref of a resource gives
// "<Ref LogicalId>", !GetAtt gives "<GetAtt LogicalId.Attr>", !Ref
// AWS::NoValue gives NoValue; !Sub (its one-argument form), !If (with the
// template's Conditions), !Equals, !Not, !And, !Or and !Split are
// evaluated; mappings and sequences are resolved member by member, leaving
// out the NoValue ones. Scalars are strings.
func (t *Template) Resolve(n *yaml.Node, p Params) (any, error) {
	if n == nil {
		return nil, fmt.Errorf("nothing to resolve")
	}
	args := func(want int) ([]*yaml.Node, error) {
		if n.Kind != yaml.SequenceNode || len(n.Content) != want {
			return nil, fmt.Errorf("%s wants %d arguments", n.Tag, want)
		}
		return n.Content, nil
	}
	switch n.Tag {
	case "!Ref":
		switch name := n.Value; {
		case name == "AWS::NoValue":
			return NoValue, nil
		case get(t.root, name) != nil:
			return "<Ref " + name + ">", nil
		default:
			return t.value(name, p)
		}
	case "!GetAtt":
		return "<GetAtt " + n.Value + ">", nil
	case "!Sub":
		return t.sub(n.Value, p)
	case "!If":
		a, err := args(3)
		if err != nil {
			return nil, err
		}
		ok, err := t.Condition(a[0].Value, p)
		if err != nil {
			return nil, err
		}
		if ok {
			return t.Resolve(a[1], p)
		}
		return t.Resolve(a[2], p)
	case "!Equals":
		a, err := args(2)
		if err != nil {
			return nil, err
		}
		x, err := t.Resolve(a[0], p)
		if err != nil {
			return nil, err
		}
		y, err := t.Resolve(a[1], p)
		return fmt.Sprint(x) == fmt.Sprint(y), err
	case "!Not":
		a, err := args(1)
		if err != nil {
			return nil, err
		}
		v, err := t.truth(a[0], p)
		return !v, err
	case "!And", "!Or":
		and := n.Tag == "!And"
		for _, c := range n.Content {
			v, err := t.truth(c, p)
			if err != nil {
				return nil, err
			}
			if v != and {
				return v, nil
			}
		}
		return and, nil
	case "!Split":
		a, err := args(2)
		if err != nil {
			return nil, err
		}
		s, err := t.Resolve(a[1], p)
		if err != nil {
			return nil, err
		}
		return strings.Split(fmt.Sprint(s), a[0].Value), nil
	}
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		return nil, fmt.Errorf("intrinsic %s is not supported", n.Tag)
	}
	switch n.Kind {
	case yaml.MappingNode:
		out := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := t.Resolve(n.Content[i+1], p)
			if err != nil {
				return nil, err
			}
			if v != NoValue {
				out[n.Content[i].Value] = v
			}
		}
		return out, nil
	case yaml.SequenceNode:
		out := []any{}
		for _, c := range n.Content {
			v, err := t.Resolve(c, p)
			if err != nil {
				return nil, err
			}
			if v != NoValue {
				out = append(out, v)
			}
		}
		return out, nil
	}
	return n.Value, nil
}

func (t *Template) truth(n *yaml.Node, p Params) (bool, error) {
	if n.Kind == yaml.MappingNode && len(n.Content) == 2 && n.Content[0].Value == "Condition" {
		return t.Condition(n.Content[1].Value, p)
	}
	v, err := t.Resolve(n, p)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("%v is not a condition", v)
	}
	return b, nil
}

// sub substitutes ${Name} in s with the value of a parameter, a pseudo
// parameter, or "<Ref LogicalId>" for a resource.
func (t *Template) sub(s string, p Params) (string, error) {
	var b strings.Builder
	for {
		start := strings.Index(s, "${")
		if start < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		end := strings.Index(s[start:], "}")
		if end < 0 {
			return "", fmt.Errorf("!Sub %q: unclosed ${", s)
		}
		name := s[start+2 : start+end]
		b.WriteString(s[:start])
		if get(t.root, name) != nil {
			b.WriteString("<Ref " + name + ">")
		} else {
			v, err := t.value(name, p)
			if err != nil {
				return "", err
			}
			b.WriteString(v)
		}
		s = s[start+end+1:]
	}
}

// Condition evaluates a condition of the Conditions section.
func (t *Template) Condition(name string, p Params) (bool, error) {
	c := t.Section("Conditions", name)
	if c == nil {
		return false, fmt.Errorf("no condition %s", name)
	}
	return t.truth(c, p)
}

// Property resolves a resource's node at a path of mapping keys (see
// Resolve); NoValue when the resource is not created (its Condition is
// false) or the node is absent.
func (t *Template) Property(p Params, resource string, keys ...string) (any, error) {
	if get(t.root, resource) == nil {
		return nil, fmt.Errorf("no resource %s", resource)
	}
	if c := t.Scalar(resource, "Condition"); c != "" {
		ok, err := t.Condition(c, p)
		if err != nil || !ok {
			return NoValue, err
		}
	}
	n := t.Path(resource, keys...)
	if n == nil {
		return NoValue, nil
	}
	return t.Resolve(n, p)
}

// Check reports the first parameter value the stack would refuse: a value
// outside a parameter's AllowedValues, AllowedPattern, MinValue, MaxValue
// or MaxLength, or a rule whose RuleCondition holds and an assertion of
// which does not. The AllowedPattern must match the whole value.
func (t *Template) Check(p Params) error {
	params := t.Section("Parameters")
	for i := 0; params != nil && i+1 < len(params.Content); i += 2 {
		name, spec := params.Content[i].Value, params.Content[i+1]
		v, err := t.value(name, p)
		if err != nil {
			return err
		}
		if err := allowed(spec, v); err != nil {
			return fmt.Errorf("parameter %s=%q: %w", name, v, err)
		}
	}
	rules := t.Section("Rules")
	for i := 0; rules != nil && i+1 < len(rules.Content); i += 2 {
		name, rule := rules.Content[i].Value, rules.Content[i+1]
		if c := get(rule, "RuleCondition"); c != nil {
			ok, err := t.truth(c, p)
			if err != nil {
				return fmt.Errorf("rule %s: %w", name, err)
			}
			if !ok {
				continue
			}
		}
		for _, a := range get(rule, "Assertions").Content {
			ok, err := t.truth(get(a, "Assert"), p)
			if err != nil {
				return fmt.Errorf("rule %s: %w", name, err)
			}
			if !ok {
				return fmt.Errorf("rule %s: %s", name, get(a, "AssertDescription").Value)
			}
		}
	}
	return nil
}

// Allowed reports whether the stack accepts a value of one parameter, as
// Check does for every parameter, rules aside.
func (t *Template) Allowed(name, value string) error {
	spec := t.Section("Parameters", name)
	if spec == nil {
		return fmt.Errorf("no parameter %s", name)
	}
	return allowed(spec, value)
}

// allowed checks a value against a parameter's constraints.
func allowed(spec *yaml.Node, v string) error {
	if vs := get(spec, "AllowedValues"); vs != nil && !slices.Contains(scalars(vs), v) {
		return fmt.Errorf("not one of %v", scalars(vs))
	}
	if pat := get(spec, "AllowedPattern"); pat != nil {
		re, err := regexp.Compile(`^(?:` + pat.Value + `)$`)
		if err != nil {
			return err
		}
		if !re.MatchString(v) {
			return fmt.Errorf("does not match %s", pat.Value)
		}
	}
	if m := get(spec, "MaxLength"); m != nil {
		if n, _ := strconv.Atoi(m.Value); len(v) > n {
			return fmt.Errorf("longer than %d", n)
		}
	}
	if get(spec, "Type").Value == "Number" {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("not a number")
		}
		if m := get(spec, "MinValue"); m != nil {
			if lo, _ := strconv.ParseFloat(m.Value, 64); x < lo {
				return fmt.Errorf("below %s", m.Value)
			}
		}
		if m := get(spec, "MaxValue"); m != nil {
			if hi, _ := strconv.ParseFloat(m.Value, 64); x > hi {
				return fmt.Errorf("above %s", m.Value)
			}
		}
	}
	return nil
}

// Environment returns a function's environment variables for a
// deployment: those of the Globals section, overridden by the function's
// own, each resolved (see Resolve) and formatted as a string.
func (t *Template) Environment(p Params, function string) (map[string]string, error) {
	out := map[string]string{}
	for _, n := range []*yaml.Node{
		t.Section("Globals", "Function", "Environment", "Variables"),
		t.Path(function, "Properties", "Environment", "Variables"),
	} {
		if n == nil {
			continue
		}
		vars, err := t.Resolve(n, p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", function, err)
		}
		for k, v := range vars.(map[string]any) {
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
	sort.Strings(out)
	return out
}
