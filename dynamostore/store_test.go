package dynamostore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/keyschema"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/txn"
)

// env is one test's DynamoDB endpoint, key table, effects table, clock and
// call counter.
type env struct {
	ep      *localstack.Endpoint
	client  *dynamodb.Client
	calls   *ddbtest.Counter
	clock   *ddbtest.Clock
	table   string
	effects string
	// mode is the Mode of the env's sweeper (see inModes).
	mode dynamostore.SweepMode
}

func newEnv(t *testing.T, optFns ...func(*localstack.Options)) *env {
	t.Helper()
	ep := localstack.ForTest(t, optFns...)
	e := &env{ep: ep, calls: ddbtest.NewCounter(), clock: ddbtest.NewClock(time.Unix(1_800_000_000, 0))}
	e.client = ep.NewClient(e.calls.Install)
	e.table = localstack.TableName("keys")
	e.effects = localstack.TableName("effects")
	require.NoError(t, dynamostore.EnsureTable(context.Background(), ep.Client, e.table, 0))
	ddbtest.DeleteOnCleanup(t, ep.Client, e.table)
	ddbtest.CreateTable(t, ep.Client, e.effects, "id")
	return e
}

func (e *env) store(client dynamostore.Client, optFns ...func(*dynamostore.Options)) *dynamostore.Store {
	if client == nil {
		client = e.client
	}
	return dynamostore.New(client, e.table, append([]func(*dynamostore.Options){func(o *dynamostore.Options) { o.Now, o.ExpiryIndex = e.clock.Now, e.indexed() }}, optFns...)...)
}

// losingAnswers returns a client of the env's endpoint that loses the
// answers of the first n requests of op after they were applied (see
// ddbtest.LostAnswers), and the client that loses them.
func (e *env) losingAnswers(op string, n int) (*dynamodb.Client, *ddbtest.LostAnswers) {
	var lost *ddbtest.LostAnswers
	client := e.ep.NewClient(func(o *dynamodb.Options) {
		lost = ddbtest.NewLostAnswers(o.HTTPClient, op, n)
		o.HTTPClient = lost
	})
	return client, lost
}

func fp(s string) []byte { sum := sha256.Sum256([]byte(s)); return sum[:] }

func request(key, body string) dynamostore.Request {
	return dynamostore.Request{Scope: "tenant-a", Key: key, Method: "POST", Path: "/payments", Fingerprint: fp(body)}
}

var created = dynamostore.Response{Status: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"id":"p1"}`)}

func (e *env) effectPut(id string) types.Put {
	return types.Put{
		TableName:           &e.effects,
		Item:                map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
		ConditionExpression: aws.String("attribute_not_exists(id)"),
	}
}

func (e *env) effectExists(t *testing.T, id string) bool {
	t.Helper()
	out, err := e.ep.Client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: &e.effects, Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}}, ConsistentRead: aws.Bool(true),
	})
	require.NoError(t, err)
	return out.Item != nil
}

func TestFirstClaimAcquiresWithOnePutItem(t *testing.T) {
	e := newEnv(t)
	s := e.store(nil)
	c, err := s.Claim(context.Background(), request("k1", "a"))
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Acquired, c.Result)
	assert.Equal(t, dynamostore.StateInProgress, c.Record.State)
	assert.NotEmpty(t, c.Record.LockToken)
	assert.Equal(t, "PutItem=1", e.calls.String())

	rec, err := s.Get(context.Background(), "tenant-a", "k1")
	require.NoError(t, err)
	assert.Equal(t, c.Record.LockToken, rec.LockToken)
	assert.Equal(t, e.clock.Now().Add(dynamostore.DefaultLease).UnixMilli(), rec.LockExpires.UnixMilli())
	assert.Equal(t, e.clock.Now().Add(dynamostore.DefaultLease+dynamostore.DefaultRetention).Unix(), rec.Expires.Unix())
}

func TestReplayAfterCompleteCostsOneCallWhenItemReturned(t *testing.T) {
	e := newEnv(t)
	s := e.store(nil)
	ctx := context.Background()
	c, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	_, err = s.Commit(ctx, c, created, nil)
	require.NoError(t, err)

	e.calls.Reset()
	again, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Replay, again.Result)
	assert.Equal(t, 201, again.Record.Response.Status)
	assert.Equal(t, created.Body, again.Record.Response.Body)
	assert.Equal(t, "application/json", again.Record.Response.Header.Get("Content-Type"))
	assert.Equal(t, "PutItem=1", e.calls.String(), "real DynamoDB's path: the item comes with the failure")
}

func TestReplayFallsBackToConsistentGetWhenNoItemReturned(t *testing.T) {
	e := newEnv(t)
	s := e.store(e.ep.NewClient(e.calls.Install, ddbtest.WithoutOldItem))
	ctx := context.Background()
	c, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	_, err = s.Commit(ctx, c, created, nil)
	require.NoError(t, err)

	e.calls.Reset()
	again, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Replay, again.Result)
	assert.Equal(t, created.Body, again.Record.Response.Body)
	assert.Equal(t, "GetItem=1 PutItem=1", e.calls.String())
}

func TestDuplicateWhileInFlightIsInFlight(t *testing.T) {
	e := newEnv(t)
	s := e.store(nil)
	ctx := context.Background()
	_, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	e.calls.Reset()
	c, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	assert.Equal(t, dynamostore.InFlight, c.Result)
	assert.Equal(t, 1, e.calls.Total())
}

func TestDifferentFingerprintIsMismatchInFlightOrCompleted(t *testing.T) {
	e := newEnv(t)
	s := e.store(nil)
	ctx := context.Background()
	c, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)

	other, err := s.Claim(ctx, request("k1", "b"))
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Mismatch, other.Result, "while in flight")

	_, err = s.Commit(ctx, c, created, nil)
	require.NoError(t, err)
	other, err = s.Claim(ctx, request("k1", "b"))
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Mismatch, other.Result, "after completion")
}

func TestExpiredRecordIsAbsentBeforeTTLDeletesIt(t *testing.T) {
	e := newEnv(t)
	s := e.store(nil, func(o *dynamostore.Options) { o.Retention = time.Hour })
	ctx := context.Background()
	c, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	_, err = s.Commit(ctx, c, created, nil)
	require.NoError(t, err)

	e.clock.Advance(dynamostore.DefaultLease + time.Hour) // exactly at exp (the lock's end plus the retention): still live
	_, err = s.Get(ctx, "tenant-a", "k1")
	require.NoError(t, err)
	again, err := s.Claim(ctx, request("k1", "b"))
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Mismatch, again.Result)

	e.clock.Advance(time.Second)
	_, err = s.Get(ctx, "tenant-a", "k1")
	assert.ErrorIs(t, err, dynamostore.ErrNotFound)
	fresh, err := s.Claim(ctx, request("k1", "b"))
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Acquired, fresh.Result, "an expired record is absent, even with another fingerprint")
}

func TestStuckLockIsReclaimedAfterTheLeaseAndNotBefore(t *testing.T) {
	e := newEnv(t)
	s := e.store(nil, func(o *dynamostore.Options) { o.Lease = time.Minute })
	ctx := context.Background()
	dead, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)

	e.clock.Advance(time.Minute) // lock_exp == now: not yet expired
	c, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	assert.Equal(t, dynamostore.InFlight, c.Result)

	e.clock.Advance(time.Millisecond)
	c, err = s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	require.Equal(t, dynamostore.Acquired, c.Result)
	assert.NotEqual(t, dead.Record.LockToken, c.Record.LockToken)

	// The dead owner comes back: every write of its is fenced off.
	_, err = s.Commit(ctx, dead, created, nil)
	assert.ErrorIs(t, err, dynamostore.ErrLockLost)
	assert.ErrorIs(t, s.Release(ctx, dead), dynamostore.ErrLockLost)
	tx := txn.New()
	tx.Put(e.effectPut("late"))
	_, err = s.Commit(ctx, dead, created, tx)
	assert.ErrorIs(t, err, dynamostore.ErrLockLost)
	assert.False(t, e.effectExists(t, "late"), "a fenced-off commit writes no effect")

	rec, err := s.Get(ctx, "tenant-a", "k1")
	require.NoError(t, err)
	assert.Equal(t, c.Record.LockToken, rec.LockToken, "the new owner's record is intact")
	assert.Equal(t, dynamostore.StateInProgress, rec.State)
}

func TestPerClaimLeaseOverridesTheDefault(t *testing.T) {
	e := newEnv(t)
	s := e.store(nil)
	req := request("k1", "a")
	req.Lease = 3 * time.Second
	c, err := s.Claim(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, e.clock.Now().Add(3*time.Second), c.Record.LockExpires)
}

func TestScopesNeverCollideNorReplayAcrossEachOther(t *testing.T) {
	e := newEnv(t)
	s := e.store(nil)
	ctx := context.Background()
	a := request("same-key", "x")
	b := a
	b.Scope = "tenant-b"
	ca, err := s.Claim(ctx, a)
	require.NoError(t, err)
	_, err = s.Commit(ctx, ca, created, nil)
	require.NoError(t, err)

	cb, err := s.Claim(ctx, b)
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Acquired, cb.Result)

	// Length prefixing: ("ab","c") and ("a","bc") are different records.
	x := dynamostore.Request{Scope: "ab", Key: "c", Fingerprint: fp("1")}
	y := dynamostore.Request{Scope: "a", Key: "bc", Fingerprint: fp("2")}
	cx, err := s.Claim(ctx, x)
	require.NoError(t, err)
	cy, err := s.Claim(ctx, y)
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Acquired, cx.Result)
	assert.Equal(t, dynamostore.Acquired, cy.Result)
}

func TestSDKRetryOfOwnClaimCountsAsAcquired(t *testing.T) {
	e := newEnv(t)
	faulty := ddbtest.NewFaulty(e.client)
	faulty.Plan("PutItem", ddbtest.Repeat)
	s := e.store(faulty)
	c, err := s.Claim(context.Background(), request("k1", "a"))
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Acquired, c.Result)
}

func TestCommitWritesKeyAndEffectsTogether(t *testing.T) {
	e := newEnv(t)
	s := e.store(nil)
	ctx := context.Background()
	c, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	tx := txn.New()
	tx.Put(e.effectPut("p1"))
	e.calls.Reset()
	rec, err := s.Commit(ctx, c, created, tx)
	require.NoError(t, err)
	assert.Equal(t, dynamostore.StateCompleted, rec.State)
	assert.Equal(t, "TransactWriteItems=1", e.calls.String())
	assert.True(t, e.effectExists(t, "p1"))
	stored, err := s.Get(ctx, "tenant-a", "k1")
	require.NoError(t, err)
	assert.Equal(t, dynamostore.StateCompleted, stored.State)
	assert.Equal(t, created.Body, stored.Response.Body)
}

func TestFailedEffectConditionWritesNeitherKeyNorEffect(t *testing.T) {
	e := newEnv(t)
	s := e.store(nil)
	ctx := context.Background()
	_, err := e.ep.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &e.effects, Item: map[string]types.AttributeValue{
		"id": &types.AttributeValueMemberS{Value: "taken"}, "owner": &types.AttributeValueMemberS{Value: "someone"},
	}})
	require.NoError(t, err)
	c, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	tx := txn.New()
	tx.Put(e.effectPut("fresh"))
	taken := e.effectPut("taken")
	taken.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	tx.Put(taken)

	_, err = s.Commit(ctx, c, created, tx)
	var cf *txn.ConditionFailedError
	require.ErrorAs(t, err, &cf)
	assert.ErrorIs(t, err, txn.ErrConditionFailed)
	assert.Equal(t, 1, cf.Index)
	assert.Equal(t, "someone", cf.Item["owner"].(*types.AttributeValueMemberS).Value, "the old item comes with the reason")
	assert.False(t, e.effectExists(t, "fresh"), "no effect without its key")
	rec, err := s.Get(ctx, "tenant-a", "k1")
	require.NoError(t, err)
	assert.Equal(t, dynamostore.StateInProgress, rec.State, "no key without its effect")
}

func TestCommitRetriedAfterAmbiguousFailureAppliesOnce(t *testing.T) {
	e := newEnv(t)
	faulty := ddbtest.NewFaulty(e.client)
	s := e.store(faulty)
	ctx := context.Background()
	c, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	tx := txn.New()
	tx.Update(types.Update{
		TableName:                 &e.effects,
		Key:                       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "counter"}},
		UpdateExpression:          aws.String("ADD n :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
	})
	faulty.Plan("TransactWriteItems", ddbtest.FailAfter)
	_, err = s.Commit(ctx, c, created, tx)
	var se *dynamostore.StoreError
	require.ErrorAs(t, err, &se, "the timeout is reported as a store error")

	rec, err := s.Commit(ctx, c, created, tx)
	require.NoError(t, err, "the repeat finds its own completed record")
	assert.Equal(t, dynamostore.StateCompleted, rec.State)

	out, err := e.ep.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &e.effects,
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "counter"}}, ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	assert.Equal(t, "1", out.Item["n"].(*types.AttributeValueMemberN).Value, "the effect applied once")
}

func TestCommitRetriesTransactionConflicts(t *testing.T) {
	e := newEnv(t)
	faulty := ddbtest.NewFaulty(e.client)
	s := e.store(faulty, func(o *dynamostore.Options) { o.Txn.BaseDelay = time.Millisecond })
	ctx := context.Background()
	c, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	tx := txn.New()
	tx.Put(e.effectPut("p1"))
	faulty.Plan("TransactWriteItems", ddbtest.Conflict, ddbtest.Conflict)
	_, err = s.Commit(ctx, c, created, tx)
	require.NoError(t, err)
	assert.True(t, e.effectExists(t, "p1"))

	c2, err := s.Claim(ctx, request("k2", "a"))
	require.NoError(t, err)
	tx2 := txn.New()
	tx2.Put(e.effectPut("p2"))
	faulty.Plan("TransactWriteItems", ddbtest.Conflict, ddbtest.Conflict, ddbtest.Conflict, ddbtest.Conflict)
	_, err = s.Commit(ctx, c2, created, tx2)
	var ce *txn.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 4, ce.Attempts)
	assert.False(t, e.effectExists(t, "p2"))
}

func TestTooManyActionsAreRejectedBeforeCallingDynamoDB(t *testing.T) {
	e := newEnv(t)
	s := e.store(nil)
	ctx := context.Background()
	c, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	tx := txn.New()
	for i := range txn.MaxActions {
		tx.Put(e.effectPut("p" + string(rune('a'+i%26)) + strings.Repeat("x", i)))
	}
	e.calls.Reset()
	_, err = s.Commit(ctx, c, created, tx)
	assert.ErrorIs(t, err, txn.ErrTooManyActions)
	assert.Equal(t, 0, e.calls.Total())
}

func TestReleaseFreesTheKeyForARetry(t *testing.T) {
	e := newEnv(t)
	s := e.store(nil)
	ctx := context.Background()
	c, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	require.NoError(t, s.Release(ctx, c))
	_, err = s.Get(ctx, "tenant-a", "k1")
	assert.ErrorIs(t, err, dynamostore.ErrNotFound)
	again, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Acquired, again.Result)
	// A release after completion is refused and changes nothing.
	_, err = s.Commit(ctx, again, created, nil)
	require.NoError(t, err)
	assert.ErrorIs(t, s.Release(ctx, again), dynamostore.ErrLockLost)
	rec, err := s.Get(ctx, "tenant-a", "k1")
	require.NoError(t, err)
	assert.Equal(t, dynamostore.StateCompleted, rec.State)
}

func TestReleaseWhoseDeleteWasAppliedBeforeItsAnswerWasLostSucceeds(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	client, lost := e.losingAnswers("DeleteItem", 1)
	s := e.store(client)
	c, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	require.NoError(t, s.Release(ctx, c), "the SDK's retry found the record its first attempt had deleted gone")
	require.Equal(t, 1, lost.Lost(), "the delete's answer was not lost")
	_, err = s.Get(ctx, "tenant-a", "k1")
	assert.ErrorIs(t, err, dynamostore.ErrNotFound)
	// A record someone else deleted is still a lost lock: the delete was
	// sent once.
	again, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	_, err = e.ep.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &e.table, Key: map[string]types.AttributeValue{
		dynamostore.PartitionKey: &types.AttributeValueMemberS{Value: keyschema.PartitionKey("tenant-a", "k1")},
	}})
	require.NoError(t, err)
	assert.ErrorIs(t, s.Release(ctx, again), dynamostore.ErrLockLost)
}

func TestLargeBodiesAreCompressedOrOmittedNeverLost(t *testing.T) {
	e := newEnv(t)
	s := e.store(nil)
	ctx := context.Background()

	compressible := bytes.Repeat([]byte(`{"line":"the same text again"}`), 20_000) // ~600 KB
	c, err := s.Claim(ctx, request("big", "a"))
	require.NoError(t, err)
	_, err = s.Commit(ctx, c, dynamostore.Response{Status: 200, Body: compressible}, nil)
	require.NoError(t, err)
	rec, err := s.Get(ctx, "tenant-a", "big")
	require.NoError(t, err)
	assert.Equal(t, compressible, rec.Response.Body)
	assert.Zero(t, rec.Response.BodyOmitted)

	random := make([]byte, 500_000)
	_, _ = rand.Read(random)
	c, err = s.Claim(ctx, request("huge", "a"))
	require.NoError(t, err)
	_, err = s.Commit(ctx, c, dynamostore.Response{Status: 201, Header: http.Header{"Location": {"/x"}}, Body: random}, nil)
	require.NoError(t, err, "a body too large to store still completes the key")
	rec, err = s.Get(ctx, "tenant-a", "huge")
	require.NoError(t, err)
	assert.Equal(t, dynamostore.StateCompleted, rec.State)
	assert.Equal(t, 201, rec.Response.Status)
	assert.Nil(t, rec.Response.Body)
	assert.Equal(t, len(random), rec.Response.BodyOmitted)
	assert.Equal(t, "/x", rec.Response.Header.Get("Location"))
}

func TestUnstoredHeadersAreDropped(t *testing.T) {
	e := newEnv(t)
	s := e.store(nil)
	ctx := context.Background()
	c, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	h := http.Header{"Set-Cookie": {"s=1"}, "Date": {"x"}, "Connection": {"close"}, "Content-Length": {"3"}, "X-Request-Id": {"r1"}}
	_, err = s.Commit(ctx, c, dynamostore.Response{Status: 200, Header: h, Body: []byte("abc")}, nil)
	require.NoError(t, err)
	rec, err := s.Get(ctx, "tenant-a", "k1")
	require.NoError(t, err)
	assert.Equal(t, http.Header{"X-Request-Id": {"r1"}}, rec.Response.Header)
}

func TestForeignItemIsACorruptRecordNotAReplay(t *testing.T) {
	e := newEnv(t)
	s := e.store(nil)
	ctx := context.Background()
	_, err := e.ep.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &e.table, Item: map[string]types.AttributeValue{
		"pk":  &types.AttributeValueMemberS{Value: keyschema.PartitionKey("tenant-a", "k1")},
		"exp": &types.AttributeValueMemberN{Value: "99999999999"},
		"fp":  &types.AttributeValueMemberS{Value: "not bytes"},
	}})
	require.NoError(t, err)
	_, err = s.Claim(ctx, request("k1", "a"))
	assert.ErrorIs(t, err, dynamostore.ErrCorruptRecord)
	var re *dynamostore.RecordError
	assert.ErrorAs(t, err, &re)
}

func TestInvalidRequestsAreRejectedWithoutCalls(t *testing.T) {
	e := newEnv(t)
	s := e.store(nil)
	for name, req := range map[string]dynamostore.Request{
		"empty key":   {Key: "", Fingerprint: fp("a")},
		"long key":    {Key: strings.Repeat("k", dynamostore.MaxKeyBytes+1), Fingerprint: fp("a")},
		"long scope":  {Scope: strings.Repeat("s", dynamostore.MaxScopeBytes+1), Key: "k", Fingerprint: fp("a")},
		"fingerprint": {Key: "k", Fingerprint: []byte("short")},
	} {
		_, err := s.Claim(context.Background(), req)
		assert.ErrorIs(t, err, dynamostore.ErrInvalidRequest, name)
	}
	assert.Zero(t, e.calls.Total())
}

func TestStoreErrorsAreTyped(t *testing.T) {
	e := newEnv(t)
	faulty := ddbtest.NewFaulty(e.client)
	faulty.Plan("PutItem", ddbtest.FailBefore)
	_, err := e.store(faulty).Claim(context.Background(), request("k1", "a"))
	var se *dynamostore.StoreError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "PutItem", se.Op)
	assert.True(t, errors.Is(err, ddbtest.ErrInjected))
}

func TestEnsureTableIsIdempotentAndEnablesTTL(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	require.NoError(t, dynamostore.EnsureTable(ctx, e.ep.Client, e.table, 0))
	out, err := e.ep.Client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &e.table})
	require.NoError(t, err)
	assert.Equal(t, types.TimeToLiveStatusEnabled, out.TimeToLiveDescription.TimeToLiveStatus)
	assert.Equal(t, dynamostore.TTLAttribute, aws.ToString(out.TimeToLiveDescription.AttributeName))

	err = dynamostore.EnsureTable(ctx, e.ep.Client, e.effects, 0)
	assert.ErrorIs(t, err, dynamostore.ErrTableSchema, "a table keyed otherwise is refused")
}
