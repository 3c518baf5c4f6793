package lambda

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/fingerprint"
)

// InvokeMethod is the method recorded with the key records of Idempotent;
// the record's path is FuncOptions.Name.
const InvokeMethod = "INVOKE"

// MaxNameBytes bounds FuncOptions.Name, in bytes.
const MaxNameBytes = 255

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

// FuncOptions configure Idempotent for input type In. Name and Key are
// required, and so is Scope unless SingleCaller is set; the zero value of
// every other field selects its default.
type FuncOptions[In any] struct {
	// Name is the function's identity, part of what each of its keys
	// means: functions with distinct names never meet, even with the same
	// key and scope in one table (a "refund" and a "charge" keyed by one
	// order id both run, each replaying its own output). It is recorded as
	// the key record's path, for operators. Required, 1 to MaxNameBytes
	// bytes; there is no default, because one derived from Go names would
	// change with a refactoring and silently forget every stored key.
	// Renaming a function does forget them: a retry that arrives after the
	// rename runs again.
	Name string
	// Key returns the idempotency key of an input: the same for every
	// delivery of one logical operation (an order id, an SQS message id, an
	// EventBridge event id), at most 512 bytes. Required.
	Key func(In) (string, error)
	// Scope returns the scope of an input: the caller (a tenant, an
	// account), whose keys never meet another caller's. It gets the
	// invocation's context, where lambdacontext holds the caller's Cognito
	// identity of a direct invoke. Required unless SingleCaller is set.
	// Take it from how the caller was authenticated, never from a field
	// the caller chooses freely.
	Scope func(context.Context, In) (string, error)
	// SingleCaller states that every input comes from one caller, so that
	// all keys of the function share one scope (FunctionScope(Name, ""),
	// not another function's). It is the only way to
	// go without Scope, and it is a risk to take knowingly: when two
	// callers do send inputs, one caller's key replays the output stored
	// for the other's input with the same key (or fails with
	// idemkey.ErrMismatch), which leaks that output across callers. Safe
	// when keys are unique across callers by construction (an SQS message
	// id, an EventBridge event id). Set Scope or SingleCaller, not both.
	SingleCaller bool
	// Fingerprint returns the bytes the input is compared by: a retry with
	// the same key must have the same fingerprint, or it fails with
	// idemkey.ErrMismatch. JSON is compared in canonical form (member
	// order, whitespace and number spelling do not matter), other bytes as
	// they are. Default: the input's JSON encoding (encoding/json). Select
	// fields here when parts of the input change between deliveries of one
	// operation (a receipt handle, a receive count).
	Fingerprint func(In) ([]byte, error)
	// LeaseMargin is added to the invocation's remaining time to make the
	// claim's lease (default DefaultLeaseMargin). Without a deadline in
	// the context, the claim takes the store's lease.
	LeaseMargin time.Duration
	// Now is the clock the remaining time is measured with (default
	// time.Now). Tests inject the store's clock.
	Now func() time.Time
	// Guard configures the protocol (retry-after, write timeouts) and its
	// Observer (default: none; Metrics publishes one EMF line per
	// invocation). Its FrontDoor defaults to idemkey.FrontDoorLambdaInvoke.
	Guard idemkey.Options
	// Logger receives, at Warn, the error of a failed Scope, which the
	// returned *ScopeError wraps but does not print: its message is fixed,
	// because Lambda hands an error's message to the invoker. Default
	// (nil): slog.Default().
	Logger *slog.Logger
}

// Idempotent returns fn guarded by idempotency keys in store. For each
// input it takes the key (Key), the scope (Scope) and the fingerprint
// (Fingerprint), then runs the idemkey protocol on the key in the scope
// FunctionScope(Name, scope), so that functions sharing a table never
// answer each other's inputs:
//
//   - the first invocation with a key runs fn, with a *txn.Tx in its
//     context (txn.FromContext) on which fn stages its DynamoDB writes;
//     they commit together with the key record, which stores fn's output
//     as JSON, and the output is returned;
//   - a later invocation with the same key and fingerprint does not run fn:
//     it returns the stored output, decoded into a new Out (so Out must
//     survive a JSON round trip);
//   - one while the first still runs fails with an *InFlightError
//     (matching idemkey.ErrInFlight), or, with Guard.WaitInFlight, waits
//     for the first to complete (until idemkey.WaitDeadlineMargin before
//     its own deadline at the latest) and returns its output, failing
//     with an *InFlightError only if the first is still running then or
//     failed; one with another fingerprint fails with a *KeyReusedError
//     (matching idemkey.ErrMismatch);
//   - an error of fn is returned as is, with its own type, and releases
//     the key, as does a panic (re-raised), so a retry runs fn again;
//     nothing fn staged is written.
//
// The claim's lease is the invocation's remaining time plus LeaseMargin,
// so the key of an invocation that times out is free for the retry soon
// after the deadline.
//
// Every other error is of a type of this package that names its class,
// so that Lambda's errorType names it too, and wraps its cause, so that
// errors.Is and errors.As see the sentinel and typed errors underneath:
// *KeyError (ErrNoKey), *ScopeError, *FingerprintError,
// *StoreUnavailableError (idemkey.ErrUnavailable: DynamoDB could not be
// reached or answered with a transient failure, staged writes that kept
// conflicting included: txn.ErrConflict; nothing was committed),
// *StoreMisconfiguredError (idemkey.ErrPermanent: a missing table, denied
// access, a staged write DynamoDB rejects as invalid: txn.ErrValidation,
// too many staged writes: txn.ErrTooManyActions), *LockLostError,
// *StagedWriteError (a staged action's condition failed:
// txn.ErrConditionFailed; a reused ClientRequestToken: txn.ErrTokenMismatch),
// *StoredOutputError (ErrOutputOmitted, ErrOutputUndecodable),
// *OutputEncodingError, and *IdempotencyError for any other error of
// idemkey.Guard.Do.
//
// Idempotent panics if store, fn or Key is nil, if Name is empty or longer
// than MaxNameBytes, or if the options set neither Scope nor SingleCaller
// or set both: configuration errors, caught at start.
func Idempotent[In, Out any](store idemkey.Store, fn func(context.Context, In) (Out, error), optFns ...func(*FuncOptions[In])) func(context.Context, In) (Out, error) {
	if store == nil || fn == nil {
		panic("lambda: Idempotent needs a store and a function")
	}
	var o FuncOptions[In]
	for _, f := range optFns {
		f(&o)
	}
	switch {
	case o.Key == nil:
		panic("lambda: Idempotent needs FuncOptions.Key")
	case o.Name == "":
		panic("lambda: Idempotent needs FuncOptions.Name, the function's identity")
	case len(o.Name) > MaxNameBytes:
		panic(fmt.Sprintf("lambda: FuncOptions.Name is longer than %d bytes", MaxNameBytes))
	case o.Scope == nil && !o.SingleCaller:
		panic("lambda: Idempotent needs FuncOptions.Scope, or FuncOptions.SingleCaller for a function with one caller")
	case o.Scope != nil && o.SingleCaller:
		panic("lambda: FuncOptions sets both Scope and SingleCaller")
	case o.Scope == nil:
		o.Scope = func(context.Context, In) (string, error) { return "", nil }
	}
	if o.Fingerprint == nil {
		o.Fingerprint = func(in In) ([]byte, error) { return json.Marshal(in) }
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Guard.FrontDoor == "" {
		o.Guard.FrontDoor = idemkey.FrontDoorLambdaInvoke
	}
	guard := idemkey.New(store, func(g *idemkey.Options) { *g = o.Guard })

	return func(ctx context.Context, in In) (Out, error) {
		ctx, end := beginInvocation(ctx)
		defer end()
		var zero Out
		req, err := o.request(ctx, in)
		if err != nil {
			return zero, err
		}
		var out Out
		res, err := guard.Do(ctx, req, func(ctx context.Context) (idemkey.Response, error) {
			v, err := fn(ctx, in)
			if err != nil {
				return idemkey.Response{}, &functionError{err}
			}
			body, err := json.Marshal(v)
			if err != nil {
				return idemkey.Response{}, &functionError{&OutputEncodingError{cause{fmt.Errorf("lambda: encoding the output as JSON: %w", err)}}}
			}
			out = v
			return idemkey.Response{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}, nil
		})
		var fe *functionError
		switch {
		case errors.As(err, &fe):
			return zero, fe.err
		case err != nil:
			return zero, classify(err)
		case !res.Replayed:
			return out, nil
		case res.Response.BodyOmitted > 0:
			return zero, classify(ErrOutputOmitted)
		}
		var stored Out
		if err := json.Unmarshal(res.Response.Body, &stored); err != nil {
			return zero, classify(fmt.Errorf("%w: %w", ErrOutputUndecodable, err))
		}
		return stored, nil
	}
}

// request builds the claim of one input.
func (o *FuncOptions[In]) request(ctx context.Context, in In) (idemkey.Request, error) {
	key, err := o.Key(in)
	if err != nil {
		return idemkey.Request{}, &KeyError{cause{fmt.Errorf("%w: %w", ErrNoKey, err)}}
	}
	if key == "" {
		return idemkey.Request{}, &KeyError{cause{fmt.Errorf("%w: the key is empty", ErrNoKey)}}
	}
	scope, err := o.Scope(ctx, in)
	if err != nil {
		o.Logger.WarnContext(ctx, "idemkey: the scope of the input failed; the invocation is refused", "function", o.Name, "error", err)
		return idemkey.Request{}, &ScopeError{cause{fmt.Errorf("lambda: scope of the input: %w", err)}}
	}
	b, err := o.Fingerprint(in)
	if err != nil {
		return idemkey.Request{}, &FingerprintError{cause{fmt.Errorf("lambda: fingerprint of the input: %w", err)}}
	}
	// Compared as JSON: canonical when the bytes are JSON, as they are
	// otherwise.
	fp := fingerprint.Request{ContentType: "application/json", Body: b}.Digest()
	return idemkey.Request{
		Scope: FunctionScope(o.Name, scope), Key: key, Method: InvokeMethod, Path: o.Name,
		Fingerprint: fp[:], Lease: invocationLease(ctx, o.LeaseMargin, o.Now),
	}, nil
}

// FunctionScope returns the scope in which Idempotent keeps the keys of
// the function named name for inputs of the given scope: "fn:", the
// length of name in decimal, ":", name, then scope. The length prefix
// keeps the pair unambiguous, so no other name and scope give the same
// string, and the "fn:" prefix keeps it apart from the scopes of
// EventScope. Use it to find a function's record with a store's Get or an
// operator's tool.
func FunctionScope(name, scope string) string {
	return "fn:" + strconv.Itoa(len(name)) + ":" + name + scope
}
