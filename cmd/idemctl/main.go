// Command idemctl is the operator's tool for an idemkey key table:
//
//	idemctl create-table -table T [-wait 2m] [-no-ttl]
//	idemctl inspect      -table T -scope S -key K [-body]
//	idemctl release      -table T -scope S -key K [-force] [-force-completed]
//	idemctl sweep        -table T [-segments 4] [-dry-run] [-budget 0] [-rate 1000] [-page 500] [-cursor C] [-writer-region R] [-v]
//
// create-table creates the table (on-demand, partition key "pk", TTL on
// "exp") unless it exists, as dynamostore.EnsureTable does; with -no-ttl it
// creates or checks it without TTL, as dynamostore.EnsureTableWithoutTTL
// does, for tables whose records sweepers evict: MRSC global tables (no
// TTL) and MREC global tables in multiregion HomeRegion mode (TTL deletes
// replicate and can erase a newer record). inspect prints
// a key's live record as JSON: state, method, path, fingerprint, times,
// and the stored response's status, header names and body size (the body
// only with -body). release deletes a stuck key (in progress, its lock
// expired) so that the next request executes; -force releases an
// in-progress key whose lock still holds, -force-completed a completed one
// (the next retry then executes the request again: a duplicate). sweep
// runs one dynamostore sweep and prints its report as JSON; an unfinished
// pass prints a cursor to pass back with -cursor; -writer-region R sweeps
// only the records region R wrote (dynamostore.SweepOptions.Region), as
// an MREC global table in multiregion HomeRegion mode needs, and refuses
// to run unless R is the AWS region, i.e. against R's own replica.
// Interrupting a sweep (SIGINT, SIGTERM) stops it cleanly with a cursor.
//
// Every command takes -table (default $KEY_TABLE), -endpoint and -region.
// The AWS configuration is the SDK's default chain (environment, shared
// files, instance roles), so AWS_ENDPOINT_URL_DYNAMODB selects another
// endpoint, such as DynamoDB Local, exactly as for any SDK client; -endpoint
// overrides it. With no endpoint set, idemctl talks to real DynamoDB, never
// to an emulator. Emulators accept any credentials but the SDK needs some:
// set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (e.g. to "local"). When
// an endpoint is set and no region is configured, the region is us-east-1.
//
// Exit status: 0 success, 1 failure (including a refused release and a
// sweep with failed calls), 2 usage error.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
