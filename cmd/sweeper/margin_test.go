package main

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/deploytest"
)

// slowCalls advances the clock as DynamoDB latency would: per Scan and per
// DeleteItem.
type slowCalls struct {
	dynamostore.SweepClient
	clock        *ddbtest.Clock
	scan, delete time.Duration
}

func (c *slowCalls) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	out, err := c.SweepClient.Scan(ctx, in, o...)
	c.clock.Advance(c.scan)
	return out, err
}

func (c *slowCalls) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	out, err := c.SweepClient.DeleteItem(ctx, in, o...)
	c.clock.Advance(c.delete)
	return out, err
}

// The template's sweeper finishes every page it starts, its deletes sent
// one at a time: with its MARGIN, PAGE_SIZE and RATE, pages of deletes at
// 50 ms each (slow, as under throttling and SDK retries) end before the
// invocation's deadline, so the cursor is saved and the metrics written
// before Lambda would stop the function. With 60 s left here.
func TestTheTemplatesMarginCoversAPageOfSlowDeletes(t *testing.T) {
	fx := newFixture(t)
	now := fx.clock.Now()
	s := dynamostore.New(fx.ep.Client, fx.table, func(o *dynamostore.Options) {
		o.Now, o.Lease, o.Retention = func() time.Time { return now.Add(-3 * time.Hour) }, time.Minute, time.Hour
	})
	for i := range 4000 {
		c, err := s.Claim(context.Background(), dynamostore.Request{Scope: "t", Key: "k" + strconv.Itoa(i), Method: "POST", Path: "/p", Fingerprint: []byte("0123456789abcdef0123456789abcdef")})
		require.NoError(t, err)
		_, err = s.Commit(context.Background(), c, dynamostore.Response{Status: 201}, nil)
		require.NoError(t, err)
	}
	client := &slowCalls{SweepClient: fx.ep.Client, clock: fx.clock, scan: 200 * time.Millisecond, delete: 50 * time.Millisecond}
	vars, err := deploytest.ForTest(t, nil).Environment(context.Background(), "SweeperFunction")
	require.NoError(t, err)
	// One segment: this clock adds up every call's latency, as if they
	// were sent one after another.
	vars["KEY_TABLE"], vars["SEGMENTS"] = fx.table, "1"
	cfg, err := configFromEnv(deploytest.NewEnv(vars).Getenv)
	require.NoError(t, err)
	f := fx.function(client, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := fx.clock.Now()
	r, err := f.handle(ctx, event(t))
	require.NoError(t, err)
	assert.Positive(t, r.Evicted)
	assert.False(t, r.Finished, "stopped by the deadline's margin, with pages left")
	assert.Less(t, fx.clock.Now().Sub(start), 60*time.Second, "the invocation ends before its deadline, its last page of deletes included")
}
