// Package localstack gives tests, examples and scripts a DynamoDB endpoint
// and an AWS SDK v2 client for it.
//
// Start (or ForTest in tests) uses the endpoint named by the SDK's own
// variable AWS_ENDPOINT_URL_DYNAMODB (EndpointEnv) when it is set, so that
// the same code runs against moto, DynamoDB Local, LocalStack or AWS.
// Otherwise it serves an embedded emulator on loopback: an in-memory
// DynamoDB of this package's own (NewHandler says what it answers) that
// evaluates expressions with github.com/truora/minidyn's interpreter. The
// command in cmd/emulator serves it on a fixed address. LoadConfig gives
// any program the configuration Start gives an external endpoint.
//
// The package is test infrastructure: the emulator keeps everything in
// memory, serves one request at a time, checks no credentials and answers
// as DynamoDB does only the subset of the API idemkey and its tests use
// (its tests run on moto too). Code that passes against it should also be
// run against DynamoDB.
package localstack
