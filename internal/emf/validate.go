package emf

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
)

// Validate checks that doc is one valid EMF document, by the rules of the
// specification and the limits above, without using Encode:
//
//   - doc is a single JSON object of at most MaxDocumentBytes, with no
//     other data before or after it;
//   - its member "_aws" is an object holding exactly "Timestamp", a
//     non-negative integer, and "CloudWatchMetrics", a non-empty array of
//     metric directives;
//   - each directive holds exactly "Namespace" (a valid, unreserved
//     namespace), "Dimensions" (a non-empty array of dimension sets, each
//     an array of at most MaxDimensions dimension keys) and "Metrics" (an
//     array of at most MaxMetrics metric definitions);
//   - each dimension key names a top-level member whose value is a
//     string within CloudWatch's rules for dimension values;
//   - each metric definition holds "Name" and optionally "Unit" (a
//     CloudWatch unit) and "StorageResolution" (the integer 1 or 60), and
//     nothing else; a name appears once per directive, and names a
//     top-level member whose value is a number or an array of at most
//     MaxValues numbers.
//
// Validate is stricter than the specification in two ways: it rejects
// unknown members inside "_aws", directives and definitions (which the
// specification says to ignore), and a document with no directive. The
// error matches ErrInvalid.
func Validate(doc []byte) error {
	if len(doc) > MaxDocumentBytes {
		return invalid("document", "%d bytes, more than %d", len(doc), MaxDocumentBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		return invalid("document", "not a JSON object: %v", err)
	}
	if root == nil {
		return invalid("document", "not a JSON object")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return invalid("document", "data after the JSON object")
	}
	meta, ok := root["_aws"].(map[string]any)
	if !ok {
		return invalid("_aws", "required, and must be an object")
	}
	if err := onlyMembers("_aws", meta, "Timestamp", "CloudWatchMetrics"); err != nil {
		return err
	}
	if _, ok := nonNegativeInteger(meta["Timestamp"]); !ok {
		return invalid("_aws.Timestamp", "required, and must be a non-negative integer (epoch milliseconds)")
	}
	directives, ok := meta["CloudWatchMetrics"].([]any)
	if !ok || len(directives) == 0 {
		return invalid("_aws.CloudWatchMetrics", "required, and must be a non-empty array")
	}
	for i, d := range directives {
		if err := validateDirective(root, "_aws.CloudWatchMetrics["+strconv.Itoa(i)+"]", d); err != nil {
			return err
		}
	}
	return nil
}

func validateDirective(root map[string]any, at string, v any) error {
	dir, ok := v.(map[string]any)
	if !ok {
		return invalid(at, "a metric directive must be an object")
	}
	if err := onlyMembers(at, dir, "Namespace", "Dimensions", "Metrics"); err != nil {
		return err
	}
	ns, ok := dir["Namespace"].(string)
	if !ok {
		return invalid(at+".Namespace", "required, and must be a string")
	}
	if err := checkNamespace(ns); err != nil {
		return err
	}
	sets, ok := dir["Dimensions"].([]any)
	if !ok || len(sets) == 0 {
		return invalid(at+".Dimensions", "required, and must be a non-empty array of dimension sets")
	}
	for i, s := range sets {
		setAt := at + ".Dimensions[" + strconv.Itoa(i) + "]"
		keys, ok := s.([]any)
		if !ok {
			return invalid(setAt, "a dimension set must be an array")
		}
		if len(keys) > MaxDimensions {
			return invalid(setAt, "%d dimension keys, more than %d", len(keys), MaxDimensions)
		}
		for _, k := range keys {
			name, ok := k.(string)
			if !ok {
				return invalid(setAt, "dimension keys must be strings")
			}
			value, ok := root[name].(string)
			if !ok {
				return invalid(name, "dimension key of %s: the root must hold it as a string member", setAt)
			}
			if err := checkDimension(name, value); err != nil {
				return err
			}
		}
	}
	defs, ok := dir["Metrics"].([]any)
	if !ok {
		return invalid(at+".Metrics", "required, and must be an array")
	}
	if len(defs) > MaxMetrics {
		return invalid(at+".Metrics", "%d metric definitions, more than %d", len(defs), MaxMetrics)
	}
	seen := make(map[string]bool, len(defs))
	for i, d := range defs {
		defAt := at + ".Metrics[" + strconv.Itoa(i) + "]"
		def, ok := d.(map[string]any)
		if !ok {
			return invalid(defAt, "a metric definition must be an object")
		}
		if err := onlyMembers(defAt, def, "Name", "Unit", "StorageResolution"); err != nil {
			return err
		}
		name, ok := def["Name"].(string)
		if !ok {
			return invalid(defAt+".Name", "required, and must be a string")
		}
		if err := checkMetricName(name); err != nil {
			return err
		}
		if seen[name] {
			return invalid(name, "defined twice in %s", at)
		}
		seen[name] = true
		if u, present := def["Unit"]; present {
			if s, ok := u.(string); !ok || !Unit(s).Valid() {
				return invalid(name, "unit %v is not a CloudWatch unit", u)
			}
		}
		if r, present := def["StorageResolution"]; present {
			if n, ok := nonNegativeInteger(r); !ok || (n != 1 && n != 60) {
				return invalid(name, "StorageResolution %v: must be the integer 1 or 60", r)
			}
		}
		if err := validateMetricValue(name, root[name]); err != nil {
			return err
		}
	}
	return nil
}

func validateMetricValue(name string, v any) error {
	switch v := v.(type) {
	case json.Number:
		return nil
	case []any:
		if len(v) > MaxValues {
			return invalid(name, "%d values, more than %d", len(v), MaxValues)
		}
		for _, e := range v {
			if _, ok := e.(json.Number); !ok {
				return invalid(name, "an array of metric values must hold only numbers")
			}
		}
		return nil
	case nil:
		return invalid(name, "metric defined but the root holds no such member")
	}
	return invalid(name, "a metric member must be a number or an array of numbers")
}

// onlyMembers rejects members of obj other than allowed.
func onlyMembers(at string, obj map[string]any, allowed ...string) error {
	for name := range obj {
		known := false
		for _, a := range allowed {
			known = known || name == a
		}
		if !known {
			return invalid(at, "unknown member %q", name)
		}
	}
	return nil
}

// nonNegativeInteger returns v as an integer if it is a JSON number
// written without fraction or exponent and not negative.
func nonNegativeInteger(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok || strings.ContainsAny(string(n), ".eE-") {
		return 0, false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	return i, err == nil
}
