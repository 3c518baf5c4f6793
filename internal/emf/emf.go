package emf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of a document. Where the EMF specification and CloudWatch's API
// differ, the stricter one applies, so that a document this package accepts
// is never rejected downstream.
const (
	// MaxMetrics is the most metric definitions in one directive.
	MaxMetrics = 100
	// MaxDimensions is the most dimension keys in one dimension set.
	MaxDimensions = 30
	// MaxValues is the most values in an array-valued metric member.
	MaxValues = 100
	// MaxNamespaceLen and MaxMetricNameLen are CloudWatch's limits
	// (PutMetricData); the EMF schema alone would allow 1024.
	MaxNamespaceLen  = 255
	MaxMetricNameLen = 255
	// MaxDimensionNameLen is the EMF schema's limit on a dimension key.
	MaxDimensionNameLen = 250
	// MaxDimensionValueLen is the EMF limit on a dimension member's value.
	MaxDimensionValueLen = 1024
	// MaxDocumentBytes bounds an encoded document: 256 KiB, CloudWatch
	// Logs' historical event size limit (the current one is 1 MB).
	MaxDocumentBytes = 256 << 10
)

// Unit is a CloudWatch metric unit.
type Unit string

// The units CloudWatch accepts (MetricDatum.Unit).
const (
	Seconds         Unit = "Seconds"
	Microseconds    Unit = "Microseconds"
	Milliseconds    Unit = "Milliseconds"
	Bytes           Unit = "Bytes"
	Kilobytes       Unit = "Kilobytes"
	Megabytes       Unit = "Megabytes"
	Gigabytes       Unit = "Gigabytes"
	Terabytes       Unit = "Terabytes"
	Bits            Unit = "Bits"
	Kilobits        Unit = "Kilobits"
	Megabits        Unit = "Megabits"
	Gigabits        Unit = "Gigabits"
	Terabits        Unit = "Terabits"
	Percent         Unit = "Percent"
	Count           Unit = "Count"
	BytesPerSecond  Unit = "Bytes/Second"
	KilobytesPerSec Unit = "Kilobytes/Second"
	MegabytesPerSec Unit = "Megabytes/Second"
	GigabytesPerSec Unit = "Gigabytes/Second"
	TerabytesPerSec Unit = "Terabytes/Second"
	BitsPerSecond   Unit = "Bits/Second"
	KilobitsPerSec  Unit = "Kilobits/Second"
	MegabitsPerSec  Unit = "Megabits/Second"
	GigabitsPerSec  Unit = "Gigabits/Second"
	TerabitsPerSec  Unit = "Terabits/Second"
	CountPerSecond  Unit = "Count/Second"
	None            Unit = "None"
)

var units = map[Unit]bool{
	Seconds: true, Microseconds: true, Milliseconds: true,
	Bytes: true, Kilobytes: true, Megabytes: true, Gigabytes: true, Terabytes: true,
	Bits: true, Kilobits: true, Megabits: true, Gigabits: true, Terabits: true,
	Percent: true, Count: true,
	BytesPerSecond: true, KilobytesPerSec: true, MegabytesPerSec: true, GigabytesPerSec: true, TerabytesPerSec: true,
	BitsPerSecond: true, KilobitsPerSec: true, MegabitsPerSec: true, GigabitsPerSec: true, TerabitsPerSec: true,
	CountPerSecond: true, None: true,
}

// Valid reports whether u is one of the units CloudWatch accepts.
func (u Unit) Valid() bool { return units[u] }

// Metric is one metric value.
type Metric struct {
	Name  string
	Value float64
	// Unit is the metric's unit. Empty leaves it out: CloudWatch then
	// assumes None.
	Unit Unit
	// HighResolution stores the metric at one-second resolution
	// (StorageResolution 1) instead of the default minute (60).
	HighResolution bool
}

// Dimension is one dimension of the document's metrics.
type Dimension struct {
	Name, Value string
}

// Document is one EMF log line: the metrics of one namespace, all with the
// same dimensions, at one time.
type Document struct {
	// Namespace is the CloudWatch namespace. Required; it must not begin
	// with "AWS/", which AWS reserves.
	Namespace string
	// Timestamp is the metrics' time, written in epoch milliseconds.
	// Required.
	Timestamp time.Time
	// Dimensions form the document's one dimension set, in this order.
	// Empty: the metrics have no dimension.
	Dimensions []Dimension
	// Metrics are the values, at least one, at most MaxMetrics.
	Metrics []Metric
	// Properties are other top-level members: searchable in CloudWatch
	// Logs Insights, not metrics. Values must encode as JSON.
	Properties map[string]any
}

// ErrInvalid matches every error of Encode, Write and Validate about a
// document's content.
var ErrInvalid = errors.New("emf: invalid document")

// Error says which member of a document breaks which rule. It matches
// ErrInvalid with errors.Is.
type Error struct {
	Member string // the member at fault, e.g. "_aws.Timestamp" or a metric name
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("emf: invalid document: %s: %s", e.Member, e.Reason)
}

// Is reports whether target is ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

func invalid(member, format string, args ...any) error {
	return &Error{Member: member, Reason: fmt.Sprintf(format, args...)}
}

// Encode returns d as one EMF JSON object, without a trailing newline. The
// members are, in order: "_aws" (Timestamp, then one directive with the
// namespace, the dimension set and the metric definitions), the dimension
// values, the metric values, then the properties sorted by name. Any
// breach of the specification or of CloudWatch's limits is an *Error and
// nothing is returned.
func Encode(d Document) ([]byte, error) {
	if err := checkDocument(d); err != nil {
		return nil, err
	}
	type definition struct {
		Name              string `json:"Name"`
		Unit              Unit   `json:"Unit,omitempty"`
		StorageResolution int    `json:"StorageResolution,omitempty"`
	}
	type directive struct {
		Namespace  string       `json:"Namespace"`
		Dimensions [][]string   `json:"Dimensions"`
		Metrics    []definition `json:"Metrics"`
	}
	dir := directive{Namespace: d.Namespace, Dimensions: [][]string{make([]string, 0, len(d.Dimensions))}}
	for _, dim := range d.Dimensions {
		dir.Dimensions[0] = append(dir.Dimensions[0], dim.Name)
	}
	for _, m := range d.Metrics {
		def := definition{Name: m.Name, Unit: m.Unit}
		if m.HighResolution {
			def.StorageResolution = 1
		}
		dir.Metrics = append(dir.Metrics, def)
	}
	meta := struct {
		Timestamp         int64       `json:"Timestamp"`
		CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
	}{d.Timestamp.UnixMilli(), []directive{dir}}

	var buf bytes.Buffer
	buf.WriteString(`{"_aws":`)
	if err := appendJSON(&buf, "_aws", meta); err != nil {
		return nil, err
	}
	member := func(name string, v any) error {
		buf.WriteByte(',')
		if err := appendJSON(&buf, name, name); err != nil {
			return err
		}
		buf.WriteByte(':')
		return appendJSON(&buf, name, v)
	}
	for _, dim := range d.Dimensions {
		if err := member(dim.Name, dim.Value); err != nil {
			return nil, err
		}
	}
	for _, m := range d.Metrics {
		if err := member(m.Name, m.Value); err != nil {
			return nil, err
		}
	}
	names := make([]string, 0, len(d.Properties))
	for name := range d.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := member(name, d.Properties[name]); err != nil {
			return nil, err
		}
	}
	buf.WriteByte('}')
	if buf.Len() > MaxDocumentBytes {
		return nil, invalid("document", "%d bytes, more than %d", buf.Len(), MaxDocumentBytes)
	}
	return buf.Bytes(), nil
}

// Write writes d, encoded by Encode, and a newline to w in a single Write
// call, so that lines written concurrently to one stream do not interleave.
// It writes nothing when d is invalid.
func Write(w io.Writer, d Document) error {
	b, err := Encode(d)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func appendJSON(buf *bytes.Buffer, member string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return invalid(member, "not encodable as JSON: %v", err)
	}
	buf.Write(b)
	return nil
}

// checkDocument applies every rule that Encode enforces before encoding.
func checkDocument(d Document) error {
	if err := checkNamespace(d.Namespace); err != nil {
		return err
	}
	if d.Timestamp.IsZero() || d.Timestamp.UnixMilli() < 0 {
		return invalid("_aws.Timestamp", "required, at or after 1970")
	}
	if len(d.Dimensions) > MaxDimensions {
		return invalid("Dimensions", "%d dimensions, more than %d", len(d.Dimensions), MaxDimensions)
	}
	switch {
	case len(d.Metrics) == 0:
		return invalid("Metrics", "at least one metric is required")
	case len(d.Metrics) > MaxMetrics:
		return invalid("Metrics", "%d metrics, more than %d", len(d.Metrics), MaxMetrics)
	}
	taken := map[string]string{"_aws": "reserved"}
	claim := func(name, as string) error {
		if prev, dup := taken[name]; dup {
			return invalid(name, "used as %s and as %s", prev, as)
		}
		taken[name] = as
		return nil
	}
	for _, dim := range d.Dimensions {
		if err := checkDimension(dim.Name, dim.Value); err != nil {
			return err
		}
		if err := claim(dim.Name, "a dimension"); err != nil {
			return err
		}
	}
	for _, m := range d.Metrics {
		if err := checkMetricName(m.Name); err != nil {
			return err
		}
		if m.Unit != "" && !m.Unit.Valid() {
			return invalid(m.Name, "unit %q is not a CloudWatch unit", m.Unit)
		}
		if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
			return invalid(m.Name, "value %v is not a finite number", m.Value)
		}
		if err := claim(m.Name, "a metric"); err != nil {
			return err
		}
	}
	for name := range d.Properties {
		if name == "" {
			return invalid("Properties", "a property needs a name")
		}
		if err := claim(name, "a property"); err != nil {
			return err
		}
	}
	return nil
}

func checkNamespace(ns string) error {
	switch {
	case ns == "" || len(ns) > MaxNamespaceLen:
		return invalid("Namespace", "must be 1 to %d bytes long", MaxNamespaceLen)
	case strings.HasPrefix(ns, "AWS/"):
		return invalid("Namespace", "%q: namespaces beginning with AWS/ are reserved", ns)
	case !printableASCII(ns) || strings.HasPrefix(ns, ":"):
		return invalid("Namespace", "%q: printable ASCII not beginning with a colon required", ns)
	case strings.TrimSpace(ns) == "":
		return invalid("Namespace", "%q: a namespace of blanks is dropped by CloudWatch with every metric in it; name it", ns)
	}
	return nil
}

// checkDimension applies CloudWatch's rules for dimensions: names and
// values of printable ASCII with at least one non-space character, names
// not beginning with a colon.
func checkDimension(name, value string) error {
	switch {
	case name == "" || len(name) > MaxDimensionNameLen:
		return invalid("Dimensions", "dimension name %q must be 1 to %d bytes long", name, MaxDimensionNameLen)
	case !printableASCII(name) || strings.TrimSpace(name) == "" || strings.HasPrefix(name, ":"):
		return invalid(name, "dimension name: printable ASCII, not blank, not beginning with a colon required")
	case value == "" || len(value) > MaxDimensionValueLen:
		return invalid(name, "dimension value must be 1 to %d bytes long", MaxDimensionValueLen)
	case !printableASCII(value) || strings.TrimSpace(value) == "":
		return invalid(name, "dimension value: printable ASCII, not blank required")
	}
	return nil
}

func checkMetricName(name string) error {
	switch {
	case name == "" || len(name) > MaxMetricNameLen:
		return invalid("Metrics", "metric name %q must be 1 to %d bytes long", name, MaxMetricNameLen)
	case !utf8.ValidString(name) || strings.TrimSpace(name) == "" || strings.ContainsFunc(name, isControl):
		return invalid(name, "metric name: valid UTF-8, not blank, no control characters required")
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
