package multiregion

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
)

// failoverMarker begins with a NUL byte, refused in scopes (with failover)
// and region names, so no request's scope equals a failover scope.
const failoverMarker = "\x00failover@"

// failoverScope returns the scope a failover record of scope is stored under
// in region.
func failoverScope(scope, region string) string { return scope + failoverMarker + region }

// splitFailoverScope inverts failoverScope. ok is false for a scope that is
// not a failover scope.
func splitFailoverScope(stored string) (scope, region string, ok bool) {
	i := strings.IndexByte(stored, 0)
	if i < 0 || !strings.HasPrefix(stored[i:], failoverMarker) {
		return stored, "", false
	}
	region = stored[i+len(failoverMarker):]
	if region == "" || strings.IndexByte(region, 0) >= 0 {
		return stored, "", false
	}
	return stored[:i], region, true
}

// PromotedHeader is the response header with which a failover record
// promoted into its home record is marked: its value is the failover
// record's region and lock token ("eu-west-1 ABC..."), which identify the
// execution. The Store removes it from every record and response it
// returns, and from the responses it commits: handlers cannot set it.
const PromotedHeader = "Idemkey-Promoted-From"

// executionID identifies one execution: the region that claimed the key and
// the claim's random lock token.
func executionID(rec *dynamostore.Record) string { return rec.Region + " " + rec.LockToken }

func withMarker(resp dynamostore.Response, rec *dynamostore.Record) dynamostore.Response {
	h := withoutMarker(resp.Header)
	if h == nil {
		h = http.Header{}
	}
	h.Set(PromotedHeader, executionID(rec))
	resp.Header = h
	return resp
}

// withoutMarker returns h without PromotedHeader, copying it only when it
// has one.
func withoutMarker(h http.Header) http.Header {
	if h.Get(PromotedHeader) == "" && len(h.Values(PromotedHeader)) == 0 {
		return h
	}
	c := h.Clone()
	c.Del(PromotedHeader)
	if len(c) == 0 {
		return nil
	}
	return c
}

// promotedFrom returns the execution a home record was promoted from, or "".
func promotedFrom(rec *dynamostore.Record) string {
	if rec == nil || rec.Response == nil {
		return ""
	}
	return rec.Response.Header.Get(PromotedHeader)
}

// userView returns rec as callers see it: under the request's scope, and
// without the promotion marker. rec itself is not modified.
func userView(rec *dynamostore.Record) *dynamostore.Record {
	if rec == nil {
		return nil
	}
	scope, _, isFailover := splitFailoverScope(rec.Scope)
	marked := rec.Response != nil && rec.Response.Header.Get(PromotedHeader) != ""
	if !isFailover && !marked {
		return rec
	}
	c := *rec
	c.Scope = scope
	if marked {
		r := *rec.Response
		r.Header = withoutMarker(r.Header)
		c.Response = &r
	}
	return &c
}

func userClaim(c *dynamostore.Claim) *dynamostore.Claim {
	if c == nil {
		return nil
	}
	return &dynamostore.Claim{Result: c.Result, Record: userView(c.Record)}
}

// checkScope refuses scopes that could collide with failover scopes or not
// fit with the failover suffix (HomeRegion mode with failover).
func (s *Store) checkScope(scope string) error {
	if !s.fenced() {
		return nil
	}
	if strings.IndexByte(scope, 0) >= 0 {
		return fmt.Errorf("%w: scope holds a NUL byte, reserved for failover records", dynamostore.ErrInvalidRequest)
	}
	if len(scope) > s.scopeRoom {
		return fmt.Errorf("%w: scope longer than %d bytes (room is kept for the failover suffix)", dynamostore.ErrInvalidRequest, s.scopeRoom)
	}
	return nil
}

// homeClaim is Claim in HomeRegion mode.
func (s *Store) homeClaim(ctx context.Context, req idemkey.Request) (*dynamostore.Claim, error) {
	if err := s.checkScope(req.Scope); err != nil {
		return nil, err
	}
	order := s.order(req.Scope, req.Key)
	home := order[0]
	c, err := home.store.Claim(ctx, req)
	if err == nil {
		if c.Result == dynamostore.Acquired && s.fenced() {
			// Every region of the order, the home included: before a
			// change of topology the home may have been a failover
			// region of the key.
			names := make([]string, 0, len(order))
			for _, x := range order {
				names = append(names, x.name)
			}
			return s.fenceCheck(ctx, req, home, names, c)
		}
		return userClaim(c), nil
	}
	if !unavailable(ctx, err) {
		return nil, err
	}
	if !s.opts.Failover || len(order) == 1 {
		s.observe(Event{Kind: EventFailClosed, Scope: req.Scope, Key: req.Key, Home: home.name, Region: home.name, Err: err})
		return nil, &RegionError{Regions: []string{home.name}, Err: err}
	}
	tried := []string{home.name}
	for _, r := range order[1:] {
		tried = append(tried, r.name)
		fc, ferr := s.failoverClaim(ctx, req, order, r)
		if ferr == nil {
			s.observe(Event{Kind: EventFailover, Scope: req.Scope, Key: req.Key, Home: home.name, Region: r.name, Err: err})
			return fc, nil
		}
		var closed *RegionError
		if errors.As(ferr, &closed) || !unavailable(ctx, ferr) {
			return nil, ferr // r decided to fail closed, or a real fault
		}
		err = ferr
	}
	s.observe(Event{Kind: EventFailClosed, Scope: req.Scope, Key: req.Key, Home: home.name, Region: tried[len(tried)-1], Err: err})
	return nil, &RegionError{Regions: tried, Err: err}
}

// failoverClaim claims req's key in r, not its home, after looking in r for
// a record that decides the request: the home record, then the other
// regions' failover records, as replicated into r (an abandoned one is
// retired where it was written, or the request fails closed). Only then
// does it claim r's failover record, which only r writes.
func (s *Store) failoverClaim(ctx context.Context, req idemkey.Request, order []*region, r *region) (*dynamostore.Claim, error) {
	type source struct {
		writer *region
		scope  string
	}
	sources := []source{{order[0], req.Scope}}
	for _, x := range order {
		if x != r {
			sources = append(sources, source{x, failoverScope(req.Scope, x.name)})
		}
	}
	for _, src := range sources {
		rec, err := r.store.Get(ctx, src.scope, req.Key)
		if errors.Is(err, dynamostore.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out, ok := decideExisting(rec, req, r.store.Options().Now())
		if !ok {
			retired, rerr := s.retire(ctx, req, src.writer, src.scope)
			switch {
			case unavailable(ctx, rerr):
				s.observe(Event{Kind: EventFailClosed, Scope: req.Scope, Key: req.Key, Home: order[0].name, Region: src.writer.name, Err: rerr})
				return nil, &RegionError{Regions: []string{src.writer.name, r.name}, Err: rerr}
			case rerr != nil:
				return nil, rerr
			case retired.Result == dynamostore.Acquired:
				s.observe(Event{Kind: EventRetired, Scope: req.Scope, Key: req.Key, Home: order[0].name, Region: src.writer.name})
				continue
			}
			out, rec = retired.Result, retired.Record
		}
		return &dynamostore.Claim{Result: out, Record: userView(rec)}, nil
	}
	fr := req
	fr.Scope = failoverScope(req.Scope, r.name)
	c, err := r.store.Claim(ctx, fr)
	if err != nil {
		return nil, err
	}
	return userClaim(c), nil
}

// decideExisting classifies a live record found in another region against
// req, as a claim would: Mismatch for another fingerprint, InFlight for a
// live lock, Replay when completed. ok is false for an in-progress record
// whose lock ran out: its owner died, and it decides nothing.
func decideExisting(rec *dynamostore.Record, req idemkey.Request, now time.Time) (dynamostore.ClaimResult, bool) {
	switch {
	case !rec.MatchesFingerprint(req.Fingerprint):
		return dynamostore.Mismatch, true
	case rec.State == dynamostore.StateCompleted && rec.Response != nil:
		return dynamostore.Replay, true
	case rec.State == dynamostore.StateInProgress && rec.LockExpires.After(now):
		return dynamostore.InFlight, true
	}
	return 0, false
}

// fenceCheck runs after a claim acquired in the home h with the fence on:
// each region of others may hold a failover record of the key, read where
// it was written (its only writer) in parallel, or in h's replica when the
// writer cannot be read (EventFenceFromReplica) or has no client here. A
// completed record is promoted and replayed; one in flight or another
// request's releases the claim and answers InFlight or Mismatch; an
// abandoned one is retired (EventRetired); none in h's replica is the
// stated risk (EventFenceCheckSkipped). When nothing can be established,
// the claim is released and the request fails closed with a *RegionError.
func (s *Store) fenceCheck(ctx context.Context, req idemkey.Request, h *region, others []string, home *dynamostore.Claim) (*dynamostore.Claim, error) {
	type read struct {
		rec *dynamostore.Record
		err error
	}
	reads := make([]read, len(others))
	var wg sync.WaitGroup
	for i, name := range others {
		x := s.byName[name]
		if x == nil {
			// No client for the writer (a region of the other topology
			// this process does not list): as unreachable, the home
			// replica decides.
			reads[i] = read{err: &dynamostore.StoreError{Op: "GetItem", Err: fmt.Errorf("%w: %q", ErrRegionNotConfigured, name)}}
			continue
		}
		wg.Go(func() {
			rec, err := x.store.Get(ctx, failoverScope(req.Scope, x.name), req.Key)
			reads[i] = read{rec, err}
		})
	}
	wg.Wait()
	event := func(kind EventKind, x string, err error) Event {
		return Event{Kind: kind, Scope: req.Scope, Key: req.Key, Home: h.name, Region: x, Err: err}
	}
	closed := func(x string, err error) (*dynamostore.Claim, error) {
		_ = h.store.Release(ctx, home) // best effort: the lock expires after its lease
		s.observe(event(EventFailClosed, x, err))
		return nil, &RegionError{Regions: []string{x, h.name}, Err: err}
	}
	for i, x := range others {
		rec, err := reads[i].rec, reads[i].err
		fromReplica := false
		if unavailable(ctx, err) {
			// A region this process does not list is read this way on
			// every claim of a change: it is not reported, as it says
			// nothing about that region's health.
			unlisted := s.byName[x] == nil
			if !unlisted {
				s.observe(event(EventFenceFromReplica, x, err))
			}
			fromReplica = true
			if rec, err = h.store.Get(ctx, failoverScope(req.Scope, x), req.Key); errors.Is(err, dynamostore.ErrNotFound) {
				if !unlisted {
					s.observe(event(EventFenceCheckSkipped, x, reads[i].err))
				}
				continue
			}
		}
		switch {
		case errors.Is(err, dynamostore.ErrNotFound):
			continue
		case unavailable(ctx, err):
			return closed(x, err)
		case err != nil:
			_ = h.store.Release(ctx, home)
			return nil, err
		}
		out, ok := decideExisting(rec, req, h.store.Options().Now())
		if !ok {
			if fromReplica {
				return closed(x, reads[i].err)
			}
			retired, rerr := s.retire(ctx, req, s.byName[x], failoverScope(req.Scope, x))
			switch {
			case unavailable(ctx, rerr):
				return closed(x, rerr)
			case rerr != nil:
				_ = h.store.Release(ctx, home)
				return nil, rerr
			case retired.Result == dynamostore.Acquired:
				s.observe(event(EventRetired, x, nil))
				continue
			}
			out, rec = retired.Result, retired.Record
		}
		if out == dynamostore.Replay {
			if _, err := h.store.Commit(ctx, home, withMarker(*rec.Response, rec), nil); err != nil {
				_ = h.store.Release(ctx, home) // best effort: a later claim retries the promotion
			} else {
				s.observe(event(EventPromoted, x, nil))
			}
		} else {
			_ = h.store.Release(ctx, home) // best effort: the lock expires after its lease
		}
		return &dynamostore.Claim{Result: out, Record: userView(rec)}, nil
	}
	return userClaim(home), nil
}

// retire takes over the abandoned record of req's key under scope in x, its
// writer: the claim replaces the lock token, so the stalled owner's commit
// writes nothing, and is then released. A completed or live record found
// instead decides the request.
func (s *Store) retire(ctx context.Context, req idemkey.Request, x *region, scope string) (*dynamostore.Claim, error) {
	fr := req
	fr.Scope = scope
	c, err := x.store.Claim(ctx, fr)
	if err != nil || c.Result != dynamostore.Acquired {
		return c, err
	}
	_ = x.store.Release(ctx, c)
	return c, nil
}

// claimRegion returns the region holding c and c as that region's store
// knows it (under the failover scope for a failover claim).
func (s *Store) claimRegion(c *dynamostore.Claim) (*region, *dynamostore.Claim, error) {
	if c == nil || c.Record == nil {
		return nil, nil, fmt.Errorf("%w: no claim", dynamostore.ErrInvalidRequest)
	}
	r := s.byName[c.Record.Region]
	if r == nil {
		return nil, nil, fmt.Errorf("%w: %q", ErrUnknownRegion, c.Record.Region)
	}
	scope, _, _ := splitFailoverScope(c.Record.Scope)
	rec := *c.Record
	rec.Scope = scope
	if home := s.order(scope, rec.Key)[0]; home != r {
		rec.Scope = failoverScope(scope, r.name)
	}
	return r, &dynamostore.Claim{Result: c.Result, Record: &rec}, nil
}

// homeGet is Get in HomeRegion mode.
func (s *Store) homeGet(ctx context.Context, scope, key string) (*dynamostore.Record, error) {
	order := s.order(scope, key)
	rec, err := order[0].store.Get(ctx, scope, key)
	switch {
	case err == nil:
		return userView(rec), nil
	case !s.fenced():
		if unavailable(ctx, err) {
			return nil, &RegionError{Regions: []string{order[0].name}, Err: err}
		}
		return nil, err
	case errors.Is(err, dynamostore.ErrNotFound):
		names := make([]string, len(order))
		for i, x := range order {
			names[i] = x.name
		}
		return s.failoverGet(ctx, scope, key, order[0], names)
	case !unavailable(ctx, err):
		return nil, err
	}
	tried := []string{order[0].name}
	reached := false
	for _, r := range order[1:] {
		tried = append(tried, r.name)
		for _, sc := range []string{scope, failoverScope(scope, r.name)} {
			rec, gerr := r.store.Get(ctx, sc, key)
			switch {
			case gerr == nil:
				return userView(rec), nil
			case errors.Is(gerr, dynamostore.ErrNotFound):
				reached = true
			default:
				err = gerr
			}
		}
	}
	if reached {
		return nil, dynamostore.ErrNotFound
	}
	return nil, &RegionError{Regions: tried, Err: err}
}

// failoverGet returns the first live failover record of (scope, key) in
// names, read as fenceCheck reads them; dynamostore.ErrNotFound when none
// holds one, a *RegionError when one could be read neither way.
func (s *Store) failoverGet(ctx context.Context, scope, key string, h *region, names []string) (*dynamostore.Record, error) {
	var undecided error
	for _, name := range names {
		fs := failoverScope(scope, name)
		err := error(&dynamostore.StoreError{Op: "GetItem", Err: fmt.Errorf("%w: %q", ErrRegionNotConfigured, name)})
		if x := s.byName[name]; x != nil {
			var rec *dynamostore.Record
			if rec, err = x.store.Get(ctx, fs, key); err == nil {
				return userView(rec), nil
			}
		}
		if errors.Is(err, dynamostore.ErrNotFound) {
			continue
		}
		if !unavailable(ctx, err) {
			return nil, err
		}
		rec, rerr := h.store.Get(ctx, fs, key)
		switch {
		case rerr == nil:
			return userView(rec), nil
		case errors.Is(rerr, dynamostore.ErrNotFound):
		case unavailable(ctx, rerr):
			undecided = &RegionError{Regions: []string{name, h.name}, Err: rerr}
		default:
			return nil, rerr
		}
	}
	if undecided != nil {
		return nil, undecided
	}
	return nil, dynamostore.ErrNotFound
}
