package idemkey

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/keyschema"
	"github.com/idemkey/idemkey/internal/waitclock"
)

// MaxWaitReads is the most reads of the key's record that one wait for an
// in-flight duplicate makes (Options.WaitInFlight): 8 strongly consistent
// GetItem calls, shared by every request of this Guard that waits for the
// same key at the same time. A request that waits thus costs at most 8
// reads, and 16 concurrent duplicates of one key in one process cost at
// most 8 together.
const MaxWaitReads = 8

// WaitDeadlineMargin is how long before its context's deadline a wait
// ends, so that the in-flight answer reaches the caller before the
// deadline does: before a Lambda function times out (its context's
// deadline is the invocation's), before a gRPC call's deadline.
const WaitDeadlineMargin = 250 * time.Millisecond

// minWaitGap is the shortest time between two scheduled reads of a wait.
const minWaitGap = 10 * time.Millisecond

// waitGroup is the shared wait of the requests of one Guard that found one
// key in flight: one read at a time, at most MaxWaitReads in all, and each
// member answers from what the last read found.
type waitGroup struct {
	mu      sync.Mutex
	end     time.Time                   // no read starts at or after it
	gaps    [MaxWaitReads]time.Duration // before each read, after the previous one
	last    time.Time                   // the start of the last read (of the group before the first)
	reads   int
	reading bool
	wake    bool                // a completion in this process asks for a read now
	rec     *dynamostore.Record // what the last successful read found
	gone    bool                // the last read found no live record
	changed chan struct{}       // closed when a read ends or a wake arrives

	members int // guarded by waiters.mu
}

// waiters are a Guard's wait groups by partition key (scope and key): one
// Guard has one store, so one table, and the partition key never joins two
// scopes.
type waiters struct {
	mu     sync.Mutex
	groups map[string]*waitGroup
}

// join returns the group of pk, begun now for a bound of bound unless it
// exists, as a member.
func (ws *waiters) join(pk string, now time.Time, bound time.Duration, lockExpires time.Time, jitter func() float64) *waitGroup {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w := ws.groups[pk]
	if w == nil {
		w = &waitGroup{end: now.Add(bound), last: now, changed: make(chan struct{})}
		if lockExpires.Before(w.end) {
			w.end = lockExpires
		}
		// Gaps doubling from base add up to the bound: early reads find a
		// short execution done, later ones are rare. Each is jittered
		// down by up to a quarter, so that processes waiting for one key
		// do not read in step.
		base := bound / (1<<MaxWaitReads - 1)
		for i := range w.gaps {
			gap := time.Duration(float64(base<<i) * (1 - jitter()/4))
			w.gaps[i] = max(gap, minWaitGap)
		}
		if ws.groups == nil {
			ws.groups = make(map[string]*waitGroup)
		}
		ws.groups[pk] = w
	}
	w.members++
	return w
}

// leave removes a member; the last one removes the group.
func (ws *waiters) leave(pk string, w *waitGroup) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w.members--; w.members == 0 {
		ws.retire(pk, w)
	}
}

// retire makes w no longer the group of pk, so that a request arriving
// later waits anew. The caller holds ws.mu.
func (ws *waiters) retire(pk string, w *waitGroup) {
	if ws.groups[pk] == w {
		delete(ws.groups, pk)
	}
}

// wake asks the group of pk, if any, to read now: a request of this Guard
// committed or released the key.
func (ws *waiters) wake(pk string) {
	ws.mu.Lock()
	w := ws.groups[pk]
	ws.mu.Unlock()
	if w == nil {
		return
	}
	w.mu.Lock()
	w.wake = true
	w.broadcast()
	w.mu.Unlock()
}

// broadcast wakes every member. The caller holds w.mu.
func (w *waitGroup) broadcast() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// nextRead is when the group's next read is due. The caller holds w.mu.
func (w *waitGroup) nextRead() time.Time {
	if w.wake {
		return time.Time{}
	}
	return w.last.Add(w.gaps[w.reads])
}

// await waits for the duplicate in flight that holds the key of req (first
// is its record, as the claim found it) and answers as a claim after it
// would: a replay of its stored response when it completed with req's
// fingerprint, ErrMismatch when the key now holds another request, and
// the in-flight answer when the wait ends without a completion.
func (g *Guard) await(ctx context.Context, req Request, first *dynamostore.Record, p *probe) (*Result, error) {
	inFlight := &InFlightError{RetryAfter: g.opts.RetryAfter}
	now := g.opts.Now()
	until := now.Add(g.opts.WaitInFlight)
	if d, ok := ctx.Deadline(); ok && d.Add(-WaitDeadlineMargin).Before(until) {
		until = d.Add(-WaitDeadlineMargin)
	}
	if first.LockExpires.Before(until) {
		until = first.LockExpires
	}
	if !now.Before(until) {
		return nil, inFlight
	}
	sleep := waitclock.From(ctx)
	if sleep == nil {
		sleep = g.sleep
	}
	began := time.Now()
	defer func() { p.waited(time.Since(began)) }()

	pk := keyschema.PartitionKey(req.Scope, req.Key)
	jitter := waitclock.JitterFrom(ctx)
	if jitter == nil {
		jitter = rand.Float64
	}
	w := g.waits.join(pk, now, g.opts.WaitInFlight, first.LockExpires, jitter)
	defer g.waits.leave(pk, w)
	for {
		w.mu.Lock()
		res, err, done := g.waitAnswer(w, req)
		now := g.opts.Now()
		if !done && (w.reads >= MaxWaitReads || !now.Before(w.end)) {
			res, err, done = nil, inFlight, true // the group's reads are spent
		}
		if done {
			w.mu.Unlock()
			g.waits.mu.Lock()
			g.waits.retire(pk, w)
			g.waits.mu.Unlock()
			return res, err
		}
		if !now.Before(until) {
			w.mu.Unlock()
			return nil, inFlight
		}
		next := w.nextRead()
		if !w.reading && !now.Before(next) {
			w.reading, w.wake, w.last = true, false, now
			w.reads++
			w.mu.Unlock()
			rec, err := g.waitRead(ctx, req, p)
			w.mu.Lock()
			w.reading = false
			switch {
			case err == nil:
				w.rec = rec
			case errors.Is(err, dynamostore.ErrNotFound):
				w.gone = true
			} // any other error: the next read may succeed
			w.broadcast()
			w.mu.Unlock()
			continue
		}
		wakeAt, reading := until, w.reading
		if !reading {
			wakeAt = minTime(wakeAt, next, w.end)
		}
		changed := w.changed
		w.mu.Unlock()
		sleep(ctx, wakeAt, changed, reading)
		if ctx.Err() != nil {
			return nil, inFlight
		}
	}
}

// waitRead is one read of a wait, bounded by ConfirmTimeout.
func (g *Guard) waitRead(ctx context.Context, req Request, p *probe) (*dynamostore.Record, error) {
	p.call()
	rctx, cancel := context.WithTimeout(ctx, g.opts.ConfirmTimeout)
	defer cancel()
	return g.store.Get(rctx, req.Scope, req.Key)
}

// waitAnswer returns the answer of a member for req from what the group's
// last read found; done is false while the key is still in flight. The
// caller holds w.mu.
func (g *Guard) waitAnswer(w *waitGroup, req Request) (res *Result, err error, done bool) {
	inFlight := &InFlightError{RetryAfter: g.opts.RetryAfter}
	rec := w.rec
	switch {
	case w.gone:
		// Released (the duplicate failed or its response is not stored),
		// or evicted: nothing to replay, and executing in the duplicate's
		// place would be a second attempt the client did not make.
		return nil, inFlight, true
	case rec == nil:
		return nil, nil, false
	case !rec.MatchesFingerprint(req.Fingerprint):
		return nil, ErrMismatch, true
	case rec.State == dynamostore.StateCompleted && rec.Response != nil:
		g.remember(rec)
		return &Result{Response: *rec.Response, Replayed: true, Stored: true}, nil, true
	case rec.State == dynamostore.StateCompleted:
		return nil, inFlight, true
	case rec.LockExpires.Before(g.opts.Now()):
		return nil, inFlight, true // its owner died: a retry claims the key
	}
	return nil, nil, false
}

func minTime(t time.Time, ts ...time.Time) time.Time {
	for _, u := range ts {
		if u.Before(t) {
			t = u
		}
	}
	return t
}
