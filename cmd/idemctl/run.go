package main

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/keyschema"
	"github.com/idemkey/idemkey/localstack"
)

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

const usage = `usage: idemctl <command> [flags]

commands:
  create-table  create the key table (on-demand, TTL on exp, or none with -no-ttl) unless it exists
  inspect       print a key's live record as JSON
  list          list the live keys of one scope as JSON (a filtered Scan, bounded by -limit)
  release       delete a stuck key so that its next request executes
  sweep         evict expired records and reclaim stuck ones; print the report
  scope         print the scope examples/payments gives a bearer token (no DynamoDB call)

Every command but scope takes -table (default $KEY_TABLE), -endpoint and -region,
and names the endpoint and region it uses on stderr. On a table shared with other
items, pass its key schema too: -pk-attr, -sk-attr, -sk-value, -prefix, -ttl-attr.
The endpoint defaults to the SDK's: AWS_ENDPOINT_URL_DYNAMODB, else AWS.
A loopback endpoint (localhost, 127.0.0.1, ::1) without configured credentials
gets dummy ones, as emulators need; any other endpoint needs real credentials.
"idemctl <command> -h" lists the command's flags.
`

// commandHelp is what "idemctl <command> -h" says before the flags.
var commandHelp = map[string]string{
	"create-table": `usage: idemctl create-table -table T [-wait 2m] [-no-ttl] [-index]

Creates the key table (on-demand, partition key "pk", TTL on "exp") unless
it exists, and checks an existing one; with -no-ttl, without TTL. With the
key schema flags (-pk-attr, -sk-attr, -sk-value, -prefix, -ttl-attr) it
creates a missing table with that schema and TTL on -ttl-attr, and only
checks an existing one. With -index it also creates, or checks, the expiry
index that "idemctl sweep -mode index" and SWEEP_MODE=index read.
`,
	"inspect": `usage: idemctl inspect -table T -scope S -key K [-body]

Prints the key's live record as JSON. The lock token and lock expiry are
shown for an in-progress record only.
`,
	"list": `usage: idemctl list -table T -scope S [-limit 100] [-max-scanned 0]

Prints the live keys of scope S as JSON, at most -limit of them, with the
items scanned and "truncated" when it stopped before the end of the table.
The key table has no index by scope: list is a Scan of the whole table,
filtered on the scope's partition key prefix, plus one consistent GetItem
per key found. It reads every item until -limit keys are found, unless
-max-scanned stops it sooner. For examples/payments, S is the output of
"idemctl scope -bearer TOKEN".
`,
	"release": `usage: idemctl release -table T -scope S -key K [-force] [-force-completed] [-any-region]

Deletes a stuck key (in progress, its lock expired) so that its next request
executes; -force and -force-completed widen what it deletes. A record written
by another region (its "region", which inspect prints) is refused: release it
in that region's own replica (-region R), as a delete in another replica of an
MREC global table can replicate over a newer write; -any-region deletes it
here anyway.
`,
	"sweep": `usage: idemctl sweep -table T [flags]

Evicts expired records and reclaims stuck ones, and prints the report as JSON.
-mode index reads the expiry index instead of the whole table, and refuses a
table without it (create it with idemctl create-table -index); it also scans
the table for records without exp_bucket (outside the index: "unindexed" in
the report) until a whole scan finds none, and then once a day. An
unfinished pass or scan (-budget, or an interrupt: SIGINT, SIGTERM) prints a
cursor to continue it with -cursor, and exits 0 unless a call failed.
`,
	"scope": `usage: idemctl scope -bearer TOKEN

Prints the idempotency scope examples/payments gives the caller that sends
"Authorization: Bearer TOKEN": the first 16 bytes of the SHA-256 of the
token (spaces around it trimmed), in hex. It is that example's rule, not
idemkey's: a service scopes keys by whatever its handler.Options.Scope
returns. No DynamoDB call.
`,
}

// run is idemctl: it parses args (without the program name), runs the
// command, writes results to stdout and diagnostics to stderr, and
// returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	commands := map[string]func(context.Context, *command) int{
		"create-table": createTable,
		"inspect":      inspect,
		"list":         list,
		"release":      release,
		"sweep":        sweep,
		"scope":        scope,
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	do, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "idemctl: unknown command %q\n\n%s", name, usage)
		return exitUsage
	}
	c := &command{name: name, stdout: stdout, stderr: stderr, flags: flag.NewFlagSet("idemctl "+name, flag.ContinueOnError)}
	c.flags.SetOutput(stderr)
	c.flags.Usage = func() {
		fmt.Fprintf(stderr, "%s\nflags:\n", commandHelp[name])
		c.flags.PrintDefaults()
	}
	if name != "scope" {
		c.flags.StringVar(&c.table, "table", os.Getenv("KEY_TABLE"), "the key table (default $KEY_TABLE)")
		c.flags.StringVar(&c.endpoint, "endpoint", "", "DynamoDB endpoint URL (default: AWS_ENDPOINT_URL_DYNAMODB, else AWS)")
		c.flags.StringVar(&c.region, "region", "", "AWS region (default: the SDK's configuration; us-east-1 with an endpoint and none configured)")
		schemaFlags(c.flags, &c.schema)
	}
	c.args = args[1:]
	return do(ctx, c)
}

// command is one invocation's flags, output and client.
type command struct {
	name                    string
	flags                   *flag.FlagSet
	args                    []string
	table, endpoint, region string
	schema                  dynamostore.KeySchema
	stdout, stderr          io.Writer

	// Set by client: the endpoint and region idemctl talks to.
	usedEndpoint, usedRegion string
}

// parse parses the flags; ok false means the command must return code.
func (c *command) parse(required ...string) (code int, ok bool) {
	if err := c.flags.Parse(c.args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false
	}
	if c.flags.NArg() > 0 {
		return c.usageError("unexpected argument %q", c.flags.Arg(0)), false
	}
	if c.flags.Lookup("table") != nil && c.table == "" {
		return c.usageError("-table is required (or set KEY_TABLE)"), false
	}
	for _, name := range required {
		if f := c.flags.Lookup(name); f != nil && f.Value.String() == "" {
			return c.usageError("-%s is required", name), false
		}
	}
	if err := c.schema.Validate(); err != nil {
		return c.usageError("%v", err), false
	}
	return 0, true
}

// schemaFlags adds the flags of the key schema: where key records live in
// a table shared with other items (dynamostore.KeySchema).
func schemaFlags(fs *flag.FlagSet, s *dynamostore.KeySchema) {
	fs.StringVar(&s.PartitionKey, "pk-attr", "", "the table's partition key attribute (default \"pk\"); another name needs -prefix")
	fs.StringVar(&s.SortKey, "sk-attr", "", "the table's sort key attribute, when it has one; needs -sk-value and -prefix")
	fs.StringVar(&s.SortKeyValue, "sk-value", "", "the sort key value of every key record (with -sk-attr)")
	fs.StringVar(&s.Prefix, "prefix", "", "the prefix of key records' partition key values, followed by '#' (a table shared with other items)")
	fs.StringVar(&s.TTLAttribute, "ttl-attr", "", "the table's TTL attribute, epoch seconds (default \"exp\")")
}

// store returns a Store over the command's table and key schema.
func (c *command) store(client dynamostore.Client) *dynamostore.Store {
	return dynamostore.New(client, c.table, func(o *dynamostore.Options) { o.Schema = c.schema })
}

func (c *command) usageError(format string, args ...any) int {
	fmt.Fprintf(c.stderr, "idemctl %s: %s\n", c.name, fmt.Sprintf(format, args...))
	c.flags.Usage()
	return exitUsage
}

func (c *command) fail(format string, args ...any) int {
	fmt.Fprintf(c.stderr, "idemctl %s: %s\n", c.name, fmt.Sprintf(format, args...))
	return exitFail
}

// storeFail reports err, a failed DynamoDB call: a missing table as a
// sentence that says how to create it, anything else as it is.
func (c *command) storeFail(err error) int {
	var missing *types.ResourceNotFoundException
	if errors.As(err, &missing) {
		return c.fail("table %s does not exist in region %s at %s: create it with idemctl create-table -table %s",
			c.table, c.usedRegion, c.usedEndpoint, c.table)
	}
	return c.fail("%v", err)
}

// client returns a DynamoDB client for -endpoint (else the SDK's endpoint)
// and -region, configured by localstack.LoadConfig's rule, once it has
// found credentials, and names the endpoint and region on stderr.
func (c *command) client(ctx context.Context) (*dynamodb.Client, error) {
	var opts []func(*config.LoadOptions) error
	if c.region != "" {
		opts = append(opts, config.WithRegion(c.region))
	}
	cfg, err := localstack.LoadConfig(ctx, c.endpoint, opts...)
	if err != nil {
		return nil, err
	}
	if cfg.Region == "" { // no endpoint: AWS itself
		return nil, errors.New("no AWS region configured: set AWS_REGION or pass -region")
	}
	custom := cfg.BaseEndpoint != nil
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		hint := ""
		if custom {
			hint = fmt.Sprintf(" for %s (dummy credentials are supplied for a loopback endpoint only: "+
				"for an emulator elsewhere set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, e.g. to \"local\")", *cfg.BaseEndpoint)
		}
		return nil, fmt.Errorf("no AWS credentials%s: %w", hint, err)
	}
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if custom {
			o.BaseEndpoint = cfg.BaseEndpoint // over AWS_ENDPOINT_URL_DYNAMODB, for -endpoint
		}
	})
	c.usedRegion, c.usedEndpoint = cfg.Region, endpointOf(ctx, client)
	fmt.Fprintf(c.stderr, "idemctl: DynamoDB at %s (region %s)\n", c.usedEndpoint, c.usedRegion)
	return client, nil
}

// endpointOf returns the URL client sends its requests to.
func endpointOf(ctx context.Context, client *dynamodb.Client) string {
	o := client.Options()
	if o.BaseEndpoint != nil {
		return *o.BaseEndpoint
	}
	ep, err := o.EndpointResolverV2.ResolveEndpoint(ctx, dynamodb.EndpointParameters{
		Region:       aws.String(o.Region),
		UseFIPS:      aws.Bool(o.EndpointOptions.UseFIPSEndpoint == aws.FIPSEndpointStateEnabled),
		UseDualStack: aws.Bool(o.EndpointOptions.UseDualStackEndpoint == aws.DualStackEndpointStateEnabled),
	})
	if err != nil {
		return "AWS"
	}
	return ep.URI.String()
}

func createTable(ctx context.Context, c *command) int {
	wait := c.flags.Duration("wait", 2*time.Minute, "how long to wait for the table to become ACTIVE")
	noTTL := c.flags.Bool("no-ttl", false, "create or check the table without TTL, evicted by sweepers: "+
		"an MRSC global table (no TTL support) or an MREC global table in multiregion HomeRegion mode (TTL deletes replicate); "+
		"a table with TTL on is refused, not changed")
	index := c.flags.Bool("index", false, "also create (or check) the expiry index that sweep -mode index reads (dynamostore.EnsureExpiryIndex); "+
		"on a table that holds records DynamoDB backfills it, which can outlast -wait")
	if code, ok := c.parse(); !ok {
		return code
	}
	code := createTableOnly(ctx, c, *wait, *noTTL)
	if code != exitOK || !*index {
		return code
	}
	client, err := c.client(ctx)
	if err != nil {
		return c.fail("%v", err)
	}
	if err := dynamostore.EnsureExpiryIndex(ctx, client, c.table, c.schema, *wait); err != nil {
		return c.storeFail(err)
	}
	fmt.Fprintf(c.stdout, "expiry index %s of table %s is ACTIVE: sweep it with idemctl sweep -mode index, or SWEEP_MODE=index\n", dynamostore.ExpiryIndexName, c.table)
	return exitOK
}

// createTableOnly is create-table without -index.
func createTableOnly(ctx context.Context, c *command, wait time.Duration, noTTL bool) int {
	eff := keyschema.Schema(c.schema).WithDefaults()
	shared := eff != keyschema.Schema{}.WithDefaults()
	if noTTL && shared {
		return c.usageError("-no-ttl takes the default key schema only")
	}
	client, err := c.client(ctx)
	if err != nil {
		return c.fail("%v", err)
	}
	if shared {
		if err := dynamostore.EnsureSchemaTable(ctx, client, c.table, c.schema, wait); err != nil {
			return c.storeFail(err)
		}
		keys := fmt.Sprintf("partition key %q (String)", eff.PartitionKey)
		if eff.SortKey != "" {
			keys += fmt.Sprintf(", sort key %q (String)", eff.SortKey)
		}
		fmt.Fprintf(c.stdout, "table %s is ready: %s, TTL on %q, key records under %q\n", c.table, keys, eff.TTLAttribute, eff.Prefix+"#")
		return exitOK
	}
	if noTTL {
		if err := dynamostore.EnsureTableWithoutTTL(ctx, client, c.table, wait); err != nil {
			return c.storeFail(err)
		}
		fmt.Fprintf(c.stdout, "table %s is ready: partition key %q (String), TTL off (evict with a sweeper)\n", c.table, dynamostore.PartitionKey)
		return exitOK
	}
	if err := dynamostore.EnsureTable(ctx, client, c.table, wait); err != nil {
		return c.storeFail(err)
	}
	fmt.Fprintf(c.stdout, "table %s is ready: partition key %q (String), TTL on %q\n", c.table, dynamostore.PartitionKey, dynamostore.TTLAttribute)
	return exitOK
}

// keyFlags adds -scope and -key.
func keyFlags(c *command) (scope, key *string) {
	return c.flags.String("scope", "", "the key's scope (tenant, API key id); may be empty"),
		c.flags.String("key", "", "the idempotency key (required)")
}

// recordJSON is how inspect and release print a record.
type recordJSON struct {
	Table        string     `json:"table"`
	Scope        string     `json:"scope"`
	Key          string     `json:"key"`
	PartitionKey string     `json:"partitionKey"`
	State        string     `json:"state"`
	Method       string     `json:"method"`
	Path         string     `json:"path"`
	Fingerprint  string     `json:"fingerprint"`
	Created      time.Time  `json:"created"`
	Completed    *time.Time `json:"completed,omitempty"`
	Expires      time.Time  `json:"expires"`
	// The lock fields are set for in-progress records only: a completed
	// record's lock fences nothing.
	LockToken   string        `json:"lockToken,omitempty"`
	LockExpires *time.Time    `json:"lockExpires,omitempty"`
	LockExpired *bool         `json:"lockExpired,omitempty"`
	Region      string        `json:"region,omitempty"`
	Response    *responseJSON `json:"response,omitempty"`
}

type responseJSON struct {
	Status      int      `json:"status"`
	HeaderNames []string `json:"headerNames"`
	BodyBytes   int      `json:"bodyBytes"`
	// BodyOmittedBytes is the size of a body too large to store.
	BodyOmittedBytes int     `json:"bodyOmittedBytes,omitempty"`
	Body             *string `json:"body,omitempty"`
	BodyBase64       *string `json:"bodyBase64,omitempty"`
}

func describe(table string, schema dynamostore.KeySchema, r *dynamostore.Record, withBody bool, now time.Time) recordJSON {
	out := recordJSON{
		Table: table, Scope: r.Scope, Key: r.Key, PartitionKey: keyschema.Schema(schema).Value(r.Scope, r.Key),
		State: string(r.State), Method: r.Method, Path: r.Path, Fingerprint: hex.EncodeToString(r.Fingerprint),
		Created: r.Created.UTC(), Expires: r.Expires.UTC(), Region: r.Region,
	}
	if r.State == dynamostore.StateInProgress {
		lockExp, expired := r.LockExpires.UTC(), r.LockExpires.Before(now)
		out.LockToken, out.LockExpires, out.LockExpired = r.LockToken, &lockExp, &expired
	}
	if !r.Completed.IsZero() {
		done := r.Completed.UTC()
		out.Completed = &done
	}
	if resp := r.Response; resp != nil {
		rj := &responseJSON{Status: resp.Status, HeaderNames: []string{}, BodyBytes: len(resp.Body), BodyOmittedBytes: resp.BodyOmitted}
		for name := range resp.Header {
			rj.HeaderNames = append(rj.HeaderNames, name)
		}
		slices.Sort(rj.HeaderNames)
		if withBody && resp.Body != nil {
			if utf8.Valid(resp.Body) {
				s := string(resp.Body)
				rj.Body = &s
			} else {
				s := base64.StdEncoding.EncodeToString(resp.Body)
				rj.BodyBase64 = &s
			}
		}
		out.Response = rj
	}
	return out
}

func (c *command) printJSON(v any) int {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return c.fail("writing the output: %v", err)
	}
	return exitOK
}

func inspect(ctx context.Context, c *command) int {
	scope, key := keyFlags(c)
	body := c.flags.Bool("body", false, "include the stored response body (as text, or base64 when not UTF-8)")
	if code, ok := c.parse("key"); !ok {
		return code
	}
	client, err := c.client(ctx)
	if err != nil {
		return c.fail("%v", err)
	}
	rec, err := c.store(client).Get(ctx, *scope, *key)
	if errors.Is(err, dynamostore.ErrNotFound) {
		return c.fail("no live record for scope %q key %q (never claimed, released, or expired)", *scope, *key)
	}
	if err != nil {
		return c.storeFail(err)
	}
	return c.printJSON(describe(c.table, c.schema, rec, *body, time.Now()))
}

func release(ctx context.Context, c *command) int {
	scope, key := keyFlags(c)
	force := c.flags.Bool("force", false, "release an in-progress key even while its lock holds")
	forceCompleted := c.flags.Bool("force-completed", false, "release a completed key: its next retry executes again (a duplicate)")
	anyRegion := c.flags.Bool("any-region", false, "release a record another region wrote from this region's replica: "+
		"on an MREC global table the delete can replicate over a newer write of that region and let a request execute twice")
	if code, ok := c.parse("key"); !ok {
		return code
	}
	client, err := c.client(ctx)
	if err != nil {
		return c.fail("%v", err)
	}
	own := client.Options().Region
	rec, err := c.store(client).ReleaseKey(ctx, *scope, *key, func(o *dynamostore.ReleaseKeyOptions) {
		o.InProgress, o.Completed = *force, *forceCompleted
		if !*anyRegion {
			// Delete a region's record only in that region's replica (as
			// sweep -writer-region sweeps).
			o.Region = own
		}
	})
	switch {
	case errors.Is(err, dynamostore.ErrOtherRegion):
		return c.fail("the record was written by region %s but the AWS region is %s: a region's records must be released "+
			"in that region's own replica (a delete in another replica can replicate over a newer write, such as a "+
			"takeover claim, and let a request execute twice). Nothing was deleted. Run it against %s: pass -region %s "+
			"(or -any-region to delete it here anyway).", rec.Region, own, rec.Region, rec.Region)
	case errors.Is(err, dynamostore.ErrNotFound):
		return c.fail("no live record for scope %q key %q: nothing to release", *scope, *key)
	case errors.Is(err, dynamostore.ErrLockHeld):
		return c.fail("the key is in progress and its lock holds until %s (%s from now): its request may still be running. "+
			"Pass -force to release it anyway; that request can then no longer commit.",
			rec.LockExpires.UTC().Format(time.RFC3339), time.Until(rec.LockExpires).Round(time.Second))
	case errors.Is(err, dynamostore.ErrKeyCompleted):
		return c.fail("the key is completed (status %d): releasing it makes the next retry execute the request again, a duplicate. "+
			"Pass -force-completed to do it anyway.", rec.Response.Status)
	case errors.Is(err, dynamostore.ErrLockLost):
		return c.fail("the record changed while it was being released; nothing was deleted. Inspect it again.")
	case err != nil:
		return c.storeFail(err)
	}
	if rec.State == dynamostore.StateCompleted {
		fmt.Fprintf(c.stderr, "idemctl release: warning: released a completed key; the next request with it executes again\n")
	}
	fmt.Fprintf(c.stdout, "released scope %q key %q (%s, created %s)\n", *scope, *key, rec.State, rec.Created.UTC().Format(time.RFC3339))
	return exitOK
}

func sweep(ctx context.Context, c *command) int {
	segments := c.flags.Int("segments", dynamostore.DefaultSweepSegments, "parallel scan segments")
	dryRun := c.flags.Bool("dry-run", false, "count what would be deleted, delete nothing")
	budget := c.flags.Duration("budget", 0, "stop starting pages after this long and print a cursor (0: run to the end)")
	rate := c.flags.Float64("rate", dynamostore.DefaultSweepItemsPerSecond, "items scanned per second (0: no limit)")
	page := c.flags.Int("page", dynamostore.DefaultSweepPageSize, "items per Scan page")
	cursor := c.flags.String("cursor", "", "resume the pass an earlier sweep printed the cursor of")
	verbose := c.flags.Bool("v", false, "log the sweep's summary and skipped records to stderr")
	mode := c.flags.String("mode", string(dynamostore.SweepScan), "scan: read the whole table; index: read the expiry index only "+
		"(the table must have it: idemctl create-table -index)")
	writer := c.flags.String("writer-region", "", "sweep only the records this region wrote, in its own replica: it must be the AWS region "+
		"(-region or the SDK's); for an MREC global table in multiregion HomeRegion mode, one sweep per region (a cursor resumes only a sweep of the same region)")
	if code, ok := c.parse(); !ok {
		return code
	}
	switch {
	case len(*writer) > dynamostore.MaxSweepRegionLen:
		return c.usageError("-writer-region must be at most %d bytes", dynamostore.MaxSweepRegionLen)
	case *segments < 1 || *segments > dynamostore.MaxSweepSegments:
		return c.usageError("-segments must be 1 to %d (a resume cursor must fit in one 400 KB item)", dynamostore.MaxSweepSegments)
	case *page < 1:
		return c.usageError("-page must be positive")
	case *budget < 0 || *rate < 0:
		return c.usageError("-budget and -rate must not be negative")
	case math.IsNaN(*rate) || math.IsInf(*rate, 0):
		return c.usageError("-rate must be a finite number")
	case *mode != string(dynamostore.SweepScan) && *mode != string(dynamostore.SweepIndex):
		return c.usageError("-mode must be %s or %s", dynamostore.SweepScan, dynamostore.SweepIndex)
	}
	client, err := c.client(ctx)
	if err != nil {
		return c.fail("%v", err)
	}
	if own, ok := inOwnReplica(client, *writer); !ok {
		return c.fail("-writer-region %s but the AWS region is %s: a region's records must be swept in that region's own replica "+
			"(a delete in another replica can replicate over a newer write); pass -region %s", *writer, own, *writer)
	}
	logger := slog.New(slog.DiscardHandler)
	if *verbose {
		logger = slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	sweeper := dynamostore.NewSweeper(client, c.table, func(o *dynamostore.SweepOptions) {
		o.Segments, o.DryRun, o.Budget, o.PageSize, o.Logger = *segments, *dryRun, *budget, *page, logger
		o.ItemsPerSecond, o.Region, o.Schema = *rate, *writer, c.schema
		o.Mode = dynamostore.SweepMode(*mode)
		if *rate == 0 {
			o.ItemsPerSecond = -1
		}
	})
	report, err := sweeper.Sweep(ctx, *cursor)
	if report == nil {
		return c.storeFail(err)
	}
	if code := c.printJSON(report); code != exitOK {
		return code
	}
	stopped := interrupted(ctx, err, report)
	if stopped {
		// Stopped by SIGINT or SIGTERM: the segments stopped cleanly and
		// the cursor resumes the pass, as after a budget stop. Only a
		// failed call (counted in the report) makes it a failure.
		err = nil
		if report.Errors > 0 {
			err = fmt.Errorf("interrupted, after %d failed DynamoDB calls (the report's errorMessages)", report.Errors)
		}
	}
	if report.Cursor != "" && (err == nil || stopped) {
		what := fmt.Sprintf("the pass is unfinished (%s)", report.StoppedBy)
		if report.Finished {
			what = "the scan for records outside the expiry index is unfinished"
		}
		fmt.Fprintf(c.stderr, "idemctl sweep: %s; continue it with -cursor %s\n", what, report.Cursor)
	}
	if err != nil {
		return c.storeFail(err)
	}
	return exitOK
}

// interrupted reports whether a sweep stopped because its context ended
// (an interrupt) with a cursor to resume it: err is the context's.
func interrupted(ctx context.Context, err error, report *dynamostore.SweepReport) bool {
	return err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) && report.Cursor != ""
}

// inOwnReplica returns the region of the replica client talks to (the AWS
// region: -region or the SDK's) and whether region's records may be
// deleted there: region is that region, or empty (no region wrote them).
// On an MREC global table a region's records are deleted only in that
// region's own replica: a delete in another replica can replicate over a
// newer write of that region (a takeover claim, say) and let a request
// execute twice.
func inOwnReplica(client *dynamodb.Client, region string) (own string, ok bool) {
	own = client.Options().Region
	return own, region == "" || region == own
}
