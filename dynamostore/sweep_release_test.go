package dynamostore_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
)

func forceInProgress(o *dynamostore.ReleaseKeyOptions) { o.InProgress = true }
func forceCompleted(o *dynamostore.ReleaseKeyOptions)  { o.Completed = true }

func TestReleaseKeyDeletesAStuckKeySoTheNextRequestExecutes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	s := e.store(nil)
	c, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	e.clock.Advance(dynamostore.DefaultLease + time.Millisecond)

	rec, err := s.ReleaseKey(ctx, "tenant-a", "k1")
	require.NoError(t, err)
	assert.Equal(t, c.Record.LockToken, rec.LockToken)
	_, err = s.Get(ctx, "tenant-a", "k1")
	require.ErrorIs(t, err, dynamostore.ErrNotFound)
	again, err := s.Claim(ctx, request("k1", "b"))
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Acquired, again.Result)
}

func TestReleaseKeyRefusesAHeldLockUnlessForced(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	s := e.store(nil)
	c, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)

	rec, err := s.ReleaseKey(ctx, "tenant-a", "k1")
	require.ErrorIs(t, err, dynamostore.ErrLockHeld)
	assert.Equal(t, c.Record.LockToken, rec.LockToken, "the record left in place comes with the refusal")
	_, err = s.ReleaseKey(ctx, "tenant-a", "k1", forceCompleted)
	require.ErrorIs(t, err, dynamostore.ErrLockHeld, "Completed does not cover a held lock")
	_, err = s.Get(ctx, "tenant-a", "k1")
	require.NoError(t, err)

	_, err = s.ReleaseKey(ctx, "tenant-a", "k1", forceInProgress)
	require.NoError(t, err)
	_, err = s.Get(ctx, "tenant-a", "k1")
	require.ErrorIs(t, err, dynamostore.ErrNotFound)
	_, err = s.Commit(ctx, c, created, nil)
	require.ErrorIs(t, err, dynamostore.ErrLockLost, "the released request can no longer commit")
}

func TestReleaseKeyRefusesACompletedKeyUnlessForcedToDuplicate(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	s := e.store(nil)
	c, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	_, err = s.Commit(ctx, c, created, nil)
	require.NoError(t, err)

	rec, err := s.ReleaseKey(ctx, "tenant-a", "k1", forceInProgress)
	require.ErrorIs(t, err, dynamostore.ErrKeyCompleted)
	assert.Equal(t, dynamostore.StateCompleted, rec.State)
	_, err = s.Get(ctx, "tenant-a", "k1")
	require.NoError(t, err)

	rec, err = s.ReleaseKey(ctx, "tenant-a", "k1", forceCompleted)
	require.NoError(t, err)
	assert.Equal(t, 201, rec.Response.Status)
	_, err = s.Get(ctx, "tenant-a", "k1")
	require.ErrorIs(t, err, dynamostore.ErrNotFound)
}

func TestReleaseKeyOfAnAbsentOrExpiredKeyIsNotFound(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	s := e.store(nil)
	_, err := s.ReleaseKey(ctx, "tenant-a", "never")
	require.ErrorIs(t, err, dynamostore.ErrNotFound)

	_, err = s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	e.clock.Advance(dynamostore.DefaultLease + dynamostore.DefaultRetention + time.Second)
	_, err = s.ReleaseKey(ctx, "tenant-a", "k1", forceInProgress, forceCompleted)
	require.ErrorIs(t, err, dynamostore.ErrNotFound)
}

// completeFirst completes a claim just before the first DeleteItem it
// passes on.
type completeFirst struct {
	dynamostore.Client
	complete func()
}

func (c *completeFirst) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if c.complete != nil {
		c.complete()
		c.complete = nil
	}
	return c.Client.DeleteItem(ctx, in, optFns...)
}

func TestReleaseKeyLeavesARecordThatChangedAfterItsRead(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	owner := e.store(nil)
	c, err := owner.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	e.clock.Advance(dynamostore.DefaultLease + time.Millisecond) // stuck, but its owner is only slow

	var completeErr error
	client := &completeFirst{Client: e.client, complete: func() { _, completeErr = owner.Commit(ctx, c, created, nil) }}
	_, err = e.store(client).ReleaseKey(ctx, "tenant-a", "k1")
	require.ErrorIs(t, err, dynamostore.ErrLockLost)
	require.NoError(t, completeErr)
	rec, err := owner.Get(ctx, "tenant-a", "k1")
	require.NoError(t, err)
	assert.Equal(t, dynamostore.StateCompleted, rec.State)
}

func TestReleaseKeyWhoseDeleteWasAppliedBeforeItsAnswerWasLostReturnsTheRecord(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	client, lost := e.losingAnswers("DeleteItem", 1)
	s := e.store(client)
	c, err := s.Claim(ctx, request("k1", "a"))
	require.NoError(t, err)
	e.clock.Advance(dynamostore.DefaultLease + time.Millisecond)

	rec, err := s.ReleaseKey(ctx, "tenant-a", "k1")
	require.Equal(t, 1, lost.Lost(), "the delete's answer was not lost")
	require.NoError(t, err, "the SDK's retry found the record its first attempt had deleted gone")
	assert.Equal(t, c.Record.LockToken, rec.LockToken)
	_, err = s.Get(ctx, "tenant-a", "k1")
	require.ErrorIs(t, err, dynamostore.ErrNotFound)
}

// With ReleaseKeyOptions.Region, ReleaseKey deletes only a record of that
// region or of none, from the one read whose lock token fences the
// delete; another region's record is left, with ErrOtherRegion.
func TestReleaseKeyWithRegionLeavesAnotherRegionsRecord(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	lease := func(o *dynamostore.Options) { o.Lease = time.Minute }
	for key, region := range map[string]string{"theirs": "b", "mine": "a", "nobodys": ""} {
		_, err := e.store(nil, lease, func(o *dynamostore.Options) { o.Region = region }).Claim(ctx, request(key, "x"))
		require.NoError(t, err)
	}
	e.clock.Advance(2 * time.Minute) // every lock expired: stuck
	st := e.store(nil)
	inA := func(o *dynamostore.ReleaseKeyOptions) { o.Region = "a" }

	rec, err := st.ReleaseKey(ctx, "tenant-a", "theirs", inA)
	require.ErrorIs(t, err, dynamostore.ErrOtherRegion)
	assert.Equal(t, "b", rec.Region)
	_, err = st.Get(ctx, "tenant-a", "theirs")
	assert.NoError(t, err, "left in place")

	for _, key := range []string{"mine", "nobodys"} {
		_, err := st.ReleaseKey(ctx, "tenant-a", key, inA)
		require.NoError(t, err, key)
		_, err = st.Get(ctx, "tenant-a", key)
		assert.ErrorIs(t, err, dynamostore.ErrNotFound, key)
	}
	_, err = st.ReleaseKey(ctx, "tenant-a", "theirs")
	assert.NoError(t, err, "without Region any record goes")
}
