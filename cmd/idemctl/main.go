// Command idemctl is the operator's tool for an idemkey key table:
//
//	idemctl create-table -table T [-wait 2m] [-no-ttl] [-index]
//	idemctl inspect      -table T -scope S -key K [-body]
//	idemctl list         -table T -scope S [-limit 100] [-max-scanned 0]
//	idemctl release      -table T -scope S -key K [-force] [-force-completed] [-any-region]
//	idemctl sweep        -table T [-mode scan] [-segments 4] [-dry-run] [-budget 0] [-rate 1000] [-page 500] [-cursor C] [-writer-region R] [-v]
//	idemctl scope        -bearer TOKEN
//
// create-table creates the table (on-demand, partition key "pk", TTL on
// "exp") unless it exists, as dynamostore.EnsureTable does; with -no-ttl it
// creates or checks it without TTL, as dynamostore.EnsureTableWithoutTTL
// does, for tables whose records sweepers evict: MRSC global tables (no
// TTL) and MREC global tables in multiregion HomeRegion mode (TTL deletes
// replicate and can erase a newer record); with -index it also creates the
// expiry index (dynamostore.EnsureExpiryIndex) and waits until it is
// ACTIVE, or checks an existing one. inspect prints
// a key's live record as JSON: state, method, path, fingerprint, times,
// and the stored response's status, header names and body size (the body
// only with -body). release deletes a stuck key (in progress, its lock
// expired) so that the next request executes; -force releases an
// in-progress key whose lock still holds, -force-completed a completed one
// (the next retry then executes the request again: a duplicate); it
// refuses a record written by a region (the record's region, which inspect
// prints) other than the AWS region, naming both: a region's records are
// deleted only in that region's own replica, as sweep -writer-region
// sweeps them, since on an MREC global table a delete in another replica
// can replicate over a newer write and let a request execute twice (run
// it with -region R; -any-region deletes it here anyway). sweep
// runs one dynamostore sweep and prints its report as JSON; an unfinished
// pass prints a cursor to pass back with -cursor; -writer-region R sweeps
// only the records region R wrote (dynamostore.SweepOptions.Region), as
// an MREC global table in multiregion HomeRegion mode needs, and refuses
// to run unless R is the AWS region, i.e. against R's own replica; -mode
// index reads the expiry index instead of the whole table
// (dynamostore.SweepIndex) and fails, naming the missing or unfit index
// and how to create it, on a table without it.
// Interrupting a sweep (SIGINT, SIGTERM) stops it cleanly with a cursor:
// it prints the report and how to continue it with -cursor, and exits 0
// unless a call failed.
//
// Every command but scope takes the key schema of a table shared with the
// application's own items (dynamostore.KeySchema): -pk-attr and -sk-attr
// name its key attributes, -sk-value is the sort key of every key record,
// -prefix begins key records' partition key values (followed by '#'), and
// -ttl-attr names the table's TTL attribute. They must be the schema the
// service's Store uses. With a schema other than the default, create-table
// creates a missing table with it, and only checks an existing one (key
// schema, TTL on -ttl-attr), as dynamostore.EnsureSchemaTable does; list,
// inspect, release and sweep address and recognise key records by it, and
// sweep never deletes an item that is not one.
//
// inspect prints the lock token, the lock's expiry and whether it expired
// for an in-progress record only: a completed record's lock fences
// nothing. list prints the live keys of one scope as JSON (key, state,
// method, path, times, stored status), at most -limit of them, with the
// number of items scanned and whether it stopped before the end of the
// table. The key table has no index by scope, so list is a Scan of the
// whole table filtered on the scope's partition key prefix (one Scan per
// page of up to 1000 items, and one consistent GetItem per key found,
// which leaves out expired records): it costs reads for every item until
// -limit keys are found, unless -max-scanned stops it sooner. scope prints
// the scope that examples/payments gives the caller with a bearer token:
// the first 16 bytes of the SHA-256 of the token, in hex (the example
// keeps no tokens, only this hash). It is that example's rule, not
// idemkey's: a service scopes keys by whatever its handler.Options.Scope
// returns. scope makes no DynamoDB call.
//
// Every command but scope takes -table (default $KEY_TABLE), -endpoint and
// -region, and first prints the endpoint and region it talks to on stderr,
// as in "idemctl: DynamoDB at http://127.0.0.1:8000 (region us-east-1)".
// The AWS configuration is the SDK's default chain (environment, shared
// files, instance roles), so AWS_ENDPOINT_URL_DYNAMODB selects another
// endpoint, such as DynamoDB Local, exactly as for any SDK client; -endpoint
// overrides it. With no endpoint set, idemctl talks to real DynamoDB, never
// to an emulator. The rest is localstack.LoadConfig's rule, the one the
// project's tests follow: when an endpoint is set and no region is
// configured, the region is us-east-1; when the endpoint is loopback
// (localhost, 127.0.0.0/8, ::1) and no credentials are configured, idemctl
// uses dummy ones, which emulators accept; any other endpoint needs
// credentials configured. Requests to a loopback endpoint are sent one at
// a time, as local DynamoDB implementations need. A table that does not exist is reported with
// the region and endpoint asked and the create-table command to run.
//
// Exit status: 0 success (including a sweep stopped by -budget or an
// interrupt, with a cursor), 1 failure (including a refused release and a
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
