package lambda_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/internal/emf"
	idemlambda "github.com/idemkey/idemkey/lambda"
)

// emfLines validates and decodes the EMF lines in out.
func emfLines(t *testing.T, out *bytes.Buffer) []map[string]any {
	t.Helper()
	var docs []map[string]any
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		require.NoError(t, emf.Validate(sc.Bytes()), sc.Text())
		var doc map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &doc))
		docs = append(docs, doc)
	}
	return docs
}

func newMetrics(out *bytes.Buffer) *idemlambda.Metrics {
	return idemlambda.NewMetrics(out, func(o *idemlambda.MetricsOptions) {
		o.FunctionName = "consumer"
		o.Now = func() time.Time { return time.UnixMilli(1_800_000_000_000) }
	})
}

// An SQS batch is one invocation: its records' outcomes are counted in one
// EMF line, and a redelivered batch is another line, of replays.
func TestSQSBatchWritesOneEMFLinePerInvocation(t *testing.T) {
	e := newEnv(t)
	var out bytes.Buffer
	metrics := newMetrics(&out)
	c := newConsumer(e, "m2")
	fn := idemlambda.SQSBatch(e.store, c.handle, func(o *idemlambda.FuncOptions[events.SQSMessage]) {
		o.Name, o.SingleCaller, o.Now = "consumer", true, e.clock.Now
		o.Guard.Observer = metrics
	})
	ctx := context.Background()
	resp, err := fn(ctx, batchOf(t, 1, "", "m1", "m2", "m3"))
	require.NoError(t, err)
	require.Len(t, resp.BatchItemFailures, 1)
	docs := emfLines(t, &out)
	require.Len(t, docs, 1, "one line for the batch")
	d := docs[0]
	assert.Equal(t, "consumer", d["FunctionName"])
	assert.Equal(t, idemkey.FrontDoorLambdaSQS, d["FrontDoor"])
	assert.EqualValues(t, 3, d["Requests"])
	assert.EqualValues(t, 2, d["ExecutedStored"])
	assert.EqualValues(t, 1, d["ExecutedReleased"], "the failed record released its key")
	assert.EqualValues(t, 0, d["Replay"], "every outcome is written, zeros included")
	assert.EqualValues(t, 3, d["StagedActions"], "each run staged one write")
	assert.Contains(t, d, "CommitDuration")

	_, err = fn(ctx, batchOf(t, 2, "", "m1", "m2", "m3"))
	require.NoError(t, err)
	docs = emfLines(t, &out)
	require.Len(t, docs, 1, "the redelivery is one more line")
	assert.EqualValues(t, 2, docs[0]["Replay"])
	assert.EqualValues(t, 1, docs[0]["ExecutedStored"], "m2, which failed the first time")
}

// A direct invocation of an Idempotent function is one line, named
// lambda-invoke; an input the function refuses before the protocol (no
// key) writes none.
func TestIdempotentWritesOneEMFLinePerInvocation(t *testing.T) {
	e := newEnv(t)
	var out bytes.Buffer
	fn := idemlambda.Idempotent(e.store, func(ctx context.Context, in map[string]string) (string, error) {
		if in["fail"] != "" {
			return "", errors.New("refused")
		}
		return "ok", nil
	}, func(o *idemlambda.FuncOptions[map[string]string]) {
		o.Name, o.SingleCaller, o.Now = "charge", true, e.clock.Now
		o.Key = func(in map[string]string) (string, error) { return in["id"], nil }
		o.Guard.Observer = newMetrics(&out)
	})
	ctx := context.Background()
	_, err := fn(ctx, map[string]string{"id": "o1"})
	require.NoError(t, err)
	_, err = fn(ctx, map[string]string{"id": ""})
	require.ErrorIs(t, err, idemlambda.ErrNoKey)
	docs := emfLines(t, &out)
	require.Len(t, docs, 1)
	assert.Equal(t, idemkey.FrontDoorLambdaInvoke, docs[0]["FrontDoor"])
	assert.Equal(t, "claim-first", docs[0]["Mode"])
	assert.EqualValues(t, 1, docs[0]["ExecutedStored"])
	assert.EqualValues(t, 2, docs[0]["StoreCalls"], "claim and commit")
}

// Outside an invocation (the middleware under net/http), each request is a
// line of its own.
func TestMetricsOutsideAnInvocationWriteALinePerEvent(t *testing.T) {
	var out bytes.Buffer
	m := newMetrics(&out)
	m.Observe(context.Background(), idemkey.Event{Outcome: idemkey.OutcomeInFlight, Mode: idemkey.ClaimFirst, Phases: idemkey.PhaseClaim})
	m.Observe(context.Background(), idemkey.Event{Outcome: idemkey.OutcomePermanent, Class: "missing-table"})
	docs := emfLines(t, &out)
	require.Len(t, docs, 2)
	assert.EqualValues(t, 1, docs[0]["InFlight"])
	assert.Contains(t, docs[0], "ClaimDuration")
	assert.NotContains(t, docs[0], "CommitDuration", "no commit, no commit duration")
	assert.Equal(t, []any{"missing-table"}, docs[1]["PermanentClasses"])
}

func TestNewMetricsRefusesAnInvalidNamespace(t *testing.T) {
	assert.Panics(t, func() {
		idemlambda.NewMetrics(&bytes.Buffer{}, func(o *idemlambda.MetricsOptions) { o.Namespace = "AWS/Lambda" })
	})
}
