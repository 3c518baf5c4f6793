package idemkey_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/txn"
)

// guardEnv is one test's endpoint, key and effect tables, clock and call
// counter.
type guardEnv struct {
	ep      *localstack.Endpoint
	client  *dynamodb.Client
	calls   *ddbtest.Counter
	clock   *ddbtest.Clock
	table   string
	effects string
}

func newGuardEnv(t *testing.T) *guardEnv {
	t.Helper()
	ep := localstack.ForTest(t)
	e := &guardEnv{ep: ep, calls: ddbtest.NewCounter(), clock: ddbtest.NewClock(time.Unix(1_800_000_000, 0))}
	e.client = ep.NewClient(e.calls.Install)
	e.table = localstack.TableName("guard")
	e.effects = localstack.TableName("guard-effects")
	ddbtest.DeleteOnCleanup(t, ep.Client, e.table)
	require.NoError(t, dynamostore.EnsureTable(context.Background(), ep.Client, e.table, 0))
	ddbtest.CreateTable(t, ep.Client, e.effects, "id")
	return e
}

// store returns a store over client (default: the counted client) on the
// env's clock, with an hour's retention.
func (e *guardEnv) store(client dynamostore.Client) *dynamostore.Store {
	if client == nil {
		client = e.client
	}
	return dynamostore.New(client, e.table, func(o *dynamostore.Options) { o.Now, o.Retention = e.clock.Now, time.Hour })
}

func (e *guardEnv) guard(s idemkey.Store, optFns ...func(*idemkey.Options)) *idemkey.Guard {
	return idemkey.New(s, append([]func(*idemkey.Options){func(o *idemkey.Options) { o.Now = e.clock.Now }}, optFns...)...)
}

// staging returns a function that stages the effect item id and answers
// 201 with body.
func (e *guardEnv) staging(id, body string) idemkey.Func {
	return func(ctx context.Context) (idemkey.Response, error) {
		tx, _ := txn.FromContext(ctx)
		tx.Put(types.Put{TableName: &e.effects, ConditionExpression: aws.String("attribute_not_exists(id)"),
			Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}}})
		return idemkey.Response{Status: 201, Body: []byte(body)}, nil
	}
}

func (e *guardEnv) effectCount(t *testing.T, id string) int {
	t.Helper()
	return ddbtest.CountItems(t, e.ep.Client, e.effects, "id", id)
}

// commitFault wraps the real client: the n-th TransactWriteItems (n from
// 1) is sent to DynamoDB when send(n), and is then answered with fault's
// error instead of DynamoDB's answer.
type commitFault struct {
	*dynamodb.Client
	send  func(n int) bool
	fault func(ctx context.Context) error
	n     int
}

func (c *commitFault) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.n++
	if c.send(c.n) {
		if _, err := c.Client.TransactWriteItems(ctx, in, optFns...); err != nil {
			return nil, err
		}
	}
	return nil, c.fault(ctx)
}

func inProgress(context.Context) error {
	return &types.TransactionInProgressException{Message: aws.String("Transaction is in progress (injected)")}
}

func TestTransactionInProgressIsConfirmedByAReadNotTakenForAConflict(t *testing.T) {
	e := newGuardEnv(t)
	ctx := context.Background()

	// Applied, then every answer says the transaction is still in progress.
	applied := e.guard(e.store(&commitFault{Client: e.client, send: func(n int) bool { return n == 1 }, fault: inProgress}))
	res, err := applied.Do(ctx, req("k1"), e.staging("p1", "mine"))
	require.NoError(t, err, "the commit landed: the read finds it")
	assert.True(t, res.Stored)
	assert.False(t, res.Replayed)
	assert.Equal(t, "mine", string(res.Response.Body))
	assert.Equal(t, 1, e.effectCount(t, "p1"))

	// Never applied: the outcome was unknown, so the answer is retryable
	// and the key is released once the read finds it uncommitted.
	never := e.guard(e.store(&commitFault{Client: e.client, send: func(int) bool { return false }, fault: inProgress}))
	_, err = never.Do(ctx, req("k2"), e.staging("p2", "mine"))
	var unavailable *idemkey.UnavailableError
	require.ErrorAs(t, err, &unavailable, "an ambiguous outcome, not a definite conflict")
	assert.NotErrorIs(t, err, txn.ErrConflict)
	res, err = e.guard(e.store(nil)).Do(ctx, req("k2"), e.staging("p2", "retry"))
	require.NoError(t, err)
	assert.False(t, res.Replayed, "the retry executes")
	assert.Equal(t, 1, e.effectCount(t, "p2"))
}

func TestConfirmingReadGetsItsOwnTimeAfterACommitUsedUpTheWriteTimeout(t *testing.T) {
	for _, mode := range []idemkey.Mode{idemkey.ClaimFirst, idemkey.OneTrip} {
		t.Run(map[idemkey.Mode]string{idemkey.ClaimFirst: "ClaimFirst", idemkey.OneTrip: "OneTrip"}[mode], func(t *testing.T) {
			e := newGuardEnv(t)
			ctx := context.Background()
			// The commit is applied, and its answer never comes before the
			// write timeout ends.
			hang := &commitFault{Client: e.client, send: func(int) bool { return true },
				fault: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }}
			g := e.guard(e.store(hang), func(o *idemkey.Options) { o.Mode, o.WriteTimeout = mode, 50*time.Millisecond })
			res, err := g.Do(ctx, req("k1"), e.staging("p1", "mine"))
			require.NoError(t, err, "the committed answer, not 503")
			assert.True(t, res.Stored)
			assert.False(t, res.Replayed, "this execution's own answer")
			assert.Equal(t, "mine", string(res.Response.Body))

			res, err = e.guard(e.store(nil)).Do(ctx, req("k1"), e.staging("p1", "retry"))
			require.NoError(t, err, "the key is not left locked")
			assert.True(t, res.Replayed)
			assert.Equal(t, "mine", string(res.Response.Body))
			assert.Equal(t, 1, e.effectCount(t, "p1"))
		})
	}
}

func TestOneTripAmbiguousCommitFoundUnderItsOwnTokenIsNotAReplay(t *testing.T) {
	e := newGuardEnv(t)
	ctx := context.Background()
	faulty := ddbtest.NewFaulty(e.client)
	g := e.guard(e.store(faulty), func(o *idemkey.Options) { o.Mode = idemkey.OneTrip })
	faulty.Plan("TransactWriteItems", ddbtest.FailAfter)
	res, err := g.Do(ctx, req("k1"), e.staging("p1", "mine"))
	require.NoError(t, err)
	assert.False(t, res.Replayed, "the commit the read found is this execution's")
	assert.True(t, res.Stored)
	assert.Equal(t, "mine", string(res.Response.Body))

	again, err := g.Do(ctx, req("k1"), e.staging("p1", "retry"))
	require.NoError(t, err)
	assert.True(t, again.Replayed)
	assert.Equal(t, "mine", string(again.Response.Body))
	assert.Equal(t, 1, e.effectCount(t, "p1"))
}

func TestOneTripAmbiguousCommitFindingATwinsCommitIsAReplay(t *testing.T) {
	e := newGuardEnv(t)
	ctx := context.Background()
	oneTrip := func(o *idemkey.Options) { o.Mode = idemkey.OneTrip }
	_, err := e.guard(e.store(nil), oneTrip).Do(ctx, req("k1"), e.staging("p1", "twin"))
	require.NoError(t, err)

	faulty := ddbtest.NewFaulty(e.client)
	faulty.Plan("TransactWriteItems", ddbtest.FailBefore)
	res, err := e.guard(e.store(faulty), oneTrip).Do(ctx, req("k1"), e.staging("p1", "mine"))
	require.NoError(t, err)
	assert.True(t, res.Replayed, "another execution's answer")
	assert.Equal(t, "twin", string(res.Response.Body))
	assert.Equal(t, 1, e.effectCount(t, "p1"))
}

func TestCacheStopsServingAtTheFirstInstantAClaimCouldTakeTheKey(t *testing.T) {
	e := newGuardEnv(t)
	ctx := context.Background()
	e.clock.Advance(700 * time.Millisecond) // the commit's time has a fraction of a second
	s := e.store(nil)
	cached := e.guard(s, func(o *idemkey.Options) { o.Cache = idemkey.NewCache(10, 24*time.Hour) })
	_, err := cached.Do(ctx, req("k1"), ok("first"))
	require.NoError(t, err)
	exp, err := s.Get(ctx, "s", "k1")
	require.NoError(t, err)

	// The last instant of the stored exp second: the record is live.
	e.clock.Advance(time.Unix(exp.Expires.Unix()+1, 0).Sub(e.clock.Now()) - time.Millisecond)
	e.calls.Reset()
	res, err := cached.Do(ctx, req("k1"), ok("unused"))
	require.NoError(t, err)
	assert.True(t, res.Replayed)
	assert.Zero(t, e.calls.Total(), "the cache answers")

	// The next second: another process claims the key and completes it.
	e.clock.Advance(time.Millisecond)
	res, err = e.guard(s).Do(ctx, req("k1"), ok("second"))
	require.NoError(t, err)
	require.False(t, res.Replayed, "the record expired: the key was claimable")

	res, err = cached.Do(ctx, req("k1"), ok("unused"))
	require.NoError(t, err)
	assert.Equal(t, "second", string(res.Response.Body), "the key's current answer, not the cached stale one")
}
