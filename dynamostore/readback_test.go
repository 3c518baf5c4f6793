package dynamostore_test

import (
	"context"
	"fmt"
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
	"github.com/idemkey/idemkey/internal/keyschema"
)

// What a store writes, it can read back: these tests hold the writing side
// to the bounds the record's reader holds stored items to.

func TestCommitRefusesAResponseItsRecordCouldNotBeReadBackWith(t *testing.T) {
	e := newEnv(t)
	s := e.store(nil)
	ctx := context.Background()
	bad := map[string]dynamostore.Response{
		"status 0":             {Body: []byte("ok")},
		"status 42":            {Status: 42},
		"status 1000":          {Status: 1000},
		"status -1":            {Status: -1},
		"BodyOmitted -1":       {Status: 200, BodyOmitted: -1},
		"BodyOmitted past TiB": {Status: 200, BodyOmitted: 1 << 41},
	}
	i := 0
	for name, resp := range bad {
		i++
		req := request(fmt.Sprint("bad-", i), "a")
		c, err := s.Claim(ctx, req)
		require.NoError(t, err)
		e.calls.Reset()
		_, err = s.Commit(ctx, c, resp, nil)
		assert.ErrorIs(t, err, dynamostore.ErrInvalidRequest, "%s: Commit", name)
		assert.Zero(t, e.calls.Total(), "%s: Commit refuses without calling DynamoDB", name)
		held, err := s.Claim(ctx, req)
		require.NoError(t, err)
		assert.Equal(t, dynamostore.InFlight, held.Result, "%s: the claim stays held", name)
		_, err = s.Commit(ctx, c, dynamostore.Response{Status: 201}, nil)
		require.NoError(t, err, "%s: the claim can still commit a response that reads back", name)

		first := request(fmt.Sprint("bad-first-", i), "a")
		_, err = s.CommitFirst(ctx, first, resp, nil)
		assert.ErrorIs(t, err, dynamostore.ErrInvalidRequest, "%s: CommitFirst", name)
		_, err = s.Get(ctx, first.Scope, first.Key)
		assert.ErrorIs(t, err, dynamostore.ErrNotFound, "%s: CommitFirst wrote nothing", name)
	}
}

func TestAHeaderValueThatIsNotUTF8IsReplayedByteForByte(t *testing.T) {
	e := newEnv(t)
	s := e.store(nil)
	ctx := context.Background()
	hdr := http.Header{
		"Content-Disposition": {"attachment; filename=\"caf\xe9.txt\""},
		"X-Mixed":             {"plain", "\xff\xfe", "caf\u00e9"},
	}
	req := request("latin1", "a")
	c, err := s.Claim(ctx, req)
	require.NoError(t, err)
	_, err = s.Commit(ctx, c, dynamostore.Response{Status: 200, Header: hdr, Body: []byte("ok")}, nil)
	require.NoError(t, err)
	again, err := s.Claim(ctx, req)
	require.NoError(t, err)
	require.Equal(t, dynamostore.Replay, again.Result)
	assert.Equal(t, hdr, again.Record.Response.Header, "the replay carries the values' bytes, not U+FFFD")
	got, err := s.Get(ctx, req.Scope, req.Key)
	require.NoError(t, err)
	assert.Equal(t, hdr, got.Response.Header)
}

func TestScopesAndKeysThatAreNotUTF8AreRefused(t *testing.T) {
	e := newEnv(t)
	s := e.store(nil)
	ctx := context.Background()
	// The SDK would send both of these as "order-\uFFFD": one record.
	for _, req := range []dynamostore.Request{
		request("order-\xff", "a"),
		request("order-\xfe", "a"),
		{Scope: "tenant-\xff", Key: "k", Method: "POST", Path: "/p", Fingerprint: fp("a")},
	} {
		e.calls.Reset()
		_, err := s.Claim(ctx, req)
		assert.ErrorIs(t, err, dynamostore.ErrInvalidRequest, "Claim %q/%q", req.Scope, req.Key)
		_, err = s.CommitFirst(ctx, req, dynamostore.Response{Status: 200}, nil)
		assert.ErrorIs(t, err, dynamostore.ErrInvalidRequest, "CommitFirst %q/%q", req.Scope, req.Key)
		assert.Zero(t, e.calls.Total(), "refused before DynamoDB is called")
	}
	c, err := s.Claim(ctx, request("order-\u00e9", "a"))
	require.NoError(t, err, "valid UTF-8 beyond ASCII is a key like any other")
	assert.Equal(t, dynamostore.Acquired, c.Result)
}

func TestGetOfAnExpiredRecordIsAbsentWhateverElseItHolds(t *testing.T) {
	e := newEnv(t)
	s := e.store(nil)
	ctx := context.Background()
	req := request("expired-corrupt", "a")
	c, err := s.Claim(ctx, req)
	require.NoError(t, err)
	rec, err := s.Commit(ctx, c, dynamostore.Response{Status: 200, Body: []byte("ok")}, nil)
	require.NoError(t, err)
	_, err = e.ep.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &e.table,
		Key:                       map[string]types.AttributeValue{dynamostore.PartitionKey: &types.AttributeValueMemberS{Value: keyschema.PartitionKey(req.Scope, req.Key)}},
		UpdateExpression:          aws.String("SET b = :b, z = :gzip"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":b": &types.AttributeValueMemberB{Value: []byte("not gzip")}, ":gzip": &types.AttributeValueMemberS{Value: "gzip"}},
	})
	require.NoError(t, err)
	_, err = s.Get(ctx, req.Scope, req.Key)
	require.ErrorIs(t, err, dynamostore.ErrCorruptRecord, "while live, the corruption is reported")

	e.clock.Advance(rec.Expires.Add(time.Second).Sub(e.clock.Now()))
	_, err = s.Get(ctx, req.Scope, req.Key)
	assert.ErrorIs(t, err, dynamostore.ErrNotFound, "past its exp the record is absent, as a claim finds it")
	again, err := s.Claim(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, dynamostore.Acquired, again.Result)
}

func TestReleaseKeyInTheMillisecondItsLockExpiresFindsTheLockHeld(t *testing.T) {
	e := newEnv(t)
	s := e.store(nil, func(o *dynamostore.Options) { o.Lease = time.Minute })
	ctx := context.Background()
	req := request("lock-edge", "a")
	c, err := s.Claim(ctx, req)
	require.NoError(t, err)
	// Half a millisecond past LockExpires: its millisecond, in which the
	// lock holds for a claim (lock_exp >= now in milliseconds).
	e.clock.Advance(c.Record.LockExpires.Add(500 * time.Microsecond).Sub(e.clock.Now()))
	held, err := s.Claim(ctx, req)
	require.NoError(t, err)
	require.Equal(t, dynamostore.InFlight, held.Result)

	_, err = s.ReleaseKey(ctx, req.Scope, req.Key)
	assert.ErrorIs(t, err, dynamostore.ErrLockHeld)
	cur, err := s.Get(ctx, req.Scope, req.Key)
	require.NoError(t, err)
	assert.Equal(t, c.Record.LockToken, cur.LockToken, "the record is left as it is")

	e.clock.Advance(c.Record.LockExpires.Add(time.Millisecond).Sub(e.clock.Now()))
	_, err = s.ReleaseKey(ctx, req.Scope, req.Key)
	assert.NoError(t, err, "the next millisecond, the lock has expired and the record is reclaimed")
}

func TestNewRefusesARegionNoSweeperCouldEvict(t *testing.T) {
	e := newEnv(t)
	long := strings.Repeat("r", dynamostore.MaxSweepRegionLen+1)
	assert.PanicsWithValue(t,
		fmt.Sprintf("dynamostore: New: Region of %d bytes, more than %d (MaxSweepRegionLen): no Sweeper of that region could evict its records",
			len(long), dynamostore.MaxSweepRegionLen),
		func() { e.store(nil, func(o *dynamostore.Options) { o.Region = long }) })
	assert.Panics(t, func() {
		dynamostore.NewSweeper(e.client, e.table, func(o *dynamostore.SweepOptions) { o.Region = long })
	}, "the sweeper refuses it too")
	assert.NotPanics(t, func() { e.store(nil, func(o *dynamostore.Options) { o.Region = long[1:] }) })
}
