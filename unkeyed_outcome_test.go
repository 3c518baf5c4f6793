package idemkey_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/txn"
)

// stageEffect stages the put of effect item id on tx, without a condition:
// an unkeyed write that a second commit applies again.
func (e *guardEnv) stageEffect(tx *txn.Tx, id string) {
	tx.Put(types.Put{TableName: &e.effects, Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}}})
}

func TestUnkeyedCommitWhoseAnswerIsLostIsOutcomeUnknownAndNotRetryable(t *testing.T) {
	e := newGuardEnv(t)
	faulty := ddbtest.NewFaulty(e.client)
	faulty.Plan("TransactWriteItems", ddbtest.FailAfter)
	g := e.guard(e.store(faulty))
	tx := txn.New()
	e.stageEffect(tx, "w1")

	err := g.CommitUnkeyed(context.Background(), tx, idemkey.Response{Status: 201})
	require.Error(t, err)
	assert.Equal(t, 1, e.effectCount(t, "w1"), "the write landed; only its answer was lost")
	assert.ErrorIs(t, err, idemkey.ErrOutcomeUnknown)
	assert.NotErrorIs(t, err, idemkey.ErrUnavailable, "an answer that invites a retry would write twice")
	var unknown *idemkey.OutcomeUnknownError
	require.ErrorAs(t, err, &unknown)
	assert.False(t, unknown.Temporary())
	assert.ErrorIs(t, err, ddbtest.ErrInjected, "the store's error is kept")
	outcome, _ := idemkey.OutcomeOf(err)
	assert.Equal(t, idemkey.OutcomeError, outcome)
}

func TestUnkeyedCommitCancelledWithoutWritingIsUnavailable(t *testing.T) {
	e := newGuardEnv(t)
	faulty := ddbtest.NewFaulty(e.client)
	// More conflicts than the commit's attempts: DynamoDB's answer each
	// time is that nothing was written.
	faulty.Plan("TransactWriteItems", ddbtest.Conflict, ddbtest.Conflict, ddbtest.Conflict, ddbtest.Conflict, ddbtest.Conflict)
	g := e.guard(e.store(faulty))
	tx := txn.New()
	e.stageEffect(tx, "w1")

	err := g.CommitUnkeyed(context.Background(), tx, idemkey.Response{Status: 201})
	assert.ErrorIs(t, err, idemkey.ErrUnavailable, "nothing was written: a retry is one execution")
	assert.NotErrorIs(t, err, idemkey.ErrOutcomeUnknown)
	assert.Zero(t, e.effectCount(t, "w1"))
}

func TestAnswersRefusingTheCallerAreNeverStored(t *testing.T) {
	for _, status := range []int{401, 403} {
		e := newGuardEnv(t)
		ctx := context.Background()
		always := func(o *idemkey.Options) { o.ShouldStore = func(idemkey.Response) bool { return true } }
		for _, g := range []*idemkey.Guard{e.guard(e.store(nil)), e.guard(e.store(nil), always)} {
			runs := 0
			refuse := func(ctx context.Context) (idemkey.Response, error) {
				runs++
				tx, _ := txn.FromContext(ctx)
				e.stageEffect(tx, "refused")
				return idemkey.Response{Status: status}, nil
			}
			res, err := g.Do(ctx, req("k1"), refuse)
			require.NoError(t, err)
			assert.False(t, res.Stored, "%d is not stored", status)
			res, err = g.Do(ctx, req("k1"), refuse)
			require.NoError(t, err)
			assert.False(t, res.Replayed, "%d: the key was released, the retry executes", status)
			assert.Equal(t, 2, runs)

			tx := txn.New()
			e.stageEffect(tx, "refused")
			require.NoError(t, g.CommitUnkeyed(ctx, tx, idemkey.Response{Status: status}))
			assert.Zero(t, e.effectCount(t, "refused"), "%d: its staged writes are discarded, keyed or not", status)
		}
	}
	assert.True(t, idemkey.RefusesCaller(401))
	assert.True(t, idemkey.RefusesCaller(403))
	assert.False(t, idemkey.RefusesCaller(404))
	assert.False(t, idemkey.RefusesCaller(200))
}
