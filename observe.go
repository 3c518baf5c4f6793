package idemkey

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strconv"
	"time"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/txn"
)

// Outcome says how a request the Guard handled ended. Its values are
// short, stable strings, fit for a metric attribute.
type Outcome string

const (
	// OutcomeExecutedStored: the function ran and its response and effects
	// were committed with the key.
	OutcomeExecutedStored Outcome = "executed-stored"
	// OutcomeExecutedReleased: the function ran and the key was released:
	// its response is not stored (a 5xx by default), it returned an error
	// (Event.Err), or it panicked. A retry executes again.
	OutcomeExecutedReleased Outcome = "executed-released"
	// OutcomeReplay: the stored response was returned, read from DynamoDB.
	OutcomeReplay Outcome = "replay"
	// OutcomeReplayFromCache: the stored response was returned from the
	// Guard's Cache, without a DynamoDB call.
	OutcomeReplayFromCache Outcome = "replay-from-cache"
	// OutcomeInFlight: another request holds the key (ErrInFlight).
	OutcomeInFlight Outcome = "in-flight"
	// OutcomeMismatch: the key was used for another request (ErrMismatch).
	OutcomeMismatch Outcome = "mismatch"
	// OutcomeLockLost: the key was reclaimed while the function ran
	// (ErrLockLost).
	OutcomeLockLost Outcome = "lock-lost"
	// OutcomeUnavailable: the store could not be reached or did not
	// confirm the commit (ErrUnavailable).
	OutcomeUnavailable Outcome = "unavailable"
	// OutcomePermanent: DynamoDB answered with a fault a retry meets again
	// (ErrPermanent); Event.Class names it.
	OutcomePermanent Outcome = "permanent"
	// OutcomeEffectConditionFailed: a staged write's condition failed at
	// the commit (txn.ErrConditionFailed).
	OutcomeEffectConditionFailed Outcome = "effect-condition-failed"
	// OutcomeInvalid: the store refused the scope or key
	// (dynamostore.ErrInvalidRequest).
	OutcomeInvalid Outcome = "invalid"
	// OutcomeCorruptRecord: the key's record cannot be read
	// (dynamostore.ErrCorruptRecord).
	OutcomeCorruptRecord Outcome = "corrupt-record"
	// OutcomeUnkeyedCommitted: CommitUnkeyed committed the writes of a
	// request without a key.
	OutcomeUnkeyedCommitted Outcome = "unkeyed-committed"
	// OutcomeError: any other error of the protocol (Event.Err), such as
	// ErrUnkeyedUnsupported.
	OutcomeError Outcome = "error"
)

// String returns the name logs, metrics and spans give the mode:
// "claim-first", "one-trip" or "unkeyed" ("Mode(N)" for another value).
func (m Mode) String() string {
	switch m {
	case ClaimFirst:
		return "claim-first"
	case OneTrip:
		return "one-trip"
	case Unkeyed:
		return "unkeyed"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// Front doors as their packages report them in Event.FrontDoor.
const (
	FrontDoorHTTP              = "http"
	FrontDoorLambdaAPIGWv1     = "lambda-apigw-v1"
	FrontDoorLambdaAPIGWv2     = "lambda-apigw-v2"
	FrontDoorLambdaALB         = "lambda-alb"
	FrontDoorLambdaFunctionURL = "lambda-function-url"
	FrontDoorLambdaInvoke      = "lambda-invoke"
	FrontDoorLambdaSQS         = "lambda-sqs"
	FrontDoorGRPC              = "grpc"
)

// Phase is a set of the steps of the protocol a request went through.
type Phase uint8

const (
	// PhaseClaim: the key was claimed (ClaimFirst), or looked up in the
	// cache.
	PhaseClaim Phase = 1 << iota
	// PhaseRun: the function ran.
	PhaseRun
	// PhaseCommit: a commit was attempted (in OneTrip mode, the claim and
	// commit in one call; for CommitUnkeyed, the transaction).
	PhaseCommit
)

// Event describes one request the Guard handled. An Observer gets one per
// call of Guard.Do (whatever its outcome, a panic of the function
// included) and one per call of Guard.CommitUnkeyed that has writes to
// commit.
//
// It never holds the key, the scope, a body or a header: KeyHash
// identifies the key without revealing it. Path is the request's path as
// recorded with the key: fit for a log, not for a metric attribute (its
// cardinality is unbounded).
type Event struct {
	// Outcome says how the request ended.
	Outcome Outcome
	// Mode is the Guard's Mode, or Unkeyed for CommitUnkeyed.
	Mode Mode
	// FrontDoor is what served the request: the value of WithFrontDoor in
	// the request's context, else Options.FrontDoor ("" when neither is
	// set).
	FrontDoor string
	// Method and Path are the request's (Request.Method, Request.Path);
	// empty for CommitUnkeyed.
	Method, Path string
	// Start is when the Guard took the request; Duration how long it took.
	Start    time.Time
	Duration time.Duration
	// Phases says which steps ran; Claim, Run and Commit are how long each
	// took (zero when it did not run). In ClaimFirst mode they follow each
	// other in that order; in OneTrip mode the run comes first and the
	// commit holds the claim.
	Phases             Phase
	Claim, Run, Commit time.Duration
	// StoreCalls counts the Guard's calls to its Store: Claim, Commit,
	// Release, Get, CommitFirst, CommitStaged. A *dynamostore.Store makes
	// one DynamoDB call for each, and a consistent GetItem more for a
	// claim whose failed condition came back without the item (an
	// emulator's gap, never real DynamoDB's).
	StoreCalls int
	// Waited is how long the request waited for a duplicate in flight
	// (Options.WaitInFlight); zero when it did not wait.
	Waited time.Duration
	// StagedActions counts the writes the function staged.
	StagedActions int
	// Status is the response's status when there is one (executed,
	// replayed or committed outcomes); 0 otherwise.
	Status int
	// Class is the fault's class for OutcomePermanent, "" otherwise.
	Class dynamostore.Class
	// Err is the error the Guard returned (the function's own for
	// OutcomeExecutedReleased), nil for a success.
	Err error

	scope, key string
	secret     []byte
}

// KeyHash identifies the event's record (its scope and key) without
// revealing it: the first 8 bytes of an HMAC-SHA256 under the Guard's
// Options.KeyHashSecret of the scope's length, the scope and the key, in
// hex (16 characters). Two events of one Guard and one record have the
// same KeyHash; without the secret, a guessed key cannot be confirmed
// from it. The key of a CommitUnkeyed event is empty.
func (e *Event) KeyHash() string {
	mac := hmac.New(sha256.New, e.secret)
	var n [binary.MaxVarintLen64]byte
	mac.Write(n[:binary.PutUvarint(n[:], uint64(len(e.scope)))])
	mac.Write([]byte(e.scope))
	mac.Write([]byte(e.key))
	return hex.EncodeToString(mac.Sum(nil)[:8])
}

// Observer receives the Event of every request a Guard handles, after
// the request, before the Guard returns. It is called from the request's
// goroutine with the request's context and must be safe for concurrent
// use. Its time is the request's: keep it short and never block.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// Starter is an Observer that also learns when a request begins, and
// returns the context the request then runs in (the store's calls, the
// function, and the final Observe): a tracing adapter starts a span here,
// so that what the function and the store do nests under it.
type Starter interface {
	Observer
	StartRequest(ctx context.Context, mode Mode, frontDoor string) context.Context
}

// RoutingEvent is a decision of a store that routes keys over regions
// (package multiregion), without the key or the scope.
type RoutingEvent struct {
	// Kind names the decision, such as "failover" or "fail_closed".
	Kind string
	// Home is the key's home region, where there is one; Region the
	// region the decision is about.
	Home, Region string
	// Err is the error that caused the decision, if any.
	Err error
}

// RoutingObserver is an Observer that also counts routing decisions.
type RoutingObserver interface {
	ObserveRouting(ctx context.Context, e RoutingEvent)
}

// ObserverFunc is an Observer that is a function.
type ObserverFunc func(ctx context.Context, e Event)

// Observe calls f.
func (f ObserverFunc) Observe(ctx context.Context, e Event) { f(ctx, e) }

// Observers returns an Observer that passes every event to each of obs in
// order, nil ones left out. It is a Starter (each Starter among obs starts
// in order, on the context the previous one returned) and a
// RoutingObserver (for those of obs that are).
func Observers(obs ...Observer) Observer {
	var m multiObserver
	for _, o := range obs {
		if o != nil {
			m = append(m, o)
		}
	}
	return m
}

type multiObserver []Observer

func (m multiObserver) Observe(ctx context.Context, e Event) {
	for _, o := range m {
		o.Observe(ctx, e)
	}
}

func (m multiObserver) StartRequest(ctx context.Context, mode Mode, frontDoor string) context.Context {
	for _, o := range m {
		if s, ok := o.(Starter); ok {
			ctx = s.StartRequest(ctx, mode, frontDoor)
		}
	}
	return ctx
}

func (m multiObserver) ObserveRouting(ctx context.Context, e RoutingEvent) {
	for _, o := range m {
		if r, ok := o.(RoutingObserver); ok {
			r.ObserveRouting(ctx, e)
		}
	}
}

type frontDoorKey struct{}

// WithFrontDoor returns ctx naming the front door that serves the request
// (one of the FrontDoor constants, or another short, fixed name), which
// the request's Event then reports.
func WithFrontDoor(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, frontDoorKey{}, name)
}

// FrontDoorFrom returns the front door WithFrontDoor put in ctx, or "".
func FrontDoorFrom(ctx context.Context) string {
	name, _ := ctx.Value(frontDoorKey{}).(string)
	return name
}

// OutcomeOf returns the outcome of an error of Do or CommitUnkeyed, and
// the class of a permanent fault. A nil error has no outcome ("").
func OutcomeOf(err error) (Outcome, dynamostore.Class) {
	var permanent *PermanentError
	switch {
	case err == nil:
		return "", ""
	case errors.Is(err, ErrInFlight):
		return OutcomeInFlight, ""
	case errors.Is(err, ErrMismatch):
		return OutcomeMismatch, ""
	case errors.Is(err, ErrLockLost):
		return OutcomeLockLost, ""
	case errors.Is(err, ErrUnavailable):
		return OutcomeUnavailable, ""
	case errors.As(err, &permanent):
		return OutcomePermanent, permanent.Class
	case errors.Is(err, txn.ErrConditionFailed):
		return OutcomeEffectConditionFailed, ""
	case errors.Is(err, dynamostore.ErrInvalidRequest):
		return OutcomeInvalid, ""
	case errors.Is(err, dynamostore.ErrCorruptRecord):
		return OutcomeCorruptRecord, ""
	}
	return OutcomeError, ""
}

// probe gathers the Event of one request; a nil probe records nothing, so
// that a Guard without an Observer pays for none of it.
type probe struct {
	obs  Observer
	ev   Event
	mark time.Time // the end of the previous phase
}

// begin starts the probe of a request in p, and returns the context it
// runs in (ctx, or the one a Starter returned) and p, or nil without an
// Observer.
func (g *Guard) begin(ctx context.Context, mode Mode, req *Request, p *probe) (context.Context, *probe) {
	obs := g.opts.Observer
	if obs == nil {
		return ctx, nil
	}
	door := FrontDoorFrom(ctx)
	if door == "" {
		door = g.opts.FrontDoor
	}
	if s, ok := obs.(Starter); ok {
		ctx = s.StartRequest(ctx, mode, door)
	}
	now := time.Now()
	*p = probe{obs: obs, mark: now}
	p.ev = Event{Mode: mode, FrontDoor: door, Start: now, secret: g.opts.KeyHashSecret}
	if req != nil {
		p.ev.Method, p.ev.Path, p.ev.scope, p.ev.key = req.Method, req.Path, req.Scope, req.Key
	}
	return ctx, p
}

// call counts a call to the store.
func (p *probe) call() {
	if p != nil {
		p.ev.StoreCalls++
	}
}

// done records that phase ph ended now.
func (p *probe) done(ph Phase) {
	if p == nil {
		return
	}
	now := time.Now()
	d := now.Sub(p.mark)
	p.mark = now
	p.ev.Phases |= ph
	switch ph {
	case PhaseClaim:
		p.ev.Claim += d
	case PhaseRun:
		p.ev.Run += d
	case PhaseCommit:
		p.ev.Commit += d
	}
}

// waited records how long the request waited for a duplicate in flight.
func (p *probe) waited(d time.Duration) {
	if p != nil {
		p.ev.Waited = d
	}
}

// staged records the writes the function staged.
func (p *probe) staged(tx *txn.Tx) {
	if p != nil {
		p.ev.StagedActions = tx.Len()
	}
}

// finish reports the request's event: outcome, when set, overrides the
// one err or res give.
func (p *probe) finish(ctx context.Context, outcome Outcome, res *Result, err error) {
	if p == nil {
		return
	}
	e := &p.ev
	e.Duration = time.Since(e.Start)
	e.Err = err
	switch {
	case outcome != "":
		e.Outcome = outcome
	case err != nil:
		e.Outcome, e.Class = OutcomeOf(err)
	case res.Replayed:
		e.Outcome = OutcomeReplay
	case res.Stored:
		e.Outcome = OutcomeExecutedStored
	default:
		e.Outcome = OutcomeExecutedReleased
	}
	if res != nil {
		e.Status = res.Response.Status
	}
	p.obs.Observe(ctx, *e)
}

// errPanicked is the Event.Err of a request whose function panicked; the
// panic itself goes on to the caller.
var errPanicked = errors.New("idemkey: the function panicked")
