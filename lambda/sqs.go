package lambda

import (
	"context"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkey/idemkey"
)

// SQSBatch returns a function for lambda.Start that handles an SQS batch,
// each record an idempotent unit of its own (see Idempotent): a record
// already processed is not processed again, whichever batch redelivers it.
//
// Defaults, which optFns may override: the key is the record's messageId,
// which SQS keeps across redeliveries of one message (use a key from the
// body to also absorb a producer that sends one operation twice); the
// fingerprint is the record's body, so the receipt handle and attributes
// that change between deliveries do not matter. As for Idempotent,
// optFns must set FuncOptions.Name (the consumer's identity: two consumers
// that share a table never meet) and FuncOptions.Scope, or
// FuncOptions.SingleCaller: with the default key, a message id that SQS
// makes unique per message, one shared scope is safe; with a key from the
// body, it is only when every producer is one caller.
//
// The response lists as batch item failures the records whose processing
// failed: fn's error, a record in flight in another invocation (unless
// FuncOptions.Guard.WaitInFlight makes it wait for that invocation, and
// succeed with it when it completes in time), a key reused with another
// body, an unreachable store. SQS makes them visible
// again after the visibility timeout; the others are deleted. This needs
// ReportBatchItemFailures on the event source mapping; without it, SQS
// ignores the response and deletes the whole batch. On a FIFO queue
// (source ARN ending in ".fifo"), processing stops at the first failure
// and every later record is reported failed too, which keeps each message
// group in order. A panic of fn is re-raised: Lambda then retries the
// whole batch, and the records already processed replay.
//
// Each record's Event names the front door idemkey.FrontDoorLambdaSQS,
// and Metrics writes one line for the whole batch.
//
// It panics if store or fn is nil, and as Idempotent panics for an
// incomplete configuration.
func SQSBatch(store idemkey.Store, fn func(context.Context, events.SQSMessage) error, optFns ...func(*FuncOptions[events.SQSMessage])) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	if fn == nil {
		panic("lambda: SQSBatch needs a function")
	}
	defaults := func(o *FuncOptions[events.SQSMessage]) {
		o.Key = func(m events.SQSMessage) (string, error) { return m.MessageId, nil }
		o.Fingerprint = func(m events.SQSMessage) ([]byte, error) { return []byte(m.Body), nil }
	}
	record := Idempotent(store, func(ctx context.Context, m events.SQSMessage) (struct{}, error) {
		return struct{}{}, fn(ctx, m)
	}, append([]func(*FuncOptions[events.SQSMessage]){defaults}, optFns...)...)

	return func(ctx context.Context, batch events.SQSEvent) (events.SQSEventResponse, error) {
		ctx, end := beginInvocation(idemkey.WithFrontDoor(ctx, idemkey.FrontDoorLambdaSQS))
		defer end()
		var resp events.SQSEventResponse
		failed := false
		for _, m := range batch.Records {
			if failed && strings.HasSuffix(m.EventSourceARN, ".fifo") {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
				continue
			}
			if _, err := record(ctx, m); err != nil {
				failed = true
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			}
		}
		return resp, nil
	}
}
