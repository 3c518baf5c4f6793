// Command sweeper is idemkey's sweeper as an AWS Lambda function, for an
// EventBridge schedule (for example rate(5 minutes)). Each invocation runs
// one dynamostore sweep of the key table within the invocation's time,
// continues the pass the previous invocation left unfinished, prints one
// CloudWatch Embedded Metric Format line to stdout and returns the report.
//
// The resume cursor lives in the key table itself (dynamostore's
// Sweeper.Resume), in the item whose partition key is "#sweep-cursor", or
// "#sweep-cursor/" followed by WRITER_REGION when it is set (behind the
// schema's prefix and "#" on a shared table), which no record can collide
// with. A
// scheduled rule sends the same event every time, so the cursor cannot
// ride on the next event without the function invoking itself; the table
// is already there, and the cursor costs one GetItem and one PutItem (or
// DeleteItem when a pass finishes) per invocation. The function therefore
// needs dynamodb:Scan, DeleteItem and GetItem on the table, PutItem on its
// cursor item (dynamodb:LeadingKeys "#sweep-cursor", "#sweep-cursor/*"), and
// in index mode dynamodb:Query on the expiry index and DescribeTable on
// the table instead of Scan.
//
// Configuration, from the environment:
//
//	KEY_TABLE   the key table (required)
//	SEGMENTS    parallel scan segments (default 4)
//	PAGE_SIZE   items per Scan page (default 500)
//	RATE        items scanned per second over all segments (unset or 0:
//	            the default, 1000; a negative value: no limit)
//	READ_RATE   read capacity units consumed per second (default: no limit)
//	MARGIN      how long before the invocation's deadline to stop starting
//	            pages, a Go duration (default 5s). A page started is
//	            finished, its deletes sent one at a time, so MARGIN must
//	            cover PAGE_SIZE deletes (the template sets 30s: 500 at
//	            up to 50 ms each)
//	DRY_RUN     "true": count, delete nothing; the cursor is neither read
//	            nor saved, so each invocation starts a new pass
//	SWEEP_MODE  "scan" (the default) reads the whole table; "index" reads
//	            the expiry index only (dynamostore.SweepIndex), which the
//	            table must have (dynamostore.EnsureExpiryIndex, idemctl
//	            create-table -index, or the template's SweepMode). Any
//	            other value refuses to start
//	WRITER_REGION
//	            sweep only the records this region wrote
//	            (dynamostore.SweepOptions.Region); unset or empty: every
//	            record. At most dynamostore.MaxSweepRegionLen bytes, and
//	            when AWS_REGION is set (Lambda always sets it) it must equal
//	            it: the function refuses to start otherwise
//	BODY_BUCKET the S3 bucket of the writers' large response bodies
//	            (dynamostore.SweepOptions.Bodies, package s3body with its
//	            default prefix): the body of each record evicted is
//	            deleted. Unset: none
//	KEY_PARTITION_KEY, KEY_SORT_KEY, KEY_SORT_KEY_VALUE, KEY_PREFIX,
//	KEY_TTL_ATTRIBUTE
//	            the key schema (dynamostore.KeySchema) when the key records
//	            share the service's own table: the same values as the
//	            stores' Options.Schema. Unset: a dedicated key table (pk,
//	            no sort key, exp). An invalid schema refuses to start
//
// Set WRITER_REGION when the key table is an MREC global table used in
// multiregion's HomeRegion mode, which refuses DynamoDB TTL: there,
// records are evicted only by sweepers, and a record must be deleted only
// in the replica of the region that wrote it, or a replicated delete can
// win over that region's newer write of the key. So deploy one scheduled
// sweeper per region, each in its region and with WRITER_REGION set to
// that region's name (the multiregion.Region Name its stores write, which
// must then be the AWS region's name). Each keeps its own cursor item,
// which replicates but which no other region's sweeper reads or
// overwrites. Leave WRITER_REGION unset on a single-region
// table: a sweeper with it set leaves every record without that region
// (written by a store without Options.Region) alone.
//
// The metrics (namespace "idemkey", dimension TableName): Scanned,
// Evicted, Reclaimed, Skipped, LiveKeys (Count); OldestLiveKeyAgeSeconds,
// EvictionLagSeconds (Seconds); DurationMs (Milliseconds); ConsumedRCU,
// ConsumedWCU, ScannedPerEvicted (None); Errors (Count, failed DynamoDB
// calls, the cursor's included); with BODY_BUCKET, BodiesDeleted (Count,
// the objects of evicted records deleted); PassFinished (1 when the pass finished).
// Its properties: StoppedBy, DryRun, Segments, Pages, Foreign, Unowned
// (records of no region a regional sweep leaves alone; their expiry counts
// in EvictionLagSeconds), Unindexed (in index mode, key records without
// exp_bucket that its scan for them read: a writer lacks EXPIRY_INDEX, or
// records from before it remain), EventId, ScheduledTime, and with
// WRITER_REGION set the WriterRegion.
// Alarm on EvictionLagSeconds and on Errors, and treat missing data as
// breaching: a sweeper that stops running emits nothing.
//
// The log (JSON lines on stderr) carries one summary line per invocation,
// its durations in seconds (eviction_lag_seconds, duration_seconds, ...).
//
// Build it for provided.al2023 with CGO_ENABLED=0 and -tags lambda.norpc,
// as a binary named bootstrap. Run from a shell, where no Lambda runtime
// API is set (AWS_LAMBDA_RUNTIME_API), it exits with status 2 and says
// how to sweep from a shell (idemctl sweep) and how to run the function
// under AWS's Lambda Runtime Interface Emulator.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/s3body"
)

func main() {
	if os.Getenv(runtimeAPIEnv) == "" {
		fmt.Fprint(os.Stderr, outsideLambda)
		os.Exit(2)
	}
	cfg, err := configFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sweeper:", err)
		os.Exit(1)
	}
	awsCfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "sweeper: loading the AWS configuration:", err)
		os.Exit(1)
	}
	f := &function{
		bodies: bodyStore(s3.NewFromConfig(awsCfg), cfg.BodyBucket),
		client: dynamodb.NewFromConfig(awsCfg),
		cfg:    cfg,
		stdout: os.Stdout,
		logger: newLogger(os.Stderr),
		now:    time.Now,
	}
	lambda.Start(f.handle)
}

// bodyStore is the BodyStore over bucket, nil when bucket is empty.
func bodyStore(client *s3.Client, bucket string) dynamostore.BodyStore {
	if bucket == "" {
		return nil
	}
	return s3body.New(client, bucket)
}

// runtimeAPIEnv is the variable Lambda (and the Runtime Interface
// Emulator) sets to the runtime API's address.
const runtimeAPIEnv = "AWS_LAMBDA_RUNTIME_API"

// outsideLambda is what the binary prints when it is run by hand.
const outsideLambda = `sweeper: AWS_LAMBDA_RUNTIME_API is not set: this binary is a Lambda function
(template.yaml's SweeperFunction) and runs only under a Lambda runtime API.
To sweep a key table from a shell, use idemctl:
    go run github.com/idemkey/idemkey/cmd/idemctl sweep -table TABLE [-mode index] [-dry-run]
To run this function locally, run it under AWS's Lambda Runtime Interface Emulator:
    KEY_TABLE=TABLE aws-lambda-rie ./bootstrap
    curl -d '{"id":"local","detail-type":"Scheduled Event","source":"aws.events"}' \
        http://localhost:8080/2015-03-31/functions/function/invocations
(go install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@latest)
`

// newLogger returns the function's logger: JSON lines to w, durations in
// seconds.
func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{ReplaceAttr: durationsInSeconds}))
}

// durationsInSeconds writes a duration attribute as seconds, a number
// under the attribute's name with "_seconds" appended, as the EMF line
// writes its durations (EvictionLagSeconds), instead of slog's
// nanoseconds.
func durationsInSeconds(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.Float64(a.Key+"_seconds", a.Value.Duration().Seconds())
	}
	return a
}
