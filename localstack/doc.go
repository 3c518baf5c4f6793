// Package localstack gives tests, examples and scripts a DynamoDB endpoint
// and an AWS SDK v2 client for it.
//
// Start (or ForTest in tests) uses the endpoint named by the SDK's own
// variable AWS_ENDPOINT_URL_DYNAMODB (EndpointEnv) when it is set, which
// runs the same code against DynamoDB Local, LocalStack or real AWS.
// Otherwise it serves an embedded emulator on loopback: the in-memory
// minidyn server (github.com/truora/minidyn/server) behind a thin front, an
// http.Handler that closes the gaps of minidyn that matter to idemkey
// (NewHandler describes them). The command in cmd/emulator serves the same
// emulator on a fixed address for scripts and other processes.
// LoadConfig gives any program the AWS configuration Start gives an external
// endpoint: a loopback endpoint without configured credentials gets dummy
// ones, any other endpoint never does.
//
// The package is test infrastructure. It is not a DynamoDB implementation
// to run anything on: the emulator keeps everything in memory, serialises
// every request, checks no credentials, and implements only the subset of
// the API that minidyn and the front know. It is not a fidelity oracle
// either: code that passes against the emulator should also be run against
// DynamoDB Local or real DynamoDB (see README.md).
//
// Time to live: the front records TTL settings (UpdateTimeToLive,
// DescribeTimeToLive) but never deletes expired items. Real DynamoDB deletes
// them lazily, typically within days, so code must treat an item whose TTL
// attribute lies in the past as absent whether or not it is still there;
// the emulator is the case where it always is.
//
// Known gaps the front does not close: minidyn stores an empty list (L),
// map (M) or binary (B) attribute value as a value without type, which the
// SDK decodes as nil and which breaks later conditions on the item; a
// cancelled transaction reports only the first failing condition, the other
// actions as None; consumed capacity, item collection metrics, streams,
// backups and PartiQL are not supported, and the legacy Expected,
// ScanFilter, QueryFilter and KeyConditions parameters are silently ignored.
//
// The public surface: Start and ForTest (an Endpoint with a client),
// LoadConfig (the SDK configuration for an endpoint, dummy credentials on
// a loopback one), NewHandler (the embedded emulator as an http.Handler),
// TableName, Latency and its client, and Options.
package localstack
