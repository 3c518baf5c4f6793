// Package emf writes CloudWatch Embedded Metric Format (EMF) documents: one
// JSON object per log line from which CloudWatch Logs extracts metrics
// without any call to the CloudWatch API. A Lambda function that prints
// such a line to stdout publishes its metrics; see
// https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
//
// Encode and Write build a document with one metric directive (one
// namespace, one dimension set) and refuse, with an error matching
// ErrInvalid, anything the specification or CloudWatch would reject:
// a missing namespace, more than MaxMetrics metrics or MaxDimensions
// dimensions, a unit outside the allowed list, a value that is not a
// finite number, a name used twice. Validate checks any document against
// the same rules, independently of Encode.
//
// The package is not a metrics client: it aggregates nothing, buffers
// nothing and never calls AWS. It is internal because only idemkey's own
// commands emit metrics.
package emf
