package idemkey_test

import (
	"context"
	"crypto/rand"
	"errors"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/txn"
)

// recorder keeps the events it observes, and the contexts its
// StartRequest saw and returned.
type recorder struct {
	mu      sync.Mutex
	events  []idemkey.Event
	started []string
}

type startedKey struct{}

func (r *recorder) Observe(ctx context.Context, e idemkey.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ctx.Value(startedKey{}) == nil {
		panic("Observe without the context StartRequest returned")
	}
	r.events = append(r.events, e)
}

func (r *recorder) StartRequest(ctx context.Context, mode idemkey.Mode, frontDoor string) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = append(r.started, mode.String()+" "+frontDoor)
	return context.WithValue(ctx, startedKey{}, true)
}

func (r *recorder) last(t *testing.T) idemkey.Event {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.NotEmpty(t, r.events)
	return r.events[len(r.events)-1]
}

// Each Do reports one Event, in the context StartRequest returned, which
// the function runs in too.
func TestDoReportsOneEventPerRequest(t *testing.T) {
	rec := &recorder{}
	g := newGuard(t, func(o *idemkey.Options) { o.Observer, o.FrontDoor = rec, "test" })
	ctx := context.Background()
	_, err := g.Do(ctx, req("k"), func(ctx context.Context) (idemkey.Response, error) {
		assert.NotNil(t, ctx.Value(startedKey{}), "the function runs in the Starter's context")
		tx, _ := txn.FromContext(ctx)
		tx.ConditionCheck(txnCheck())
		return idemkey.Response{Status: 201}, nil
	})
	var permanent *idemkey.PermanentError
	require.ErrorAs(t, err, &permanent, "the staged check names a missing table")
	e := rec.last(t)
	assert.Equal(t, idemkey.OutcomePermanent, e.Outcome)
	assert.NotEmpty(t, e.Class, "missing-table, or invalid-write where DynamoDB says so")
	assert.Equal(t, permanent.Class, e.Class)
	assert.Equal(t, err, e.Err)
	assert.Equal(t, 1, e.StagedActions)
	assert.Equal(t, idemkey.PhaseClaim|idemkey.PhaseRun|idemkey.PhaseCommit, e.Phases)

	_, err = g.Do(ctx, req("k2"), ok("first"))
	require.NoError(t, err)
	e = rec.last(t)
	assert.Equal(t, idemkey.OutcomeExecutedStored, e.Outcome)
	assert.Equal(t, idemkey.ClaimFirst, e.Mode)
	assert.Equal(t, "test", e.FrontDoor)
	assert.Equal(t, "Invoke", e.Method)
	assert.Equal(t, "fn", e.Path)
	assert.Equal(t, 2, e.StoreCalls, "claim and commit")
	assert.Equal(t, 200, e.Status)
	assert.Len(t, e.KeyHash(), 16)
	assert.NotContains(t, e.KeyHash(), "k2")
	assert.GreaterOrEqual(t, e.Duration, e.Claim+e.Run+e.Commit)

	_, err = g.Do(idemkey.WithFrontDoor(ctx, "door"), req("k2"), ok("second"))
	require.NoError(t, err)
	e = rec.last(t)
	assert.Equal(t, idemkey.OutcomeReplay, e.Outcome)
	assert.Equal(t, "door", e.FrontDoor, "the context's front door wins")
	assert.Equal(t, 1, e.StoreCalls)
	assert.Equal(t, idemkey.PhaseClaim, e.Phases)
	assert.Equal(t, []string{"claim-first test", "claim-first test", "claim-first door"}, rec.started)
}

// A panicking function's request is reported released, with an error,
// before the panic goes on.
func TestDoReportsAPanickingFunction(t *testing.T) {
	rec := &recorder{}
	g := newGuard(t, func(o *idemkey.Options) { o.Observer = rec })
	assert.PanicsWithValue(t, "boom", func() {
		_, _ = g.Do(context.Background(), req("p"), func(context.Context) (idemkey.Response, error) { panic("boom") })
	})
	e := rec.last(t)
	assert.Equal(t, idemkey.OutcomeExecutedReleased, e.Outcome)
	assert.Error(t, e.Err)
	assert.Equal(t, 2, e.StoreCalls, "claim and release")
}

// A function's own error is reported as a released execution carrying it.
func TestDoReportsAFunctionErrorAsReleased(t *testing.T) {
	rec := &recorder{}
	g := newGuard(t, func(o *idemkey.Options) { o.Observer = rec })
	refused := errors.New("refused")
	_, err := g.Do(context.Background(), req("f"), func(context.Context) (idemkey.Response, error) { return idemkey.Response{}, refused })
	require.ErrorIs(t, err, refused)
	e := rec.last(t)
	assert.Equal(t, idemkey.OutcomeExecutedReleased, e.Outcome)
	assert.ErrorIs(t, e.Err, refused)
}

// OneTrip's events name the mode, and its commit holds the claim.
func TestOneTripEventsNameTheirMode(t *testing.T) {
	rec := &recorder{}
	g := newGuard(t, func(o *idemkey.Options) { o.Observer, o.Mode = rec, idemkey.OneTrip })
	_, err := g.Do(context.Background(), req("o"), ok("x"))
	require.NoError(t, err)
	e := rec.last(t)
	assert.Equal(t, idemkey.OneTrip, e.Mode)
	assert.Equal(t, idemkey.OutcomeExecutedStored, e.Outcome)
	assert.Equal(t, idemkey.PhaseRun|idemkey.PhaseCommit, e.Phases)
	assert.Equal(t, 1, e.StoreCalls)
}

// CommitUnkeyed reports an event only when it has writes to commit.
func TestCommitUnkeyedReportsOnlyWrites(t *testing.T) {
	rec := &recorder{}
	g := newGuard(t, func(o *idemkey.Options) { o.Observer = rec })
	ctx := context.Background()
	require.NoError(t, g.CommitUnkeyed(ctx, txn.New(), idemkey.Response{Status: 200}))
	assert.Empty(t, rec.events)
	tx := txn.New()
	tx.ConditionCheck(txnCheck())
	require.Error(t, g.CommitUnkeyed(ctx, tx, idemkey.Response{Status: 200}))
	e := rec.last(t)
	assert.Equal(t, idemkey.Unkeyed, e.Mode)
	assert.Equal(t, idemkey.OutcomePermanent, e.Outcome)
	assert.Equal(t, idemkey.PhaseCommit, e.Phases)
	assert.Equal(t, 1, e.StoreCalls)
}

// Observers passes each event to every observer, and starts the Starters
// among them.
func TestObserversPassesEveryEventToEach(t *testing.T) {
	a, b := &recorder{}, &recorder{}
	var plain []idemkey.Outcome
	obs := idemkey.Observers(a, nil, idemkey.ObserverFunc(func(_ context.Context, e idemkey.Event) { plain = append(plain, e.Outcome) }), b)
	g := newGuard(t, func(o *idemkey.Options) { o.Observer = obs })
	_, err := g.Do(context.Background(), req("m"), ok("x"))
	require.NoError(t, err)
	assert.Len(t, a.events, 1)
	assert.Len(t, b.events, 1)
	assert.Equal(t, []idemkey.Outcome{idemkey.OutcomeExecutedStored}, plain)
}

func TestOutcomeOfNamesEveryErrorOfTheProtocol(t *testing.T) {
	for err, want := range map[error]idemkey.Outcome{
		&idemkey.InFlightError{}:                                      idemkey.OutcomeInFlight,
		idemkey.ErrMismatch:                                           idemkey.OutcomeMismatch,
		idemkey.ErrLockLost:                                           idemkey.OutcomeLockLost,
		&idemkey.UnavailableError{Err: errors.New("x")}:               idemkey.OutcomeUnavailable,
		&idemkey.PermanentError{Class: dynamostore.ClassAccessDenied}: idemkey.OutcomePermanent,
		&txn.ConditionFailedError{}:                                   idemkey.OutcomeEffectConditionFailed,
		dynamostore.ErrInvalidRequest:                                 idemkey.OutcomeInvalid,
		dynamostore.ErrCorruptRecord:                                  idemkey.OutcomeCorruptRecord,
		idemkey.ErrUnkeyedUnsupported:                                 idemkey.OutcomeError,
	} {
		got, class := idemkey.OutcomeOf(err)
		assert.Equal(t, want, got, "%v", err)
		if want == idemkey.OutcomePermanent {
			assert.Equal(t, dynamostore.ClassAccessDenied, class)
		}
	}
	got, _ := idemkey.OutcomeOf(nil)
	assert.Empty(t, got)
}

// txnCheck is a staged check on a table that does not exist.
func txnCheck() types.ConditionCheck {
	return types.ConditionCheck{TableName: aws.String("absent-" + rand.Text()), ConditionExpression: aws.String("attribute_exists(id)"),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "x"}}}
}
