package emf_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/internal/emf"
)

var at = time.UnixMilli(1_800_000_000_123)

func sweepDocument() emf.Document {
	return emf.Document{
		Namespace:  "idemkey",
		Timestamp:  at,
		Dimensions: []emf.Dimension{{Name: "TableName", Value: "keys"}},
		Metrics: []emf.Metric{
			{Name: "Evicted", Value: 12, Unit: emf.Count},
			{Name: "EvictionLagSeconds", Value: 3.5, Unit: emf.Seconds},
			{Name: "Ratio", Value: 0.25},
			{Name: "Fast", Value: 1, Unit: emf.Count, HighResolution: true},
		},
		Properties: map[string]any{"Finished": true, "StoppedBy": "budget"},
	}
}

func TestEncodeWritesTheSpecifiedStructure(t *testing.T) {
	b, err := emf.Encode(sweepDocument())
	require.NoError(t, err)
	require.NoError(t, emf.Validate(b))
	assert.JSONEq(t, `{
		"_aws": {
			"Timestamp": 1800000000123,
			"CloudWatchMetrics": [{
				"Namespace": "idemkey",
				"Dimensions": [["TableName"]],
				"Metrics": [
					{"Name": "Evicted", "Unit": "Count"},
					{"Name": "EvictionLagSeconds", "Unit": "Seconds"},
					{"Name": "Ratio"},
					{"Name": "Fast", "Unit": "Count", "StorageResolution": 1}
				]
			}]
		},
		"TableName": "keys",
		"Evicted": 12,
		"EvictionLagSeconds": 3.5,
		"Ratio": 0.25,
		"Fast": 1,
		"Finished": true,
		"StoppedBy": "budget"
	}`, string(b))
	assert.True(t, strings.HasPrefix(string(b), `{"_aws":{"Timestamp":1800000000123,`), "metadata first, timestamp an integer: %s", b)
}

func TestEncodeIsDeterministic(t *testing.T) {
	first, err := emf.Encode(sweepDocument())
	require.NoError(t, err)
	for range 20 {
		again, err := emf.Encode(sweepDocument())
		require.NoError(t, err)
		require.Equal(t, string(first), string(again))
	}
}

func TestEncodeWithoutDimensionsWritesOneEmptyDimensionSet(t *testing.T) {
	d := sweepDocument()
	d.Dimensions = nil
	b, err := emf.Encode(d)
	require.NoError(t, err)
	require.NoError(t, emf.Validate(b))
	assert.Contains(t, string(b), `"Dimensions":[[]]`)
}

func TestEncodeAcceptsExactlyTheLimits(t *testing.T) {
	d := emf.Document{Namespace: strings.Repeat("n", emf.MaxNamespaceLen), Timestamp: at}
	for i := range emf.MaxDimensions {
		d.Dimensions = append(d.Dimensions, emf.Dimension{Name: fmt.Sprintf("D%02d", i), Value: strings.Repeat("v", emf.MaxDimensionValueLen)})
	}
	for i := range emf.MaxMetrics {
		d.Metrics = append(d.Metrics, emf.Metric{Name: fmt.Sprintf("M%03d", i), Value: float64(i), Unit: emf.Count})
	}
	b, err := emf.Encode(d)
	require.NoError(t, err)
	require.NoError(t, emf.Validate(b))
}

func TestEncodeRefusesWhatTheSpecificationForbids(t *testing.T) {
	many := func(n int, f func(i int, d *emf.Document)) func(*emf.Document) {
		return func(d *emf.Document) {
			for i := range n {
				f(i, d)
			}
		}
	}
	cases := map[string]func(*emf.Document){
		"no namespace":       func(d *emf.Document) { d.Namespace = "" },
		"blank namespace":    func(d *emf.Document) { d.Namespace = "   " },
		"reserved namespace": func(d *emf.Document) { d.Namespace = "AWS/DynamoDB" },
		"long namespace":     func(d *emf.Document) { d.Namespace = strings.Repeat("n", emf.MaxNamespaceLen+1) },
		"control in ns":      func(d *emf.Document) { d.Namespace = "a\nb" },
		"no timestamp":       func(d *emf.Document) { d.Timestamp = time.Time{} },
		"timestamp pre-1970": func(d *emf.Document) { d.Timestamp = time.Unix(-10, 0) },
		"no metrics":         func(d *emf.Document) { d.Metrics = nil },
		"101 metrics": many(emf.MaxMetrics+1-4, func(i int, d *emf.Document) {
			d.Metrics = append(d.Metrics, emf.Metric{Name: fmt.Sprint("X", i), Value: 1})
		}),
		"31 dimensions": many(emf.MaxDimensions, func(i int, d *emf.Document) {
			d.Dimensions = append(d.Dimensions, emf.Dimension{Name: fmt.Sprint("D", i), Value: "v"})
		}),
		"unknown unit":        func(d *emf.Document) { d.Metrics[0].Unit = "Items" },
		"NaN value":           func(d *emf.Document) { d.Metrics[0].Value = math.NaN() },
		"infinite value":      func(d *emf.Document) { d.Metrics[0].Value = math.Inf(1) },
		"blank metric name":   func(d *emf.Document) { d.Metrics[0].Name = "  " },
		"long metric name":    func(d *emf.Document) { d.Metrics[0].Name = strings.Repeat("m", emf.MaxMetricNameLen+1) },
		"metric twice":        func(d *emf.Document) { d.Metrics[1].Name = d.Metrics[0].Name },
		"metric = dimension":  func(d *emf.Document) { d.Metrics[0].Name = "TableName" },
		"property = metric":   func(d *emf.Document) { d.Properties["Evicted"] = 1 },
		"property _aws":       func(d *emf.Document) { d.Properties["_aws"] = 1 },
		"empty property name": func(d *emf.Document) { d.Properties[""] = 1 },
		"unencodable prop":    func(d *emf.Document) { d.Properties["ch"] = make(chan int) },
		"empty dim value":     func(d *emf.Document) { d.Dimensions[0].Value = "" },
		"blank dim value":     func(d *emf.Document) { d.Dimensions[0].Value = "   " },
		"non-ASCII dim value": func(d *emf.Document) { d.Dimensions[0].Value = "tablé" },
		"long dim value":      func(d *emf.Document) { d.Dimensions[0].Value = strings.Repeat("v", emf.MaxDimensionValueLen+1) },
		"colon dim name":      func(d *emf.Document) { d.Dimensions[0].Name = ":Table" },
		"long dim name":       func(d *emf.Document) { d.Dimensions[0].Name = strings.Repeat("d", emf.MaxDimensionNameLen+1) },
		"too large":           func(d *emf.Document) { d.Properties["big"] = strings.Repeat("x", emf.MaxDocumentBytes) },
	}
	for name, breakIt := range cases {
		t.Run(name, func(t *testing.T) {
			d := sweepDocument()
			breakIt(&d)
			b, err := emf.Encode(d)
			require.ErrorIs(t, err, emf.ErrInvalid)
			var e *emf.Error
			require.ErrorAs(t, err, &e)
			assert.NotEmpty(t, e.Member)
			assert.Nil(t, b)

			var out bytes.Buffer
			require.ErrorIs(t, emf.Write(&out, d), emf.ErrInvalid)
			assert.Zero(t, out.Len(), "Write wrote an invalid document")
		})
	}
}

// countingWriter records each Write call.
type countingWriter struct{ writes [][]byte }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes = append(w.writes, append([]byte(nil), p...))
	return len(p), nil
}

func TestWriteEmitsOneLineInOneCall(t *testing.T) {
	var w countingWriter
	require.NoError(t, emf.Write(&w, sweepDocument()))
	require.Len(t, w.writes, 1)
	line := w.writes[0]
	require.True(t, bytes.HasSuffix(line, []byte("\n")))
	assert.Equal(t, 1, bytes.Count(line, []byte("\n")), "exactly one line")
	require.NoError(t, emf.Validate(bytes.TrimSuffix(line, []byte("\n"))))
}

func TestWriteReportsTheWritersError(t *testing.T) {
	err := emf.Write(failingWriter{}, sweepDocument())
	require.ErrorIs(t, err, os.ErrClosed)
	assert.NotErrorIs(t, err, emf.ErrInvalid)
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

// validDocument is a document written by hand to the specification, used
// as the base of the Validate cases.
const validDocument = `{
  "_aws": {
    "Timestamp": 1700000000000,
    "CloudWatchMetrics": [{
      "Namespace": "shop",
      "Dimensions": [["Service", "Stage"], []],
      "Metrics": [
        {"Name": "Latency", "Unit": "Milliseconds", "StorageResolution": 60},
        {"Name": "Batch", "Unit": "Count/Second"},
        {"Name": "Bare"}
      ]
    }]
  },
  "Service": "cart",
  "Stage": "prod",
  "Latency": 12.5,
  "Batch": [1, 2, 3],
  "Bare": -4,
  "requestId": "r-1",
  "nested": {"anything": [true, null]}
}`

func TestValidateAcceptsAHandWrittenDocument(t *testing.T) {
	require.NoError(t, emf.Validate([]byte(validDocument)))
}

// edit returns validDocument changed by f, which works on the parsed form.
func edit(t *testing.T, f func(root map[string]any)) []byte {
	t.Helper()
	var root map[string]any
	dec := json.NewDecoder(strings.NewReader(validDocument))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&root))
	f(root)
	b, err := json.Marshal(root)
	require.NoError(t, err)
	return b
}

func directive(root map[string]any) map[string]any {
	return root["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
}

func definition(root map[string]any, i int) map[string]any {
	return directive(root)["Metrics"].([]any)[i].(map[string]any)
}

func TestValidateRejectsEachBrokenRule(t *testing.T) {
	raw := map[string]string{
		"not JSON":          `{"_aws":`,
		"an array":          `[1]`,
		"null":              `null`,
		"trailing data":     validDocument + ` {}`,
		"trailing garbage":  validDocument + `x`,
		"timestamp decimal": strings.Replace(validDocument, "1700000000000", "1700000000000.5", 1),
		"timestamp exp":     strings.Replace(validDocument, "1700000000000", "1.7e12", 1),
		"timestamp neg":     strings.Replace(validDocument, "1700000000000", "-1", 1),
		"timestamp string":  strings.Replace(validDocument, "1700000000000", `"1700000000000"`, 1),
		"too large":         strings.Replace(validDocument, `"r-1"`, `"`+strings.Repeat("r", emf.MaxDocumentBytes)+`"`, 1),
	}
	edits := map[string]func(root map[string]any){
		"no _aws":             func(r map[string]any) { delete(r, "_aws") },
		"_aws not an object":  func(r map[string]any) { r["_aws"] = "x" },
		"_aws extra member":   func(r map[string]any) { r["_aws"].(map[string]any)["Extra"] = 1 },
		"no Timestamp":        func(r map[string]any) { delete(r["_aws"].(map[string]any), "Timestamp") },
		"no directives":       func(r map[string]any) { delete(r["_aws"].(map[string]any), "CloudWatchMetrics") },
		"empty directives":    func(r map[string]any) { r["_aws"].(map[string]any)["CloudWatchMetrics"] = []any{} },
		"directive not obj":   func(r map[string]any) { r["_aws"].(map[string]any)["CloudWatchMetrics"] = []any{"x"} },
		"directive extra":     func(r map[string]any) { directive(r)["Extra"] = 1 },
		"no Namespace":        func(r map[string]any) { delete(directive(r), "Namespace") },
		"Namespace number":    func(r map[string]any) { directive(r)["Namespace"] = 1 },
		"Namespace reserved":  func(r map[string]any) { directive(r)["Namespace"] = "AWS/Lambda" },
		"no Dimensions":       func(r map[string]any) { delete(directive(r), "Dimensions") },
		"Dimensions empty":    func(r map[string]any) { directive(r)["Dimensions"] = []any{} },
		"set not an array":    func(r map[string]any) { directive(r)["Dimensions"] = []any{"Service"} },
		"dimension key num":   func(r map[string]any) { directive(r)["Dimensions"] = []any{[]any{1}} },
		"dimension missing":   func(r map[string]any) { delete(r, "Stage") },
		"dimension number":    func(r map[string]any) { r["Stage"] = 3 },
		"dimension empty":     func(r map[string]any) { r["Stage"] = "" },
		"dimension too long":  func(r map[string]any) { r["Stage"] = strings.Repeat("s", emf.MaxDimensionValueLen+1) },
		"31 dimension keys":   func(r map[string]any) { directive(r)["Dimensions"] = []any{thirtyOneKeys(r)} },
		"no Metrics":          func(r map[string]any) { delete(directive(r), "Metrics") },
		"Metrics not array":   func(r map[string]any) { directive(r)["Metrics"] = map[string]any{} },
		"101 definitions":     func(r map[string]any) { directive(r)["Metrics"] = hundredAndOneDefinitions(r) },
		"definition not obj":  func(r map[string]any) { directive(r)["Metrics"] = []any{"Latency"} },
		"definition extra":    func(r map[string]any) { definition(r, 0)["Extra"] = 1 },
		"definition no Name":  func(r map[string]any) { delete(definition(r, 0), "Name") },
		"Name not a string":   func(r map[string]any) { definition(r, 0)["Name"] = 1 },
		"Name defined twice":  func(r map[string]any) { definition(r, 1)["Name"] = "Latency" },
		"unknown unit":        func(r map[string]any) { definition(r, 0)["Unit"] = "Millis" },
		"unit not a string":   func(r map[string]any) { definition(r, 0)["Unit"] = 1 },
		"resolution 30":       func(r map[string]any) { definition(r, 0)["StorageResolution"] = 30 },
		"resolution decimal":  func(r map[string]any) { definition(r, 0)["StorageResolution"] = json.Number("60.0") },
		"resolution string":   func(r map[string]any) { definition(r, 0)["StorageResolution"] = "60" },
		"metric missing":      func(r map[string]any) { delete(r, "Latency") },
		"metric a string":     func(r map[string]any) { r["Latency"] = "12" },
		"metric an object":    func(r map[string]any) { r["Latency"] = map[string]any{"v": 1} },
		"metric array string": func(r map[string]any) { r["Batch"] = []any{1, "2"} },
		"metric 101 values":   func(r map[string]any) { r["Batch"] = make([]any, emf.MaxValues+1) },
		"metric nested name":  func(r map[string]any) { delete(r, "Bare"); r["x"] = map[string]any{"Bare": 1} },
	}
	check := func(t *testing.T, doc []byte) {
		t.Helper()
		err := emf.Validate(doc)
		require.ErrorIs(t, err, emf.ErrInvalid)
		var e *emf.Error
		require.ErrorAs(t, err, &e)
	}
	for name, doc := range raw {
		t.Run(name, func(t *testing.T) { check(t, []byte(doc)) })
	}
	for name, f := range edits {
		t.Run(name, func(t *testing.T) { check(t, edit(t, f)) })
	}
}

func thirtyOneKeys(root map[string]any) []any {
	keys := make([]any, 0, emf.MaxDimensions+1)
	for i := range emf.MaxDimensions + 1 {
		name := fmt.Sprint("K", i)
		root[name] = "v"
		keys = append(keys, name)
	}
	return keys
}

func hundredAndOneDefinitions(root map[string]any) []any {
	defs := make([]any, 0, emf.MaxMetrics+1)
	for i := range emf.MaxMetrics + 1 {
		name := fmt.Sprint("M", i)
		root[name] = 1
		defs = append(defs, map[string]any{"Name": name})
	}
	return defs
}

func TestValidateErrorNamesTheMember(t *testing.T) {
	err := emf.Validate(edit(t, func(r map[string]any) { definition(r, 0)["Unit"] = "Millis" }))
	var e *emf.Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, "Latency", e.Member)
	assert.Contains(t, err.Error(), "Millis")
}

func TestEveryUnitConstantIsValid(t *testing.T) {
	all := []emf.Unit{emf.Seconds, emf.Microseconds, emf.Milliseconds, emf.Bytes, emf.Kilobytes, emf.Megabytes,
		emf.Gigabytes, emf.Terabytes, emf.Bits, emf.Kilobits, emf.Megabits, emf.Gigabits, emf.Terabits, emf.Percent,
		emf.Count, emf.BytesPerSecond, emf.KilobytesPerSec, emf.MegabytesPerSec, emf.GigabytesPerSec, emf.TerabytesPerSec,
		emf.BitsPerSecond, emf.KilobitsPerSec, emf.MegabitsPerSec, emf.GigabitsPerSec, emf.TerabitsPerSec,
		emf.CountPerSecond, emf.None}
	seen := map[emf.Unit]bool{}
	for _, u := range all {
		assert.True(t, u.Valid(), u)
		assert.False(t, seen[u], "duplicate %s", u)
		seen[u] = true
	}
	assert.Len(t, seen, 27)
	for _, u := range []emf.Unit{"", "count", "Items", "Seconds "} {
		assert.False(t, u.Valid(), "%q", u)
	}
}
