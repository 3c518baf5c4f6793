package multiregion_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/multiregion"
	"github.com/idemkey/idemkey/txn"
)

// stallingStore is a Store whose next commit stalls until released: a
// request paused past its lease after executing (a GC pause, a slow
// dependency, a frozen container), whose commit then resumes.
type stallingStore struct {
	*multiregion.Store
	stall   atomic.Bool
	started chan struct{}
	resume  chan struct{}
}

func (s *stallingStore) Commit(ctx context.Context, c *dynamostore.Claim, resp idemkey.Response, tx *txn.Tx) (*dynamostore.Record, error) {
	if s.stall.CompareAndSwap(true, false) {
		s.started <- struct{}{}
		<-s.resume
	}
	return s.Store.Commit(ctx, c, resp, tx)
}

// stallingService is a service over a stallingStore.
type stallingService struct {
	*service
	store *stallingStore
}

func newStallingService(t *testing.T, router *multiregion.Store) *stallingService {
	st := &stallingStore{Store: router, started: make(chan struct{}), resume: make(chan struct{})}
	return &stallingService{service: newService(t, st), store: st}
}

// postStalled sends a request whose commit stalls and returns once it has;
// the returned function resumes it and returns its reply.
func (s *stallingService) postStalled(key, body string) func() reply {
	s.store.stall.Store(true)
	done := make(chan reply, 1)
	go func() { done <- s.post(key, body) }()
	<-s.store.started
	return func() reply {
		close(s.store.resume)
		return <-done
	}
}

// A request claimed in failover region B stalls past its lease; the home
// region A is back and a retry executes there. Before executing, the home
// claim retires B's abandoned claim in B, so the stalled request's commit,
// fenced by its lock token, lands nothing: one execution's effects.
func TestHomeExecutionRetiresAnAbandonedFailoverClaimSoItsOwnerCannotCommit(t *testing.T) {
	w := newWorld(t, time.Second, false)
	router := w.router(failoverMode)
	svc := newStallingService(t, router)
	home := "eu-west-1"
	key := keyHomedIn(t, home)
	failover := router.Order(tenant, key)[1]

	w.cluster.CutOff(home)
	resume := svc.postStalled(key, `{"amount":3}`)
	w.cluster.Restore(home)
	w.advance(2 * time.Minute) // past the claim's one-minute lease

	retry := svc.post(key, `{"amount":3}`)
	require.Equal(t, http.StatusCreated, retry.status, retry.body)
	assert.Empty(t, retry.header.Get(handler.ReplayedHeader))
	assert.Equal(t, int64(1), w.counters.Count(multiregion.EventRetired))

	zombie := resume()
	assert.NotEqual(t, http.StatusCreated, zombie.status, "the stalled request's commit is fenced off: %s", zombie.body)
	w.advance(2 * time.Second)
	for _, r := range three {
		assert.Len(t, w.effects(r, key), 1, "one execution's effects in %s", r)
	}
	_, err := w.store(failover).Get(context.Background(), tenant+"\x00failover@"+failover, key)
	assert.Error(t, err, "the abandoned failover record is gone")

	rep, err := router.Reconcile(context.Background())
	require.NoError(t, err)
	assert.Empty(t, rep.TwoRegion)
	replay := svc.post(key, `{"amount":3}`)
	assert.Equal(t, retry.body, replay.body)
	assert.Equal(t, "true", replay.header.Get(handler.ReplayedHeader))
}

// A down: the key executes in failover region B and replicates to A; then
// B becomes unreachable. Get, with nothing in the home record, reads A's
// replica of B's failover record instead of answering not found (issue 27,
// finding 4); the retry at A decides from it: a replay, promoted into the
// home record.
func TestHomeReadAndRetryDecideFromTheReplicatedFailoverRecordWhenItsRegionIsUnreachable(t *testing.T) {
	w := newWorld(t, time.Second, false)
	router := w.router(failoverMode)
	svc := newService(t, router)
	home := "eu-west-1"
	key := keyHomedIn(t, home)
	failover := router.Order(tenant, key)[1]

	w.cluster.CutOff(home)
	first := svc.post(key, `{"amount":4}`)
	require.Equal(t, http.StatusCreated, first.status, first.body)
	w.cluster.Restore(home)
	w.advance(2 * time.Second) // B's failover record reaches A
	w.cluster.CutOff(failover)

	got, err := router.Get(context.Background(), tenant, key)
	require.NoError(t, err, "the home's replica holds B's failover record")
	assert.Equal(t, dynamostore.StateCompleted, got.State)
	assert.Equal(t, failover, got.Region, "the execution ran in B")
	assert.Equal(t, tenant, got.Scope)
	require.NotNil(t, got.Response)
	assert.Equal(t, first.body, string(got.Response.Body))

	retry := svc.post(key, `{"amount":4}`)
	assert.Equal(t, http.StatusCreated, retry.status, retry.body)
	assert.Equal(t, "true", retry.header.Get(handler.ReplayedHeader))
	assert.Equal(t, first.body, retry.body)
	assert.Equal(t, int64(1), svc.executed.Load(), "no second execution")
	assert.Equal(t, int64(1), w.counters.Count(multiregion.EventFenceFromReplica))
	assert.Equal(t, int64(1), w.counters.Count(multiregion.EventPromoted))

	w.cluster.Restore(failover)
	w.advance(2 * time.Second)
	for _, r := range three {
		assert.Len(t, w.effects(r, key), 1, "region %s", r)
	}
	rep, err := router.Reconcile(context.Background())
	require.NoError(t, err)
	assert.Empty(t, rep.TwoRegion)
}

// When the writer of a failover record is unreachable and the home
// replica shows it abandoned, it cannot be retired: the home claim fails
// closed (503), and executes once the writer is back and the claim retired.
func TestHomeRetryFailsClosedWhenAnAbandonedFailoverClaimCannotBeRetired(t *testing.T) {
	w := newWorld(t, time.Second, false)
	router := w.router(failoverMode)
	svc := newStallingService(t, router)
	home := "eu-west-1"
	key := keyHomedIn(t, home)
	failover := router.Order(tenant, key)[1]

	w.cluster.CutOff(home)
	resume := svc.postStalled(key, `{"amount":6}`)
	w.cluster.Restore(home)
	w.advance(2 * time.Minute) // replicated to A, and past the lease
	w.cluster.CutOff(failover)

	closed := svc.post(key, `{"amount":6}`)
	assert.Equal(t, http.StatusServiceUnavailable, closed.status, closed.body)
	assert.Equal(t, int64(1), svc.executed.Load(), "only the stalled execution ran")

	w.cluster.Restore(failover)
	retry := svc.post(key, `{"amount":6}`)
	require.Equal(t, http.StatusCreated, retry.status, retry.body)
	assert.Equal(t, int64(1), w.counters.Count(multiregion.EventRetired))
	assert.NotEqual(t, http.StatusCreated, resume().status)
	w.advance(2 * time.Second)
	for _, r := range three {
		assert.Len(t, w.effects(r, key), 1, "region %s", r)
	}
}
