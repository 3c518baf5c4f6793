// Package deploytest reads the SAM template (template.yaml) for tests that
// check it against the code: the TTL attribute of the key table, and the
// IAM actions each function is granted on each table.
//
// It understands the subset of CloudFormation the template uses: resources
// with Type and Properties, inline policy statements whose Resource is
// !GetAtt <LogicalId>.Arn (or a list of them), and scalar properties.
package deploytest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
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

// Actions returns, per logical id of a resource the statements name, the
// sorted actions an Allow statement of the function's inline policies
// grants on it.
func (t *Template) Actions(function string) (map[string][]string, error) {
	policies := t.Path(function, "Properties", "Policies")
	if policies == nil || policies.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s: no inline Policies", function)
	}
	sets := map[string]map[string]bool{}
	for _, p := range policies.Content {
		stmts := get(p, "Statement")
		if stmts == nil {
			return nil, fmt.Errorf("%s: a policy without Statement", function)
		}
		for _, s := range stmts.Content {
			if get(s, "Effect").Value != "Allow" {
				continue
			}
			targets, err := resources(get(s, "Resource"))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", function, err)
			}
			for _, target := range targets {
				if sets[target] == nil {
					sets[target] = map[string]bool{}
				}
				for _, a := range scalars(get(s, "Action")) {
					sets[target][a] = true
				}
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
	if n.Tag != "!GetAtt" || !strings.HasSuffix(n.Value, ".Arn") {
		return nil, fmt.Errorf("resource %q is not !GetAtt <table>.Arn: least privilege means naming the table", n.Value)
	}
	return []string{strings.TrimSuffix(n.Value, ".Arn")}, nil
}
