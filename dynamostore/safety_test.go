package dynamostore_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/keyschema"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/txn"
)

func TestRetentionShorterThanLeaseIsRefusedAtConstruction(t *testing.T) {
	e := newEnv(t)
	assert.PanicsWithValue(t,
		"dynamostore: New: Retention 1m0s is shorter than Lease 5m0s: a key must be kept at least as long as its lock holds, "+
			"and a retry after the retention executes again; raise Retention or lower Lease",
		func() { e.store(nil, func(o *dynamostore.Options) { o.Retention = time.Minute }) },
		"the default lease is 5 minutes")
	assert.Panics(t, func() {
		e.store(nil, func(o *dynamostore.Options) { o.Retention, o.Lease = time.Hour, 2*time.Hour })
	})
	assert.NotPanics(t, func() {
		e.store(nil, func(o *dynamostore.Options) { o.Retention, o.Lease = time.Minute, time.Minute })
	}, "a retention equal to the lease is safe")
}

// A negative Retention (a sign error, a "-1 = forever" convention) is a
// mistake: it must not silently become the 24 h default, nor a negative
// Lease the default lease.
func TestNegativeRetentionOrLeaseIsRefusedAtConstruction(t *testing.T) {
	client := dynamodb.New(dynamodb.Options{Region: "us-east-1"})
	for name, fn := range map[string]func(*dynamostore.Options){
		"retention": func(o *dynamostore.Options) { o.Retention = -7 * 24 * time.Hour },
		"lease":     func(o *dynamostore.Options) { o.Lease = -time.Minute },
	} {
		v := func() (v any) {
			defer func() { v = recover() }()
			dynamostore.New(client, "keys", fn)
			return nil
		}()
		msg, _ := v.(string)
		assert.Contains(t, msg, "negative", name)
	}
}

func TestClaimWithALeaseLongerThanTheRetentionKeepsItsLockLive(t *testing.T) {
	inModes(t, testClaimWithALeaseLongerThanTheRetentionKeepsItsLockLive)
}

func testClaimWithALeaseLongerThanTheRetentionKeepsItsLockLive(t *testing.T, e *env) {
	e.clock.Advance(500 * time.Millisecond) // exp must round the lock's end up
	s := e.store(nil, func(o *dynamostore.Options) { o.Retention, o.Lease = time.Minute, time.Minute })
	ctx := context.Background()
	long := request("k1", "a")
	long.Lease = 5 * time.Minute
	first, err := s.Claim(ctx, long)
	require.NoError(t, err)
	require.Equal(t, dynamostore.Acquired, first.Result)
	lockEnd := e.clock.Now().Add(5 * time.Minute)
	assert.Equal(t, lockEnd.Add(time.Minute).Unix()+1, first.Record.Expires.Unix(),
		"exp is the lock's end plus the retention, rounded up to the second")

	e.clock.Advance(2 * time.Minute) // past claim+retention, inside the lock
	retry, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	assert.Equal(t, dynamostore.InFlight, retry.Result, "the first request still runs: a retry must not execute")

	r, err := e.sweeper(e.client).Sweep(ctx, "")
	require.NoError(t, err)
	assert.Zero(t, r.Evicted+r.Reclaimed, "the sweeper leaves a live lock alone")
	assert.Equal(t, int64(1), r.LiveKeys)
	rec, err := s.Get(ctx, "tenant-a", "k1")
	require.NoError(t, err)
	assert.Equal(t, first.Record.LockToken, rec.LockToken)

	// The lock ends: the key is reclaimable, and the new claim's record
	// covers its own lock again.
	e.clock.Advance(lockEnd.Sub(e.clock.Now()) + time.Millisecond)
	again, err := s.Claim(ctx, long)
	require.NoError(t, err)
	require.Equal(t, dynamostore.Acquired, again.Result)
	assert.False(t, again.Record.Expires.Before(again.Record.LockExpires))
}

// legacyInProgress writes an in-progress record whose exp passed an hour
// ago while its lock holds for five more minutes, as versions that let exp
// precede the end of the lock wrote them.
func legacyInProgress(t *testing.T, e *env, key string) *dynamostore.Record {
	t.Helper()
	now := e.clock.Now()
	rec := &dynamostore.Record{Scope: "tenant-a", Key: key, Method: "POST", Path: "/payments", Fingerprint: fp("a"),
		State: dynamostore.StateInProgress, LockToken: "legacy-lock", LockExpires: now.Add(5 * time.Minute),
		Created: now.Add(-2 * time.Hour), Expires: now.Add(-time.Hour)}
	_, err := e.ep.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: &e.table, Item: dynamostore.SweepTestItem(rec)})
	require.NoError(t, err)
	return rec
}

func TestInProgressRecordUnderALiveLockStandsPastItsExp(t *testing.T) {
	inModes(t, testInProgressRecordUnderALiveLockStandsPastItsExp)
}

func testInProgressRecordUnderALiveLockStandsPastItsExp(t *testing.T, e *env) {
	s := e.store(nil)
	ctx := context.Background()
	legacyInProgress(t, e, "k1")

	c, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	assert.Equal(t, dynamostore.InFlight, c.Result, "a live lock is never taken, whatever exp says")
	rec, err := s.Get(ctx, "tenant-a", "k1")
	require.NoError(t, err)
	assert.Equal(t, "legacy-lock", rec.LockToken)

	r, err := e.sweeper(e.client).Sweep(ctx, "")
	require.NoError(t, err)
	assert.Zero(t, r.Evicted+r.Reclaimed)
	assert.Equal(t, int64(1), r.LiveKeys)

	e.clock.Advance(5*time.Minute + time.Millisecond)
	c, err = s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Acquired, c.Result, "once the lock ends, the expired record is absent")
}

func TestSweepEvictionNeverDeletesALiveLockWrittenSinceTheScan(t *testing.T) {
	inModes(t, testSweepEvictionNeverDeletesALiveLockWrittenSinceTheScan)
}

func testSweepEvictionNeverDeletesALiveLockWrittenSinceTheScan(t *testing.T, e *env) {
	ctx := context.Background()
	// An expired completed record, replaced between the scan and the
	// delete by an in-progress record whose lock holds but whose exp has
	// passed (written by an older version).
	now := e.clock.Now()
	old := &dynamostore.Record{Scope: "tenant-a", Key: "k1", Method: "POST", Path: "/payments", Fingerprint: fp("a"),
		State: dynamostore.StateCompleted, LockToken: "old", LockExpires: now.Add(-48 * time.Hour),
		Created: now.Add(-48 * time.Hour), Completed: now.Add(-48 * time.Hour), Expires: now.Add(-24 * time.Hour),
		Response: &dynamostore.Response{Status: 201}}
	_, err := e.ep.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &e.table, Item: dynamostore.SweepTestItem(old)})
	require.NoError(t, err)
	target := keyschema.PartitionKey("tenant-a", "k1")
	hook := &deleteHook{SweepClient: e.client, before: func(pk string) {
		if pk == target {
			legacyInProgress(t, e, "k1")
		}
	}}
	r, err := e.sweeper(hook).Sweep(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, int64(1), r.Skipped, "the delete's condition refuses a live lock")
	assert.Zero(t, r.Evicted)
	rec, err := e.store(nil).Get(ctx, "tenant-a", "k1")
	require.NoError(t, err)
	assert.Equal(t, "legacy-lock", rec.LockToken)
}

// counterEffect stages an increment of the effect item "counter".
func (e *env) counterEffect() *txn.Tx {
	tx := txn.New()
	tx.Update(types.Update{
		TableName:                 &e.effects,
		Key:                       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "counter"}},
		UpdateExpression:          aws.String("ADD n :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
	})
	return tx
}

func (e *env) counterValue(t *testing.T) string {
	t.Helper()
	out, err := e.ep.Client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: &e.effects,
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "counter"}}, ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.NotNil(t, out.Item)
	return out.Item["n"].(*types.AttributeValueMemberN).Value
}

// ambiguousCommit claims key k1 on the embedded emulator, whose front
// answers a reused ClientRequestToken with other parameters as DynamoDB
// does (IdempotentParameterMismatchException; moto ignores the token), and
// commits it with the counter effect: the commit is applied, and reported
// as a store error. It returns the store, the claim and the effects.
func ambiguousCommit(t *testing.T) (*env, *dynamostore.Store, *dynamostore.Claim, *txn.Tx) {
	t.Helper()
	e := newEnv(t, func(o *localstack.Options) { o.Embedded = true })
	faulty := ddbtest.NewFaulty(e.client)
	s := e.store(faulty)
	c, err := s.Claim(context.Background(), request("k1", "a"))
	require.NoError(t, err)
	tx := e.counterEffect()
	faulty.Plan("TransactWriteItems", ddbtest.FailAfter)
	_, err = s.Commit(context.Background(), c, created, tx)
	var se *dynamostore.StoreError
	require.ErrorAs(t, err, &se)
	return e, s, c, tx
}

func TestCommitRepeatedAfterAnAmbiguousFailureOnAnAdvancingClockFindsItsOwnCommit(t *testing.T) {
	firstAttempt := time.Unix(1_800_000_000, 0) // newEnv's clock
	e, s, c, tx := ambiguousCommit(t)
	ctx := context.Background()

	e.clock.Advance(3 * time.Second) // the caller's retry comes later
	rec, err := s.Commit(ctx, c, created, tx)
	require.NoError(t, err, "the repeat is the same request under the same token")
	assert.Equal(t, dynamostore.StateCompleted, rec.State)
	assert.Equal(t, firstAttempt.UnixMilli(), rec.Completed.UnixMilli(), "the applied attempt's completion time")
	assert.Equal(t, "1", e.counterValue(t), "the effect applied once")

	stored, err := s.Get(ctx, "tenant-a", "k1")
	require.NoError(t, err)
	assert.Equal(t, rec.Expires, stored.Expires)
	assert.Equal(t, created.Body, stored.Response.Body)
}

func TestCommitRepeatedWithAnotherResponseReturnsTheStoredCommit(t *testing.T) {
	e, s, c, tx := ambiguousCommit(t)
	e.clock.Advance(time.Second)
	other := dynamostore.Response{Status: 200, Body: []byte(`{"id":"p2"}`)}
	rec, err := s.Commit(context.Background(), c, other, tx)
	require.NoError(t, err, "the first attempt was applied: it stands")
	assert.Equal(t, created.Status, rec.Response.Status)
	assert.Equal(t, created.Body, rec.Response.Body)
	assert.Equal(t, "1", e.counterValue(t))
}

// inProgressClient wraps the real client: its first TransactWriteItems is
// applied, and it and every later one are answered
// TransactionInProgressException, as DynamoDB answers repeats of a
// transaction it is still applying.
type inProgressClient struct {
	*dynamodb.Client
	calls int
}

func (c *inProgressClient) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.calls++
	if c.calls == 1 {
		if _, err := c.Client.TransactWriteItems(ctx, in, optFns...); err != nil {
			return nil, err
		}
	}
	return nil, &types.TransactionInProgressException{Message: aws.String("Transaction is in progress (injected)")}
}

func TestCommitReportsTransactionInProgressAsAmbiguous(t *testing.T) {
	e := newEnv(t)
	client := &inProgressClient{Client: e.client}
	s := e.store(client)
	ctx := context.Background()
	c, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	_, err = s.Commit(ctx, c, created, e.counterEffect())
	var se *dynamostore.StoreError
	require.ErrorAs(t, err, &se, "the outcome is unknown: a store error, confirmed by a read")
	assert.NotErrorIs(t, err, txn.ErrConflict, "not a definite conflict: nothing says nothing was written")
	assert.Equal(t, c.Record.LockToken, se.LockToken)
	assert.Equal(t, 1, client.calls, "no new attempt under another token")

	rec, err := s.Get(ctx, "tenant-a", "k1")
	require.NoError(t, err)
	assert.Equal(t, dynamostore.StateCompleted, rec.State, "it was in fact applied")
}

func TestBodyThatInflatesPastTheDecoderLimitIsStoredAsOmitted(t *testing.T) {
	e := newEnv(t)
	s := e.store(nil)
	ctx := context.Background()
	body := bytes.Repeat([]byte{'a'}, 64<<20+1) // compresses to well under 400 KB
	c, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	done, err := s.Commit(ctx, c, dynamostore.Response{Status: 200, Header: http.Header{"Location": {"/x"}}, Body: body}, nil)
	require.NoError(t, err)
	assert.Zero(t, len(done.Response.Body), "not stored")
	assert.Equal(t, len(body), done.Response.BodyOmitted)

	rec, err := s.Get(ctx, "tenant-a", "k1")
	require.NoError(t, err, "the record replays")
	assert.Equal(t, 200, rec.Response.Status)
	assert.Zero(t, len(rec.Response.Body))
	assert.Equal(t, len(body), rec.Response.BodyOmitted)
	assert.Equal(t, "/x", rec.Response.Header.Get("Location"))
}

func TestOversizedMethodOrPathIsRefusedWithoutCalls(t *testing.T) {
	e := newEnv(t)
	s := e.store(nil)
	ctx := context.Background()
	for name, req := range map[string]dynamostore.Request{
		"long method": {Key: "k", Method: strings.Repeat("M", dynamostore.MaxMethodBytes+1), Path: "/p", Fingerprint: fp("a")},
		"long path":   {Key: "k", Method: "POST", Path: "/" + strings.Repeat("p", dynamostore.MaxPathBytes), Fingerprint: fp("a")},
	} {
		_, err := s.Claim(ctx, req)
		assert.ErrorIs(t, err, dynamostore.ErrInvalidRequest, name)
		_, err = s.CommitFirst(ctx, req, created, nil)
		assert.ErrorIs(t, err, dynamostore.ErrInvalidRequest, name)
	}
	assert.Zero(t, e.calls.Total())

	limit := dynamostore.Request{Key: "k", Method: strings.Repeat("M", dynamostore.MaxMethodBytes),
		Path: "/" + strings.Repeat("p", dynamostore.MaxPathBytes-1), Fingerprint: fp("a")}
	c, err := s.Claim(ctx, limit)
	require.NoError(t, err, "the limits themselves are accepted")
	_, err = s.Commit(ctx, c, created, nil)
	require.NoError(t, err)
}

// ttlRace wraps the real client: UpdateTimeToLive is refused as when TTL
// was changed meanwhile, and the DescribeTimeToLive after it reports
// status on TTLAttribute.
type ttlRace struct {
	*dynamodb.Client
	status    types.TimeToLiveStatus
	describes int
}

func (c *ttlRace) DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	c.describes++
	if c.describes == 1 {
		return c.Client.DescribeTimeToLive(ctx, in, optFns...)
	}
	return &dynamodb.DescribeTimeToLiveOutput{TimeToLiveDescription: &types.TimeToLiveDescription{
		AttributeName: aws.String(dynamostore.TTLAttribute), TimeToLiveStatus: c.status}}, nil
}

func (c *ttlRace) UpdateTimeToLive(context.Context, *dynamodb.UpdateTimeToLiveInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	return nil, &smithy.GenericAPIError{Code: "ValidationException", Message: "Time to live has been modified multiple times within a fixed interval (injected)"}
}

func TestEnsureTableAfterARacingTTLUpdateRequiresTTLEnabledOrEnabling(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, status := range []types.TimeToLiveStatus{types.TimeToLiveStatusDisabling, types.TimeToLiveStatusDisabled} {
		table := e.table + "-" + strings.ToLower(string(status))
		ddbtest.DeleteOnCleanup(t, e.ep.Client, table)
		err := dynamostore.EnsureTable(ctx, &ttlRace{Client: e.ep.Client, status: status}, table, 0)
		var se *dynamostore.StoreError
		require.ErrorAs(t, err, &se, "TTL %s on the right attribute is not TTL on", status)
		assert.Equal(t, "UpdateTimeToLive", se.Op)
	}
	for _, status := range []types.TimeToLiveStatus{types.TimeToLiveStatusEnabling, types.TimeToLiveStatusEnabled} {
		table := e.table + "-" + strings.ToLower(string(status))
		ddbtest.DeleteOnCleanup(t, e.ep.Client, table)
		err := dynamostore.EnsureTable(ctx, &ttlRace{Client: e.ep.Client, status: status}, table, 0)
		assert.NoError(t, err, "another process enabled TTL: %s", status)
	}
}

func TestCommitRepeatedAfterTxnRetriedUnderANewTokenFindsItsOwnCommit(t *testing.T) {
	e := newEnv(t, func(o *localstack.Options) { o.Embedded = true })
	faulty := ddbtest.NewFaulty(e.client)
	s := e.store(faulty, func(o *dynamostore.Options) { o.Txn.BaseDelay = time.Millisecond })
	ctx := context.Background()
	c, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	tx := e.counterEffect()
	// Write's first attempt conflicts (nothing applied); its second, under
	// the next token, is applied and reported lost.
	faulty.Plan("TransactWriteItems", ddbtest.Conflict, ddbtest.FailAfter)
	_, err = s.Commit(ctx, c, created, tx)
	var se *dynamostore.StoreError
	require.ErrorAs(t, err, &se)

	e.clock.Advance(time.Second)
	rec, err := s.Commit(ctx, c, created, tx)
	require.NoError(t, err, "the repeat starts again at the first token and finds the applied commit")
	assert.Equal(t, dynamostore.StateCompleted, rec.State)
	assert.Equal(t, "1", e.counterValue(t))
}
