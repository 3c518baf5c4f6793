package idemkey

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"time"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/keyschema"
	"github.com/idemkey/idemkey/internal/txnctx"
	"github.com/idemkey/idemkey/internal/waitclock"
	"github.com/idemkey/idemkey/txn"
)

// Request identifies one guarded request: its scope and key, what it is
// for, and its fingerprint. See dynamostore.Request.
type Request = dynamostore.Request

// Response is a response as stored and replayed. See dynamostore.Response.
type Response = dynamostore.Response

// Func executes a guarded request. Its context carries a *txn.Tx
// (txn.FromContext) on which it stages its DynamoDB writes; they are
// committed with the key record after it returns. A Func must not write to
// DynamoDB directly what it wants protected.
type Func func(ctx context.Context) (Response, error)

// Store is what a Guard needs of a key store. *dynamostore.Store
// implements it over one table in one region; a multi-region router
// implements it over several.
type Store interface {
	Claim(ctx context.Context, req Request) (*dynamostore.Claim, error)
	Commit(ctx context.Context, c *dynamostore.Claim, resp Response, tx *txn.Tx) (*dynamostore.Record, error)
	Release(ctx context.Context, c *dynamostore.Claim) error
	Get(ctx context.Context, scope, key string) (*dynamostore.Record, error)
}

var _ Store = (*dynamostore.Store)(nil)

// Mode selects how a Guard orders the claim and the execution.
type Mode int

const (
	// ClaimFirst claims the key, runs the function, then commits: two
	// DynamoDB calls for a first execution, and a concurrent duplicate
	// never runs the function. Safe for any function. The default.
	ClaimFirst Mode = iota
	// OneTrip runs the function first and then claims and commits in one
	// call: one DynamoDB call for a first execution. Concurrent duplicates
	// may both RUN the function; only one commit wins, and the loser is
	// answered from the winner's record (a replay, or 422). So OneTrip is
	// only for functions whose every effect is a write staged on the txn.Tx
	// (no email, no call to a payment processor, no direct DynamoDB write):
	// anything else would happen twice. A replay still costs one call and
	// one run of the function, unless a Cache answers it. A run that
	// writes nothing (the function failed, or its response is not stored)
	// reads the key's record (one GetItem): a retry after completion is
	// answered from it, not by the run's failure.
	OneTrip
	// Unkeyed is the Mode of the events of CommitUnkeyed, which commits
	// writes without a key. Options.Mode does not take it.
	Unkeyed
)

// oneTripStore is what OneTrip mode needs of a store in addition to Store.
// *dynamostore.Store implements it.
type oneTripStore interface {
	CommitFirst(ctx context.Context, req Request, resp Response, tx *txn.Tx) (*dynamostore.Claim, error)
}

var _ oneTripStore = (*dynamostore.Store)(nil)

// Options configure a Guard. The zero value of each field selects its
// default.
type Options struct {
	// Mode orders claim and execution (default ClaimFirst). See OneTrip
	// for the condition a function must meet to use it.
	Mode Mode
	// Cache, when set, answers replays of completed records from process
	// memory, without a DynamoDB call. Default: none.
	Cache *Cache
	// Now is the clock of the cache (default time.Now). The cache stops
	// serving a record at its expiry measured on this clock, so it must
	// not run behind the store's.
	Now func() time.Time
	// ShouldStore reports whether a response is final and stored for
	// replay (default: status below 500). A response that is not stored
	// releases the key, so a retry executes again; its staged effects are
	// discarded. A response that RefusesCaller names (401, 403) is never
	// stored, whatever ShouldStore says.
	ShouldStore func(Response) bool
	// RetryAfter is suggested to a request that finds its key in flight or
	// the store unavailable (default 1s).
	RetryAfter time.Duration
	// WriteTimeout bounds the commit and the release, which run detached
	// from the request's context: a client that hangs up after the function
	// ran must not leave its effects uncommitted (default 10s).
	WriteTimeout time.Duration
	// ConfirmTimeout bounds each read that establishes the outcome of a
	// commit that failed ambiguously (a timeout, a 500, a transaction still
	// in progress). The read runs detached from the request's context and
	// with its own time, not what is left of WriteTimeout: a commit that
	// used up its write timeout is still confirmed (default 5s).
	ConfirmTimeout time.Duration
	// Observer receives the Event of every request (see Observer).
	// Default: none, and the Guard measures nothing.
	Observer Observer
	// FrontDoor names what serves the Guard's requests in their Events
	// when the request's context names nothing (WithFrontDoor). Front
	// doors set it: package handler to FrontDoorHTTP.
	FrontDoor string
	// KeyHashSecret is the secret of Event.KeyHash, a keyed hash (HMAC),
	// so that whoever reads a log or a trace cannot confirm a guessed key
	// by hashing it. Default (nil): 32 random bytes drawn by New, so the
	// hashes of one Guard agree with each other (a log line and a span of
	// one request, the retries of one key) and with no other Guard's. Set
	// the same secret on every Guard of a fleet for hashes that agree
	// across processes, and keep it like a password: it confirms a guessed
	// key to whoever holds it. New panics if it is set and shorter than
	// MinKeyHashSecret bytes.
	KeyHashSecret []byte
	// WaitInFlight, when positive, makes a request that finds its key
	// held by a duplicate in flight wait for that duplicate to complete,
	// then answer as a retry after completion would: a replay of the
	// stored response when the fingerprints match, ErrMismatch when they
	// differ (the same checks as any replay). Default 0: no wait, the
	// *InFlightError at once (HTTP 409).
	//
	// The wait ends at the earliest of WaitInFlight after it began, the
	// end of the duplicate's lock (its lease), and WaitDeadlineMargin
	// before the deadline of the request's context (a Lambda invocation's,
	// a gRPC call's); a request still in flight then gets the
	// *InFlightError, as without a wait. It reads the record with
	// strongly consistent GetItem calls at growing, jittered intervals,
	// at most MaxWaitReads per wait; the requests of one Guard waiting for
	// the same scope and key share those reads, and a commit or release
	// of that key by the same Guard makes them read at once (one read;
	// the response is not handed over in memory, so that what they answer
	// is what the table holds). Each read counts in Event.StoreCalls.
	//
	// When the duplicate fails and releases the key (an error, a panic, a
	// response not stored) or its lock ends, the waiter does not execute
	// in its place: it gets the *InFlightError, which is retryable, and
	// its client's retry claims the key. Executing silently would run a
	// request the client believes is still waiting for the first attempt
	// and may retry on its own, which is the client's decision to make.
	//
	// New panics if WaitInFlight is negative, or longer than the store's
	// lease when the store tells it (dynamostore.Options.Lease): a wait
	// beyond the lease would outlast the lock it waits for, whose end
	// lets any request claim the key.
	WaitInFlight time.Duration
}

// MinKeyHashSecret is the shortest Options.KeyHashSecret New accepts.
const MinKeyHashSecret = 16

// RefusesCaller reports whether an answer of the HTTP status refuses the
// caller's credentials or permissions: 401 Unauthorized or 403 Forbidden.
// A Guard never stores such an answer, whatever Options.ShouldStore says:
// it releases the key and discards the staged writes, so that a retry
// after the caller's credentials were renewed or its permissions granted
// executes, instead of replaying the refusal for the whole retention. A
// front door whose answers are not HTTP statuses asks it with the status
// its answer maps to (package grpc: Unauthenticated is 401,
// PermissionDenied 403).
func RefusesCaller(status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusForbidden
}

// Guard runs the protocol over a Store. It is safe for concurrent use.
type Guard struct {
	store Store
	opts  Options
	waits waiters
	sleep waitclock.Sleep
}

// New returns a Guard over store. It panics if store is nil (or a nil
// pointer, such as a nil *dynamostore.Store), if Mode is OneTrip and store
// has no CommitFirst method, if Options.Cache is used by a Guard over
// another store, or if Options.WaitInFlight is negative or longer than
// the store's lease.
func New(store Store, optFns ...func(*Options)) *Guard {
	if v := reflect.ValueOf(store); store == nil || (v.Kind() == reflect.Pointer && v.IsNil()) {
		panic("idemkey: New needs a store")
	}
	g := &Guard{store: store}
	for _, fn := range optFns {
		fn(&g.opts)
	}
	if c := g.opts.Cache; c != nil && !c.bind(store) {
		panic("idemkey: New: the Cache serves a Guard over another store; a Cache names records by scope and key alone, so give each store its own")
	}
	if g.opts.Mode != ClaimFirst && g.opts.Mode != OneTrip {
		panic(fmt.Sprintf("idemkey: New: Options.Mode %s: a Guard runs in ClaimFirst or OneTrip mode", g.opts.Mode))
	}
	if g.opts.Mode == OneTrip {
		if _, ok := store.(oneTripStore); !ok {
			panic("idemkey: OneTrip mode needs a store with a CommitFirst method, such as *dynamostore.Store")
		}
	}
	switch {
	case g.opts.KeyHashSecret == nil:
		g.opts.KeyHashSecret = make([]byte, 32)
		if _, err := rand.Read(g.opts.KeyHashSecret); err != nil {
			panic("idemkey: New: no randomness for the key hash secret: " + err.Error())
		}
	case len(g.opts.KeyHashSecret) < MinKeyHashSecret:
		panic(fmt.Sprintf("idemkey: New: Options.KeyHashSecret of %d bytes, fewer than MinKeyHashSecret (%d): a short secret lets a guessed key be confirmed from its hash; leave it nil for a random one",
			len(g.opts.KeyHashSecret), MinKeyHashSecret))
	default:
		g.opts.KeyHashSecret = bytes.Clone(g.opts.KeyHashSecret)
	}
	if g.opts.Now == nil {
		g.opts.Now = time.Now
	}
	g.sleep = waitclock.Timer(g.opts.Now)
	if w := g.opts.WaitInFlight; w < 0 {
		panic(fmt.Sprintf("idemkey: New: negative Options.WaitInFlight (%v): zero waits not at all, a positive bound waits up to it", w))
	} else if ls, ok := store.(interface{ Options() dynamostore.Options }); ok && w > ls.Options().Lease {
		panic(fmt.Sprintf("idemkey: New: Options.WaitInFlight %v is longer than the store's Lease %v: a wait beyond the lease outlasts the lock it waits for; lower WaitInFlight",
			w, ls.Options().Lease))
	}
	shouldStore := g.opts.ShouldStore
	if shouldStore == nil {
		shouldStore = func(r Response) bool { return r.Status < 500 }
	}
	g.opts.ShouldStore = func(r Response) bool { return !RefusesCaller(r.Status) && shouldStore(r) }
	if g.opts.RetryAfter <= 0 {
		g.opts.RetryAfter = time.Second
	}
	if g.opts.WriteTimeout <= 0 {
		g.opts.WriteTimeout = 10 * time.Second
	}
	if g.opts.ConfirmTimeout <= 0 {
		g.opts.ConfirmTimeout = 5 * time.Second
	}
	return g
}

// Store returns the guard's store.
func (g *Guard) Store() Store { return g.store }

// Result is the answer to a guarded request.
type Result struct {
	// Response answers the request: the function's own response when it
	// executed, the stored one when replayed.
	Response Response
	// Replayed is true when the response comes from an earlier execution.
	Replayed bool
	// Stored is true when the response is (now) stored for replay; false
	// when the function executed and its key was released.
	Stored bool
}

// Do runs the protocol for req: it claims the key and either answers from
// the stored record or executes fn and commits its response with the
// effects fn staged.
//
// A commit whose outcome is ambiguous (a timeout, a 500, a transaction
// still in progress) is confirmed with a consistent read bounded by
// ConfirmTimeout: found applied under this request's lock, it answers as a
// commit (Stored, not Replayed); found unapplied, the key is released
// (ClaimFirst). In OneTrip mode a completed record with the request's
// fingerprint written by another execution answers as a replay, and so it
// does when fn fails or its response is not stored (one read).
//
// Errors: an *InFlightError (ErrInFlight), ErrMismatch, an
// *UnavailableError (ErrUnavailable) when DynamoDB cannot be reached,
// answers with a transient failure, or the commit's outcome cannot be
// established, a *PermanentError (ErrPermanent) when DynamoDB answers with
// a fault that a retry meets again (its Class says which; nothing was
// committed), ErrLockLost when the key was reclaimed while fn ran (nothing
// was committed), a *txn.ConditionFailedError when a staged effect's
// condition failed (nothing was committed; the key was released),
// dynamostore.ErrInvalidRequest, dynamostore.ErrCorruptRecord, or the
// error fn returned (the key was released). A panic in fn releases the key
// and is re-raised.
//
// With an Observer, Do reports one Event per call, a panic of fn
// included, before it returns.
func (g *Guard) Do(ctx context.Context, req Request, fn Func) (*Result, error) {
	var pr probe
	ctx, p := g.begin(ctx, g.opts.Mode, &req, &pr)
	if p == nil {
		res, _, err := g.do(ctx, req, fn, nil)
		return res, err
	}
	finished := false
	defer func() {
		if !finished { // fn panicked (or called runtime.Goexit)
			p.finish(ctx, OutcomeExecutedReleased, nil, errPanicked)
		}
	}()
	res, outcome, err := g.do(ctx, req, fn, p)
	finished = true
	p.finish(ctx, outcome, res, err)
	return res, err
}

// do is Do, measured by p (nil: not measured). outcome, when not empty,
// is the request's outcome where res and err do not tell it.
func (g *Guard) do(ctx context.Context, req Request, fn Func, p *probe) (res *Result, outcome Outcome, err error) {
	// A request the store would refuse is left to the store to refuse.
	if c := g.opts.Cache; c != nil && len(req.Fingerprint) == dynamostore.FingerprintSize {
		resp, hit, mismatch := c.lookup(req.Scope, req.Key, req.Fingerprint, g.opts.Now())
		switch {
		case mismatch:
			p.done(PhaseClaim)
			return nil, "", ErrMismatch
		case hit:
			p.done(PhaseClaim)
			return &Result{Response: resp, Replayed: true, Stored: true}, OutcomeReplayFromCache, nil
		}
	}
	if g.opts.Mode == OneTrip {
		return g.doOneTrip(ctx, req, fn, p)
	}
	p.call()
	claim, err := g.store.Claim(ctx, req)
	p.done(PhaseClaim)
	if err != nil {
		return nil, "", g.storeErr(err, nil)
	}
	if res, err, done := g.answered(ctx, req, claim, p); done {
		return res, "", err
	}

	tx := txn.New()
	resp, err := g.run(ctx, tx, fn, func() { p.done(PhaseRun); p.staged(tx); _ = g.release(ctx, claim, p) })
	p.done(PhaseRun)
	p.staged(tx)
	if err != nil {
		g.release(ctx, claim, p)
		return nil, OutcomeExecutedReleased, err
	}
	if !g.opts.ShouldStore(resp) {
		g.release(ctx, claim, p)
		return &Result{Response: resp}, "", nil
	}

	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.opts.WriteTimeout)
	defer cancel()
	p.call()
	rec, err := g.store.Commit(wctx, claim, resp, tx)
	defer p.done(PhaseCommit) // the confirmation and the release count as the commit's
	switch {
	case err == nil:
		g.remember(rec)
		g.waits.wake(keyschema.PartitionKey(req.Scope, req.Key))
		return &Result{Response: resp, Stored: true}, "", nil
	case errors.Is(err, dynamostore.ErrLockLost):
		return nil, "", ErrLockLost
	}
	var se *dynamostore.StoreError
	if errors.As(err, &se) {
		res, err := g.confirmCommit(ctx, claim, resp, g.storeErr(err, tx), p)
		return res, "", err
	}
	g.release(ctx, claim, p)
	return nil, "", g.storeErr(err, tx)
}

// confirmCommit answers a request whose commit failed ambiguously with
// unavailable (the Guard's error for the store's): it reads the record to
// learn whether the commit was applied. Not applied, the key is released
// (a retry executes again); when that cannot be established, the lock
// stays until its lease ends.
func (g *Guard) confirmCommit(ctx context.Context, claim *dynamostore.Claim, resp Response, unavailable error, p *probe) (*Result, error) {
	for range 2 {
		rec, gerr := g.confirm(ctx, claim.Record.Scope, claim.Record.Key, p)
		switch {
		case gerr != nil || rec.LockToken != claim.Record.LockToken:
			return nil, unavailable // unreadable, or no record of this claim
		case rec.State == dynamostore.StateCompleted:
			g.remember(rec)
			g.waits.wake(keyschema.PartitionKey(rec.Scope, rec.Key))
			return &Result{Response: resp, Stored: true}, nil
		}
		// In progress under this claim's lock: not applied when read. The
		// release is fenced: it fails when the commit landed since, which
		// the next read finds.
		if !errors.Is(g.release(ctx, claim, p), dynamostore.ErrLockLost) {
			return nil, unavailable
		}
	}
	return nil, unavailable
}

// confirm reads the record of (scope, key) with its own ConfirmTimeout,
// detached from ctx.
func (g *Guard) confirm(ctx context.Context, scope, key string, p *probe) (*dynamostore.Record, error) {
	p.call()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.opts.ConfirmTimeout)
	defer cancel()
	return g.store.Get(cctx, scope, key)
}

// answered turns a claim that was not acquired into the request's answer:
// for a key in flight, after a wait when Options.WaitInFlight asks for one.
func (g *Guard) answered(ctx context.Context, req Request, claim *dynamostore.Claim, p *probe) (res *Result, err error, done bool) {
	switch claim.Result {
	case dynamostore.Replay:
		g.remember(claim.Record)
		return &Result{Response: *claim.Record.Response, Replayed: true, Stored: true}, nil, true
	case dynamostore.InFlight:
		if g.opts.WaitInFlight > 0 {
			res, err := g.await(ctx, req, claim.Record, p)
			return res, err, true
		}
		return nil, &InFlightError{RetryAfter: g.opts.RetryAfter}, true
	case dynamostore.Mismatch:
		return nil, ErrMismatch, true
	}
	return nil, nil, false
}

// doOneTrip runs fn first, then claims and commits in one call.
func (g *Guard) doOneTrip(ctx context.Context, req Request, fn Func, p *probe) (*Result, Outcome, error) {
	tx := txn.New()
	resp, err := g.run(ctx, tx, fn, func() { p.done(PhaseRun); p.staged(tx) })
	p.done(PhaseRun)
	p.staged(tx)
	if err != nil || !g.opts.ShouldStore(resp) {
		// Nothing is written, so no condition failure tells whether the
		// key was executed before: a retry after completion is answered
		// from the record, as a claim would answer it, not by this run.
		if res, serr, found := g.storedAnswer(ctx, req, p); found {
			return res, "", serr
		}
		if err != nil {
			return nil, OutcomeExecutedReleased, err
		}
		return &Result{Response: resp}, "", nil
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.opts.WriteTimeout)
	defer cancel()
	p.call()
	claim, err := g.store.(oneTripStore).CommitFirst(wctx, req, resp, tx)
	defer p.done(PhaseCommit)
	if err != nil {
		var se *dynamostore.StoreError
		if errors.As(err, &se) {
			// The write may have landed: look before answering.
			rec, gerr := g.confirm(ctx, req.Scope, req.Key, p)
			switch {
			case gerr != nil || rec.State != dynamostore.StateCompleted:
			case se.LockToken != "" && rec.LockToken == se.LockToken:
				// This write landed: its answer is this execution's.
				g.remember(rec)
				return &Result{Response: resp, Stored: true}, "", nil
			case rec.MatchesFingerprint(req.Fingerprint):
				// A twin's write for the same request: a replay.
				g.remember(rec)
				return &Result{Response: *rec.Response, Replayed: true, Stored: true}, "", nil
			}
		}
		return nil, "", g.storeErr(err, tx)
	}
	if res, err, done := g.answered(ctx, req, claim, p); done {
		return res, "", err
	}
	g.remember(claim.Record)
	g.waits.wake(keyschema.PartitionKey(req.Scope, req.Key))
	return &Result{Response: resp, Stored: true}, "", nil
}

// storedAnswer reads the record of req's key for a OneTrip run that
// writes nothing (fn failed, or its response is not stored), and answers
// as a claim's condition failure would: a completed record of the same
// request is a replay, of another request ErrMismatch, a claim in progress
// under a lock that holds an *InFlightError. found is false when there is
// no record, its lock has expired (a claim would take the key over), or it
// cannot be read: the run's own answer stands.
func (g *Guard) storedAnswer(ctx context.Context, req Request, p *probe) (res *Result, err error, found bool) {
	rec, gerr := g.confirm(ctx, req.Scope, req.Key, p)
	switch {
	case gerr != nil:
		return nil, nil, false
	case rec.State == dynamostore.StateInProgress && rec.LockExpires.Before(g.opts.Now()):
		return nil, nil, false
	case rec.State == dynamostore.StateInProgress:
		return nil, &InFlightError{RetryAfter: g.opts.RetryAfter}, true
	case !rec.MatchesFingerprint(req.Fingerprint):
		return nil, ErrMismatch, true
	case rec.Response == nil:
		return nil, nil, false
	}
	g.remember(rec)
	return &Result{Response: *rec.Response, Replayed: true, Stored: true}, nil, true
}

func (g *Guard) remember(rec *dynamostore.Record) {
	if g.opts.Cache != nil {
		g.opts.Cache.store(rec, g.opts.Now())
	}
}

// run calls fn with the staging Tx in its context, converting a panic into
// a call of onPanic followed by the same panic.
func (g *Guard) run(ctx context.Context, tx *txn.Tx, fn Func, onPanic func()) (resp Response, err error) {
	panicked := true
	defer func() {
		if panicked {
			p := recover()
			onPanic()
			if p != nil { // nil: runtime.Goexit, which goes on unwinding
				panic(p)
			}
		}
	}()
	resp, err = fn(txnctx.With(ctx, tx))
	panicked = false
	return resp, err
}

// release frees the key for a retry. Its failure reaches no client: the
// lock then expires after its lease.
func (g *Guard) release(ctx context.Context, claim *dynamostore.Claim, p *probe) error {
	p.call()
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.opts.WriteTimeout)
	defer cancel()
	err := g.store.Release(wctx, claim)
	g.waits.wake(keyschema.PartitionKey(claim.Record.Scope, claim.Record.Key))
	return err
}
