package lambda_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	idemlambda "github.com/idemkey/idemkey/lambda"
)

// batchOf builds an SQS batch from the sample event's record: one record
// per id, each with its own messageId and body (the sample has one
// record), delivered for the given time (ApproximateReceiveCount and the
// receipt handle change between deliveries).
func batchOf(t *testing.T, delivery int, arn string, ids ...string) events.SQSEvent {
	t.Helper()
	var ev events.SQSEvent
	require.NoError(t, json.Unmarshal(sample(t, "sqs-event.json"), &ev))
	require.Len(t, ev.Records, 1)
	proto := ev.Records[0]
	var out events.SQSEvent
	for _, id := range ids {
		r := proto
		r.MessageId = id
		r.Body = `{"order":"` + id + `"}`
		r.ReceiptHandle = fmt.Sprintf("handle-%s-%d", id, delivery)
		r.Attributes = map[string]string{"ApproximateReceiveCount": fmt.Sprint(delivery)}
		if arn != "" {
			r.EventSourceARN = arn
		}
		out.Records = append(out.Records, r)
	}
	return out
}

// consumer processes messages: it stages one effect per execution, fails
// the ids in fail once each, and holds ids starting with "block-".
type consumer struct {
	env     *env
	mu      sync.Mutex
	runs    map[string]int
	fail    map[string]bool
	entered chan string
	release chan struct{}
}

func newConsumer(e *env, fail ...string) *consumer {
	c := &consumer{env: e, runs: map[string]int{}, fail: map[string]bool{}, entered: make(chan string, 4), release: make(chan struct{})}
	for _, id := range fail {
		c.fail[id] = true
	}
	return c
}

func (c *consumer) handle(ctx context.Context, m events.SQSMessage) error {
	if strings.HasPrefix(m.MessageId, "block-") {
		c.entered <- m.MessageId
		<-c.release
	}
	c.mu.Lock()
	c.runs[m.MessageId]++
	n := c.runs[m.MessageId]
	failNow := c.fail[m.MessageId]
	delete(c.fail, m.MessageId)
	c.mu.Unlock()
	if err := c.env.stage(ctx, fmt.Sprintf("%s#%d", m.MessageId, n), m.MessageId); err != nil {
		return err
	}
	if failNow {
		return errors.New("downstream unavailable")
	}
	return nil
}

func (c *consumer) runsOf(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[id]
}

// ordersQueue names the consumer; with the default key, the message id,
// one shared scope is safe.
func ordersQueue(o *idemlambda.FuncOptions[events.SQSMessage]) {
	o.Name = "orders-queue"
	o.SingleCaller = true
}

func failures(resp events.SQSEventResponse) []string {
	ids := []string{}
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

func TestSQSBatchProcessesEachMessageOnceAcrossRedeliveries(t *testing.T) {
	e := newEnv(t)
	c := newConsumer(e, "m2")
	batch := idemlambda.SQSBatch(e.store, c.handle, ordersQueue)
	ctx := context.Background()

	resp, err := batch(ctx, batchOf(t, 1, "", "m1", "m2", "m3"))
	require.NoError(t, err)
	assert.Equal(t, []string{"m2"}, failures(resp))
	assert.Equal(t, 0, e.effectsFor("m2"), "a failed record writes nothing")

	// SQS redelivers the whole batch (a timeout, or no partial batch
	// response): only m2 runs again.
	resp, err = batch(ctx, batchOf(t, 2, "", "m1", "m2", "m3"))
	require.NoError(t, err)
	assert.Empty(t, failures(resp))
	assert.Equal(t, 1, c.runsOf("m1"))
	assert.Equal(t, 2, c.runsOf("m2"))
	assert.Equal(t, 1, c.runsOf("m3"))
	for _, id := range []string{"m1", "m2", "m3"} {
		assert.Equal(t, 1, e.effectsFor(id), id)
	}
}

func TestSQSBatchReportsARecordInFlightElsewhereAsFailed(t *testing.T) {
	e := newEnv(t)
	c := newConsumer(e)
	batch := idemlambda.SQSBatch(e.store, c.handle, ordersQueue)
	ctx := context.Background()
	first := make(chan events.SQSEventResponse, 1)
	go func() { resp, _ := batch(ctx, batchOf(t, 1, "", "block-1")); first <- resp }()
	await(t, c.entered, first)

	resp, err := batch(ctx, batchOf(t, 2, "", "block-1", "m5"))
	require.NoError(t, err)
	assert.Equal(t, []string{"block-1"}, failures(resp))
	assert.Equal(t, 1, c.runsOf("m5"))

	close(c.release)
	assert.Empty(t, failures(<-first))
	assert.Equal(t, 1, c.runsOf("block-1"))
}

func TestSQSBatchReportsAMessageIdReusedWithAnotherBodyAsFailed(t *testing.T) {
	e := newEnv(t)
	c := newConsumer(e)
	batch := idemlambda.SQSBatch(e.store, c.handle, ordersQueue)
	ctx := context.Background()
	_, err := batch(ctx, batchOf(t, 1, "", "m6"))
	require.NoError(t, err)
	other := batchOf(t, 2, "", "m6")
	other.Records[0].Body = `{"order":"something else"}`
	resp, err := batch(ctx, other)
	require.NoError(t, err)
	assert.Equal(t, []string{"m6"}, failures(resp))
	assert.Equal(t, 1, c.runsOf("m6"))
}

func TestSQSBatchOnAFIFOQueueStopsAtTheFirstFailure(t *testing.T) {
	e := newEnv(t)
	c := newConsumer(e, "f2")
	batch := idemlambda.SQSBatch(e.store, c.handle, ordersQueue)
	arn := "arn:aws:sqs:us-west-2:123456789012:orders.fifo"
	resp, err := batch(context.Background(), batchOf(t, 1, arn, "f1", "f2", "f3", "f4"))
	require.NoError(t, err)
	assert.Equal(t, []string{"f2", "f3", "f4"}, failures(resp))
	assert.Equal(t, 1, c.runsOf("f1"))
	assert.Equal(t, 0, c.runsOf("f3"), "records after the failure are not processed")
	assert.Equal(t, 0, c.runsOf("f4"))
}

func TestSQSBatchKeyCanComeFromTheBody(t *testing.T) {
	e := newEnv(t)
	c := newConsumer(e)
	batch := idemlambda.SQSBatch(e.store, c.handle, ordersQueue, func(o *idemlambda.FuncOptions[events.SQSMessage]) {
		o.Key = func(m events.SQSMessage) (string, error) {
			var body struct{ Order string }
			if err := json.Unmarshal([]byte(m.Body), &body); err != nil {
				return "", err
			}
			return body.Order, nil
		}
	})
	// The producer sent one order twice: two messages, one body.
	twice := batchOf(t, 1, "", "m7", "m8")
	twice.Records[1].Body = twice.Records[0].Body
	resp, err := batch(context.Background(), twice)
	require.NoError(t, err)
	assert.Empty(t, failures(resp))
	assert.Equal(t, 1, c.runsOf("m7"))
	assert.Equal(t, 0, c.runsOf("m8"), "the second message replays the first")
}
