// Package localstack gives tests, examples and scripts a DynamoDB endpoint
// and an AWS SDK v2 client for it.
//
// Start (or ForTest in tests) uses the endpoint named by the SDK's own
// variable AWS_ENDPOINT_URL_DYNAMODB (EndpointEnv) when it is set, which
// runs the same code against moto, DynamoDB Local, LocalStack or real AWS.
// Otherwise it serves an embedded emulator on loopback: an in-memory
// DynamoDB of this package's own (NewHandler describes what it answers),
// which evaluates expressions with the public interpreter of
// github.com/truora/minidyn. The command in cmd/emulator serves the same
// emulator on a fixed address for scripts and other processes.
// LoadConfig gives any program the AWS configuration Start gives an external
// endpoint: a loopback endpoint without configured credentials gets dummy
// ones, any other endpoint never does.
//
// The package is test infrastructure. The emulator is not a DynamoDB
// implementation to run anything on: it keeps everything in memory, serves
// one request at a time, checks no credentials, and implements the subset
// of the API that idemkey and its tests use, answering as DynamoDB does
// there (its tests run on moto as well). Code that passes against it
// should also be run against DynamoDB.
//
// The public surface: Start and ForTest (an Endpoint with a client),
// LoadConfig (the SDK configuration for an endpoint, dummy credentials on
// a loopback one), NewHandler (the embedded emulator as an http.Handler),
// TableName, Latency, and Options.
package localstack
