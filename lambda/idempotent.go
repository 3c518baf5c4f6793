package lambda

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/fingerprint"
)

// InvokeMethod is the method recorded with the key records of Idempotent;
// the record's path is FuncOptions.Name.
const InvokeMethod = "INVOKE"

var (
	// ErrNoKey: FuncOptions.Key returned an error or an empty key. Nothing
	// was claimed or run.
	ErrNoKey = errors.New("lambda: no idempotency key for the input")
	// ErrOutputOmitted: the key's first execution completed, but its
	// output was too large to store (over DynamoDB's 400 KB item limit
	// even compressed). It is not executed again, and its output cannot be
	// returned.
	ErrOutputOmitted = errors.New("lambda: the stored output was too large to keep")
	// ErrOutputUndecodable: the stored output does not decode into the
	// function's output type (the type changed since it was stored).
	ErrOutputUndecodable = errors.New("lambda: the stored output does not decode")
)

// FuncOptions configure Idempotent for input type In. Key is required; the
// zero value of every other field selects its default.
type FuncOptions[In any] struct {
	// Key returns the idempotency key of an input: the same for every
	// delivery of one logical operation (an order id, an SQS message id, an
	// EventBridge event id), at most 512 bytes. Required.
	Key func(In) (string, error)
	// Scope returns the scope of an input: keys of different scopes never
	// meet. It gets the invocation's context, where lambdacontext holds the
	// caller's Cognito identity of a direct invoke. Default: "" for every
	// input, one scope; give functions that share a key table distinct
	// scopes (or keys), or their records meet.
	Scope func(context.Context, In) (string, error)
	// Fingerprint returns the bytes the input is compared by: a retry with
	// the same key must have the same fingerprint, or it fails with
	// idemkey.ErrMismatch. JSON is compared in canonical form (member
	// order, whitespace and number spelling do not matter), other bytes as
	// they are. Default: the input's JSON encoding (encoding/json). Select
	// fields here when parts of the input change between deliveries of one
	// operation (a receipt handle, a receive count).
	Fingerprint func(In) ([]byte, error)
	// Name is recorded as the key record's path, for operators (default:
	// the input's Go type, such as "events.SQSMessage").
	Name string
	// LeaseMargin is added to the invocation's remaining time to make the
	// claim's lease (default DefaultLeaseMargin). Without a deadline in
	// the context, the claim takes the store's lease.
	LeaseMargin time.Duration
	// Now is the clock the remaining time is measured with (default
	// time.Now). Tests inject the store's clock.
	Now func() time.Time
	// Guard configures the protocol (retry-after, write timeouts).
	Guard idemkey.Options
}

// Idempotent returns fn guarded by idempotency keys in store. For each
// input it takes the key (Key), the scope (Scope) and the fingerprint
// (Fingerprint), then runs the idemkey protocol:
//
//   - the first invocation with a key runs fn, with a *txn.Tx in its
//     context (txn.FromContext) on which fn stages its DynamoDB writes;
//     they commit together with the key record, which stores fn's output
//     as JSON, and the output is returned;
//   - a later invocation with the same key and fingerprint does not run fn:
//     it returns the stored output, decoded into a new Out (so Out must
//     survive a JSON round trip);
//   - one while the first still runs fails with an error matching
//     idemkey.ErrInFlight (an *idemkey.InFlightError), one with another
//     fingerprint with idemkey.ErrMismatch;
//   - an error of fn is returned as is and releases the key, as does a
//     panic (re-raised), so a retry runs fn again; nothing fn staged is
//     written.
//
// The claim's lease is the invocation's remaining time plus LeaseMargin,
// so the key of an invocation that times out is free for the retry soon
// after the deadline. Other errors: ErrNoKey, the error of Scope or
// Fingerprint, idemkey.ErrUnavailable when DynamoDB cannot be reached (fn
// does not run), ErrOutputOmitted, ErrOutputUndecodable, and the errors of
// idemkey.Guard.Do.
//
// Idempotent panics if store, fn or Key is nil: configuration errors,
// caught at start.
func Idempotent[In, Out any](store idemkey.Store, fn func(context.Context, In) (Out, error), optFns ...func(*FuncOptions[In])) func(context.Context, In) (Out, error) {
	if store == nil || fn == nil {
		panic("lambda: Idempotent needs a store and a function")
	}
	var o FuncOptions[In]
	for _, f := range optFns {
		f(&o)
	}
	if o.Key == nil {
		panic("lambda: Idempotent needs FuncOptions.Key")
	}
	if o.Scope == nil {
		o.Scope = func(context.Context, In) (string, error) { return "", nil }
	}
	if o.Fingerprint == nil {
		o.Fingerprint = func(in In) ([]byte, error) { return json.Marshal(in) }
	}
	if o.Name == "" {
		var in In
		o.Name = fmt.Sprintf("%T", in)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	guard := idemkey.New(store, func(g *idemkey.Options) { *g = o.Guard })

	return func(ctx context.Context, in In) (Out, error) {
		var zero Out
		req, err := o.request(ctx, in)
		if err != nil {
			return zero, err
		}
		var out Out
		res, err := guard.Do(ctx, req, func(ctx context.Context) (idemkey.Response, error) {
			v, err := fn(ctx, in)
			if err != nil {
				return idemkey.Response{}, err
			}
			body, err := json.Marshal(v)
			if err != nil {
				return idemkey.Response{}, fmt.Errorf("lambda: encoding the output as JSON: %w", err)
			}
			out = v
			return idemkey.Response{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}, nil
		})
		switch {
		case err != nil:
			return zero, err
		case !res.Replayed:
			return out, nil
		case res.Response.BodyOmitted > 0:
			return zero, ErrOutputOmitted
		}
		var stored Out
		if err := json.Unmarshal(res.Response.Body, &stored); err != nil {
			return zero, fmt.Errorf("%w: %w", ErrOutputUndecodable, err)
		}
		return stored, nil
	}
}

// request builds the claim of one input.
func (o *FuncOptions[In]) request(ctx context.Context, in In) (idemkey.Request, error) {
	key, err := o.Key(in)
	if err != nil {
		return idemkey.Request{}, fmt.Errorf("%w: %w", ErrNoKey, err)
	}
	if key == "" {
		return idemkey.Request{}, fmt.Errorf("%w: the key is empty", ErrNoKey)
	}
	scope, err := o.Scope(ctx, in)
	if err != nil {
		return idemkey.Request{}, fmt.Errorf("lambda: scope of the input: %w", err)
	}
	b, err := o.Fingerprint(in)
	if err != nil {
		return idemkey.Request{}, fmt.Errorf("lambda: fingerprint of the input: %w", err)
	}
	fp := fingerprint.Request{Body: b}.Digest()
	return idemkey.Request{
		Scope: scope, Key: key, Method: InvokeMethod, Path: o.Name,
		Fingerprint: fp[:], Lease: invocationLease(ctx, o.LeaseMargin, o.Now),
	}, nil
}
