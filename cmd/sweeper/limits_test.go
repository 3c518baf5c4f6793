package main

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/internal/deploytest"
	"github.com/idemkey/idemkey/localstack"
)

func limitsFixture(t *testing.T) *fixture {
	t.Helper()
	fx := &fixture{ep: localstack.ForTest(t, func(o *localstack.Options) { o.Embedded = true }),
		table: localstack.TableName("limits"), clock: ddbtest.NewClock(time.Date(2027, 1, 15, 8, 0, 0, 0, time.UTC))}
	require.NoError(t, dynamostore.EnsureTable(context.Background(), fx.ep.Client, fx.table, 0))
	ddbtest.DeleteOnCleanup(t, fx.ep.Client, fx.table)
	return fx
}

func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// RATE and READ_RATE must be finite: NaN is neither a limit, nor "no
// limit" (negative), nor the default (0), and limited nothing.
func TestConfigRefusesARateThatIsNotAFiniteNumber(t *testing.T) {
	for _, name := range []string{"RATE", "READ_RATE"} {
		for _, v := range []string{"NaN", "Inf", "-Inf"} {
			_, err := configFromEnv(envOf(map[string]string{"KEY_TABLE": "keys", name: v}))
			assert.ErrorContains(t, err, "must be a finite number", "%s=%s", name, v)
		}
	}
}

// However small, a positive RATE limits the sweep: a wait longer than a
// time.Duration holds (balance/rate seconds past 292 years) saturates
// instead of wrapping to a negative wait, which limited nothing.
func TestASmallRateStillLimitsTheSweep(t *testing.T) {
	for _, rate := range []string{"0.001", "1e-12"} {
		t.Run(rate, func(t *testing.T) {
			fx := limitsFixture(t)
			fx.seed(t)
			cfg, err := configFromEnv(envOf(map[string]string{"KEY_TABLE": fx.table, "RATE": rate, "PAGE_SIZE": "1", "SEGMENTS": "1", "DRY_RUN": "true"}))
			require.NoError(t, err, "RATE=%s is accepted", rate)
			f := fx.function(nil, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r, err := f.handle(ctx, event(t))
			require.NoError(t, err)
			t.Logf("RATE=%s: pages %d scanned %d finished %v stoppedBy %q", rate, r.Pages, r.Scanned, r.Finished, r.StoppedBy)
			assert.LessOrEqual(t, r.Pages, int64(2), "RATE=%s items/s with a one-item burst allows two one-item pages before the deadline", rate)
			assert.False(t, r.Finished)
		})
	}
}

// In index mode the sweeper never scans: the template grants it exactly the
// calls it makes over several invocations (a cursor saved, then deleted),
// as IAM holds the policy in the SweepMode=index stack on moto.
func TestIndexModeTemplateGrantsExactlyTheCallsItMakes(t *testing.T) {
	stack := deploytest.ForTest(t, map[string]string{"SweepMode": "index"})
	fx := limitsFixture(t)
	require.NoError(t, dynamostore.EnsureExpiryIndex(context.Background(), fx.ep.Client, fx.table, dynamostore.KeySchema{}, 0))
	fx.indexed = true
	fx.seed(t)
	perms := ddbtest.NewPermissions()
	client := &slowQueries{SweepClient: fx.ep.NewClient(perms.Install), clock: fx.clock, step: 30 * time.Second}
	f := fx.function(client, settings{Mode: dynamostore.SweepIndex, Segments: 1, PageSize: 5, Margin: 5 * time.Second})
	client.step = 10 * time.Second
	unfinished, finished := 0, false
	for range 60 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		r, err := f.handle(ctx, event(t))
		cancel()
		require.NoError(t, err)
		if finished = r.Finished; finished {
			break
		}
		unfinished++
	}
	require.True(t, finished)
	require.Positive(t, unfinished)
	granted, err := stack.Grants(context.Background(), "SweeperFunction")
	require.NoError(t, err)
	assert.Len(t, granted, 1, "the sweeper is granted on the key table only")
	used := perms.Actions(fx.table)
	t.Logf("granted %v\nused    %v", granted["KeyTable"], used)
	require.Contains(t, used, "dynamodb:PutItem", "the first run saved its cursor")
	assert.Equal(t, used, granted["KeyTable"], "least privilege: index mode is granted what it calls")
}

// slowQueries advances the clock after every Query, so that an
// index-mode run stops at its deadline and saves a cursor.
type slowQueries struct {
	dynamostore.SweepClient
	clock *ddbtest.Clock
	step  time.Duration
}

func (c *slowQueries) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := c.SweepClient.Query(ctx, in, optFns...)
	c.clock.Advance(c.step)
	return out, err
}
