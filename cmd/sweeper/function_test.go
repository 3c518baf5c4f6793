package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/emf"
	"github.com/idemkey/idemkey/localstack"
)

// scheduledEvent is what an EventBridge schedule delivers.
const scheduledEvent = `{"version":"0","id":"5e0c3a8d-1b7f-4c2e-9a61-0d8f2b7c4e19","detail-type":"Scheduled Event",
"source":"aws.events","account":"210987654321","time":"2027-01-15T08:00:00Z","region":"eu-west-1",
"resources":["arn:aws:events:eu-west-1:210987654321:rule/idemkey-sweeper"],"detail":{}}`

func event(t *testing.T) events.EventBridgeEvent {
	t.Helper()
	var ev events.EventBridgeEvent
	require.NoError(t, json.Unmarshal([]byte(scheduledEvent), &ev))
	return ev
}

// fixture is a key table with records seeded through the store, and a
// function over it on a test clock.
type fixture struct {
	ep     *localstack.Endpoint
	table  string
	clock  *ddbtest.Clock
	stdout bytes.Buffer
	logs   bytes.Buffer
	// indexed: the table has the expiry index, and claim writes records
	// as its writers do (dynamostore.Options.ExpiryIndex).
	indexed bool
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	fx := &fixture{ep: localstack.ForTest(t), table: localstack.TableName("sweeper"), clock: ddbtest.NewClock(time.Date(2027, 1, 15, 8, 0, 0, 0, time.UTC))}
	require.NoError(t, dynamostore.EnsureTable(context.Background(), fx.ep.Client, fx.table, 0))
	ddbtest.DeleteOnCleanup(t, fx.ep.Client, fx.table)
	return fx
}

// claim writes a record for key claimed at the given time, with the given
// lease and retention, completed when complete is set.
func (fx *fixture) claim(t *testing.T, key string, at time.Time, lease, retention time.Duration, complete bool) {
	t.Helper()
	s := dynamostore.New(fx.ep.Client, fx.table, func(o *dynamostore.Options) {
		o.Now, o.Lease, o.Retention, o.ExpiryIndex = func() time.Time { return at }, lease, retention, fx.indexed
	})
	sum := sha256.Sum256([]byte(key))
	c, err := s.Claim(context.Background(), dynamostore.Request{Scope: "tenant", Key: key, Method: "POST", Path: "/p", Fingerprint: sum[:]})
	require.NoError(t, err)
	require.Equal(t, dynamostore.Acquired, c.Result)
	if complete {
		_, err = s.Commit(context.Background(), c, dynamostore.Response{Status: 201}, nil)
		require.NoError(t, err)
	}
}

// seed writes 30 records, order-%02d: every tenth (9, 19, 29) live and
// completed, the others expired (even) or stuck (odd).
func (fx *fixture) seed(t *testing.T) (expired, stuck, live int64) {
	now := fx.clock.Now()
	for i := range 30 {
		key := fmt.Sprintf("order-%02d", i)
		switch {
		case i%10 == 9:
			fx.claim(t, key, now.Add(-time.Hour), time.Minute, 24*time.Hour, true)
			live++
		case i%2 == 0:
			// exp: the claim's lease's end plus the retention, 2 h ago.
			fx.claim(t, key, now.Add(-3*time.Hour-time.Minute), time.Minute, time.Hour, i%4 == 0)
			expired++
		default:
			fx.claim(t, key, now.Add(-10*time.Minute), 5*time.Minute, 24*time.Hour, false)
			stuck++
		}
	}
	return expired, stuck, live
}

func (fx *fixture) function(client dynamostore.SweepClient, cfg settings) *function {
	if client == nil {
		client = fx.ep.Client
	}
	cfg.Table = fx.table
	return &function{client: client, cfg: cfg, stdout: &fx.stdout, logger: newLogger(&fx.logs), now: fx.clock.Now}
}

// lines returns the EMF lines written so far and forgets them.
func (fx *fixture) lines(t *testing.T) []map[string]any {
	t.Helper()
	var docs []map[string]any
	for line := range strings.Lines(fx.stdout.String()) {
		require.True(t, strings.HasSuffix(line, "\n"))
		require.NoError(t, emf.Validate([]byte(strings.TrimSuffix(line, "\n"))), "invalid EMF line %s", line)
		var doc map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &doc))
		docs = append(docs, doc)
	}
	fx.stdout.Reset()
	return docs
}

func TestInvocationSweepsAndEmitsOneValidEMFLineWithTheReportsFigures(t *testing.T) {
	fx := newFixture(t)
	expired, stuck, live := fx.seed(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	r, err := fx.function(nil, settings{Segments: 4}).handle(ctx, event(t))
	require.NoError(t, err)
	assert.True(t, r.Finished)
	assert.Equal(t, expired, r.Evicted)
	assert.Equal(t, stuck, r.Reclaimed)
	assert.Equal(t, live, r.LiveKeys)
	assert.Equal(t, int64(30), r.Scanned)

	docs := fx.lines(t)
	require.Len(t, docs, 1, "one EMF line per invocation")
	doc := docs[0]
	aws := doc["_aws"].(map[string]any)
	assert.Equal(t, float64(fx.clock.Now().UnixMilli()), aws["Timestamp"])
	dir := aws["CloudWatchMetrics"].([]any)[0].(map[string]any)
	assert.Equal(t, "idemkey", dir["Namespace"])
	assert.Equal(t, []any{[]any{"TableName"}}, dir["Dimensions"])
	assert.Equal(t, fx.table, doc["TableName"])
	var names []string
	for _, m := range dir["Metrics"].([]any) {
		names = append(names, m.(map[string]any)["Name"].(string))
	}
	assert.ElementsMatch(t, []string{"Scanned", "Evicted", "Reclaimed", "Skipped", "LiveKeys", "OldestLiveKeyAgeSeconds",
		"EvictionLagSeconds", "DurationMs", "ConsumedRCU", "ConsumedWCU", "ScannedPerEvicted", "Errors", "PassFinished"}, names)
	want := map[string]float64{
		"Scanned": 30, "Evicted": float64(expired), "Reclaimed": float64(stuck), "Skipped": 0, "LiveKeys": float64(live),
		"OldestLiveKeyAgeSeconds": 3600, "EvictionLagSeconds": 2 * 3600, "DurationMs": 0, "Errors": 0, "PassFinished": 1,
		"ScannedPerEvicted": 30 / float64(expired),
	}
	for name, v := range want {
		assert.Equal(t, v, doc[name], name)
	}
	assert.Equal(t, "5e0c3a8d-1b7f-4c2e-9a61-0d8f2b7c4e19", doc["EventId"])
	assert.Equal(t, "2027-01-15T08:00:00Z", doc["ScheduledTime"])

	cursor, err := storedCursor(ctx, fx.ep.Client, fx.table)
	require.NoError(t, err)
	assert.Empty(t, cursor, "a finished pass leaves no cursor")
	assert.Contains(t, fx.logs.String(), `"msg":"idemkey sweep"`)
	assert.NotContains(t, fx.logs.String(), "order-")
}

// slowScans advances the clock after every Scan.
type slowScans struct {
	dynamostore.SweepClient
	clock *ddbtest.Clock
	step  time.Duration
}

func (c *slowScans) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	out, err := c.SweepClient.Scan(ctx, in, optFns...)
	c.clock.Advance(c.step)
	return out, err
}

func TestInvocationNearItsDeadlineSavesTheCursorAndTheNextOneFinishesThePass(t *testing.T) {
	fx := newFixture(t)
	expired, stuck, live := fx.seed(t)
	// 60 s to go, a 5 s margin, and pages that take 30 s of the clock: the
	// first invocation sweeps two pages of 10 and stops.
	client := &slowScans{SweepClient: fx.ep.Client, clock: fx.clock, step: 30 * time.Second}
	f := fx.function(client, settings{Segments: 1, PageSize: 10, Margin: 5 * time.Second})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	first, err := f.handle(ctx, event(t))
	cancel()
	require.NoError(t, err)
	assert.False(t, first.Finished)
	assert.Equal(t, dynamostore.SweepStoppedByBudget, first.StoppedBy)
	assert.Empty(t, first.Cursor, "the returned report carries no cursor")
	assert.Equal(t, int64(20), first.Scanned)
	saved, err := storedCursor(context.Background(), fx.ep.Client, fx.table)
	require.NoError(t, err)
	require.NotEmpty(t, saved, "the cursor is saved in the table")
	docs := fx.lines(t)
	require.Len(t, docs, 1)
	assert.Equal(t, 0.0, docs[0]["PassFinished"])
	assert.Equal(t, "budget", docs[0]["StoppedBy"])

	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	second, err := f.handle(ctx, event(t))
	cancel()
	require.NoError(t, err)
	assert.True(t, second.Finished)
	assert.Equal(t, int64(30), first.Scanned+second.Scanned)
	assert.Equal(t, expired, first.Evicted+second.Evicted)
	assert.Equal(t, stuck, first.Reclaimed+second.Reclaimed)
	assert.Equal(t, live, first.LiveKeys+second.LiveKeys)
	docs = fx.lines(t)
	require.Len(t, docs, 1)
	assert.Equal(t, 1.0, docs[0]["PassFinished"])
	saved, err = storedCursor(context.Background(), fx.ep.Client, fx.table)
	require.NoError(t, err)
	assert.Empty(t, saved, "the finished pass deleted the cursor")
}

func TestInvocationWithAnUnusableStoredCursorStartsANewPass(t *testing.T) {
	fx := newFixture(t)
	expired, _, _ := fx.seed(t)
	require.NoError(t, storeCursor(context.Background(), fx.ep.Client, fx.table, "garbage", fx.clock.Now()))
	r, err := fx.function(nil, settings{Segments: 4}).handle(context.Background(), event(t))
	require.NoError(t, err)
	assert.True(t, r.Finished)
	assert.Equal(t, expired, r.Evicted)
	assert.Equal(t, int64(31), r.Scanned, "the cursor item itself is scanned")
	assert.Equal(t, int64(1), r.Foreign)
	assert.Contains(t, fx.logs.String(), "stored cursor unusable")
	saved, err := storedCursor(context.Background(), fx.ep.Client, fx.table)
	require.NoError(t, err)
	assert.Empty(t, saved)
}

func TestDryRunInvocationDeletesNothingAndLeavesTheCursorAlone(t *testing.T) {
	fx := newFixture(t)
	expired, stuck, _ := fx.seed(t)
	require.NoError(t, storeCursor(context.Background(), fx.ep.Client, fx.table, "someone-elses", fx.clock.Now()))
	r, err := fx.function(nil, settings{Segments: 4, DryRun: true}).handle(context.Background(), event(t))
	require.NoError(t, err)
	assert.Equal(t, expired, r.Evicted)
	assert.Equal(t, stuck, r.Reclaimed)
	docs := fx.lines(t)
	require.Len(t, docs, 1)
	assert.Equal(t, true, docs[0]["DryRun"])
	saved, err := storedCursor(context.Background(), fx.ep.Client, fx.table)
	require.NoError(t, err)
	assert.Equal(t, "someone-elses", saved)
	again, err := fx.function(nil, settings{Segments: 4, DryRun: true}).handle(context.Background(), event(t))
	require.NoError(t, err)
	assert.Equal(t, expired, again.Evicted, "nothing was deleted")
}

func TestInvocationOnAMissingTableFailsAndStillEmitsItsErrors(t *testing.T) {
	fx := newFixture(t)
	f := fx.function(nil, settings{})
	f.cfg.Table = "no-such-table"
	r, err := f.handle(context.Background(), event(t))
	require.Error(t, err)
	var se *dynamostore.StoreError
	require.ErrorAs(t, err, &se)
	require.NotNil(t, r)
	assert.Equal(t, int64(1), r.Errors, "the failed read of the cursor is counted")
	assert.Zero(t, r.Scanned, "nothing was swept")
	docs := fx.lines(t)
	require.Len(t, docs, 1)
	assert.Equal(t, 1.0, docs[0]["Errors"])
	assert.Equal(t, "no-such-table", docs[0]["TableName"])
	assert.Equal(t, 0.0, docs[0]["PassFinished"])
}

func TestConfigFromEnvironment(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	s, err := configFromEnv(env(map[string]string{"KEY_TABLE": "keys"}))
	require.NoError(t, err)
	assert.Equal(t, settings{Table: "keys"}, s, "unset variables leave dynamostore's defaults")

	s, err = configFromEnv(env(map[string]string{"KEY_TABLE": "keys", "SEGMENTS": "8", "PAGE_SIZE": "250", "RATE": "-1",
		"READ_RATE": "50.5", "MARGIN": "10s", "DRY_RUN": "true"}))
	require.NoError(t, err)
	assert.Equal(t, settings{Table: "keys", Segments: 8, PageSize: 250, ItemsPerSecond: -1, ReadUnitsPerSecond: 50.5,
		Margin: 10 * time.Second, DryRun: true}, s)

	s, err = configFromEnv(env(map[string]string{"KEY_TABLE": "app", "KEY_PARTITION_KEY": "PK", "KEY_SORT_KEY": "SK",
		"KEY_SORT_KEY_VALUE": "idem", "KEY_PREFIX": "idem", "KEY_TTL_ATTRIBUTE": "expires_at"}))
	require.NoError(t, err)
	assert.Equal(t, dynamostore.KeySchema{PartitionKey: "PK", SortKey: "SK", SortKeyValue: "idem", Prefix: "idem",
		TTLAttribute: "expires_at"}, s.Schema, "the key schema of a shared table")

	for name, vars := range map[string]map[string]string{
		"no table":          {},
		"segments word":     {"SEGMENTS": "four"},
		"segments zero":     {"SEGMENTS": "0"},
		"too many":          {"SEGMENTS": "1001"},
		"page negative":     {"PAGE_SIZE": "-5"},
		"rate word":         {"RATE": "fast"},
		"margin no unit":    {"MARGIN": "5"},
		"margin negative":   {"MARGIN": "-1s"},
		"dry run maybe":     {"DRY_RUN": "maybe"},
		"shared, no prefix": {"KEY_PARTITION_KEY": "PK", "KEY_SORT_KEY": "SK", "KEY_SORT_KEY_VALUE": "idem"},
		"sort key alone":    {"KEY_PREFIX": "idem", "KEY_SORT_KEY": "SK"},
		"ttl is the key":    {"KEY_PREFIX": "idem", "KEY_TTL_ATTRIBUTE": "pk"},
	} {
		if name != "no table" {
			vars["KEY_TABLE"] = "keys"
		}
		_, err := configFromEnv(env(vars))
		assert.Error(t, err, name)
	}
}

func TestSegmentsAreRefusedAtConfigurationPastWhatOneCursorItemHolds(t *testing.T) {
	env := func(segments int) func(string) string {
		vars := map[string]string{"KEY_TABLE": "keys", "SEGMENTS": fmt.Sprint(segments)}
		return func(k string) string { return vars[k] }
	}
	s, err := configFromEnv(env(dynamostore.MaxSweepSegments))
	require.NoError(t, err)
	assert.Equal(t, dynamostore.MaxSweepSegments, s.Segments)

	_, err = configFromEnv(env(dynamostore.MaxSweepSegments + 1))
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("SEGMENTS: at most %d", dynamostore.MaxSweepSegments))
	assert.Contains(t, err.Error(), "400 KB item")
	assert.Less(t, dynamostore.MaxSweepSegments, 200, "a worst-case cursor of 200 segments is more than 400 KB")
}

// claimIn writes a completed record for key, written by region, that
// expired an hour before the fixture's clock.
func (fx *fixture) claimIn(t *testing.T, region, key string) {
	t.Helper()
	at := fx.clock.Now().Add(-2 * time.Hour)
	s := dynamostore.New(fx.ep.Client, fx.table, func(o *dynamostore.Options) {
		o.Now, o.Lease, o.Retention, o.Region = func() time.Time { return at }, time.Minute, time.Hour, region
	})
	sum := sha256.Sum256([]byte(key))
	c, err := s.Claim(context.Background(), dynamostore.Request{Scope: "tenant", Key: key, Method: "POST", Path: "/p", Fingerprint: sum[:]})
	require.NoError(t, err)
	_, err = s.Commit(context.Background(), c, dynamostore.Response{Status: 201}, nil)
	require.NoError(t, err)
}

// regionEnv is the environment of a sweeper deployed in region with
// WRITER_REGION set to it.
func regionEnv(table, region string, extra ...string) func(string) string {
	vars := map[string]string{"KEY_TABLE": table, "AWS_REGION": region, "WRITER_REGION": region}
	for i := 0; i+1 < len(extra); i += 2 {
		vars[extra[i]] = extra[i+1]
	}
	return func(k string) string { return vars[k] }
}

// cursorItemExists reports whether table holds an item at pk.
func (fx *fixture) cursorItemExists(t *testing.T, pk string) bool {
	t.Helper()
	out, err := fx.ep.Client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: &fx.table, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{dynamostore.PartitionKey: &types.AttributeValueMemberS{Value: pk}}})
	require.NoError(t, err)
	return len(out.Item) > 0
}

func TestSweeperFunctionReadsWriterRegion(t *testing.T) {
	fx := newFixture(t)
	for i := range 4 {
		fx.claimIn(t, "us-east-1", fmt.Sprintf("east-%d", i))
		fx.claimIn(t, "eu-west-1", fmt.Sprintf("west-%d", i))
		fx.claimIn(t, "", fmt.Sprintf("none-%d", i))
	}
	cfg, err := configFromEnv(regionEnv(fx.table, "us-east-1", "SEGMENTS", "1"))
	require.NoError(t, err)
	r, err := fx.function(nil, cfg).handle(context.Background(), event(t))
	require.NoError(t, err)
	assert.True(t, r.Finished)
	assert.Equal(t, int64(4), r.Evicted, "only the records us-east-1 wrote")
	assert.Equal(t, int64(8), r.Foreign, "the other region's and the region-less records are left alone")
	docs := fx.lines(t)
	require.Len(t, docs, 1)
	assert.Equal(t, "us-east-1", docs[0]["WriterRegion"])

	cfg, err = configFromEnv(regionEnv(fx.table, "", "SEGMENTS", "1"))
	require.NoError(t, err)
	r, err = fx.function(nil, cfg).handle(context.Background(), event(t))
	require.NoError(t, err)
	assert.Equal(t, int64(8), r.Evicted, "unset: every expired record")
	assert.NotContains(t, fx.lines(t)[0], "WriterRegion")

	for name, env := range map[string]func(string) string{
		"another region than the function's": regionEnv(fx.table, "eu-west-1", "AWS_REGION", "us-east-1"),
		"too long":                           regionEnv(fx.table, strings.Repeat("r", dynamostore.MaxSweepRegionLen+1)),
	} {
		_, err := configFromEnv(env)
		assert.ErrorContains(t, err, "WRITER_REGION", name)
	}
	_, err = configFromEnv(regionEnv(fx.table, "eu-west-1", "AWS_REGION", ""))
	assert.NoError(t, err, "outside Lambda, without AWS_REGION, nothing to compare with")
}

// On an MREC global table in HomeRegion mode each region runs its own
// scheduled sweeper with WRITER_REGION set. Their cursor items replicate
// to every replica (one table here): each must resume from its own.
func TestRegionalSweepersOnOneGlobalTableKeepTheirOwnCursors(t *testing.T) {
	fx := newFixture(t)
	regions := []string{"us-east-1", "eu-west-1"}
	for _, region := range regions {
		for i := range 10 {
			fx.claimIn(t, region, fmt.Sprintf("%s-%d", region, i))
		}
	}
	// Two pages of four per invocation (see the deadline test): every
	// pass takes several invocations.
	client := &slowScans{SweepClient: fx.ep.Client, clock: fx.clock, step: 30 * time.Second}
	functions := map[string]*function{}
	for _, region := range regions {
		cfg, err := configFromEnv(regionEnv(fx.table, region, "SEGMENTS", "1", "PAGE_SIZE", "4", "MARGIN", "5s", "RATE", "-1"))
		require.NoError(t, err)
		functions[region] = fx.function(client, cfg)
	}
	evicted, invocations, finished := map[string]int64{}, map[string]int{}, map[string]bool{}
	for round := 0; round < 10 && !(finished[regions[0]] && finished[regions[1]]); round++ {
		for _, region := range regions {
			if finished[region] {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			r, err := functions[region].handle(ctx, event(t))
			cancel()
			require.NoError(t, err)
			evicted[region] += r.Evicted
			invocations[region]++
			finished[region] = r.Finished
		}
		if round == 0 {
			for _, region := range regions {
				assert.True(t, fx.cursorItemExists(t, cursorKey+"/"+region), "%s keeps its own cursor item", region)
			}
			assert.False(t, fx.cursorItemExists(t, cursorKey), "not the single-region item")
		}
	}
	assert.NotContains(t, fx.logs.String(), "stored cursor unusable", "no sweeper read the other's cursor")
	assert.Equal(t, map[string]bool{"us-east-1": true, "eu-west-1": true}, finished)
	assert.Equal(t, map[string]int64{"us-east-1": 10, "eu-west-1": 10}, evicted, "each evicted exactly its region's records")
	assert.GreaterOrEqual(t, invocations["us-east-1"], 2, "each had to resume")
	assert.GreaterOrEqual(t, invocations["eu-west-1"], 2)
	for _, region := range regions {
		assert.False(t, fx.cursorItemExists(t, cursorKey+"/"+region), "%s's finished pass deleted its cursor", region)
	}
}

// cursorKey is the partition key of the item in which Sweeper.Resume keeps
// its cursor, as its documentation states.
const cursorKey = "#sweep-cursor"

// storedCursor reads the cursor Sweeper.Resume keeps in table, "" when
// there is none.
func storedCursor(ctx context.Context, client *dynamodb.Client, table string) (string, error) {
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: cursorKey}}})
	if err != nil || out.Item == nil {
		return "", err
	}
	s, ok := out.Item["cursor"].(*types.AttributeValueMemberS)
	if !ok {
		return "", fmt.Errorf("cursor item without a cursor attribute: %v", out.Item)
	}
	return s.Value, nil
}

// storeCursor writes cursor where Sweeper.Resume looks for it.
func storeCursor(ctx context.Context, client *dynamodb.Client, table, cursor string, now time.Time) error {
	_, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: map[string]types.AttributeValue{
		"pk":      &types.AttributeValueMemberS{Value: cursorKey},
		"cursor":  &types.AttributeValueMemberS{Value: cursor},
		"updated": &types.AttributeValueMemberN{Value: strconv.FormatInt(now.UnixMilli(), 10)},
	}})
	return err
}
