package multiregion

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/keyschema"
)

// TwoRegionExecution is a key that executed more than once: in its home
// region and during a failover, or in two failover regions. Each of those
// executions committed its response and its staged effects in the region it
// ran in; they are duplicates to reconcile (a refund, a cancellation).
type TwoRegionExecution struct {
	Scope, Key string
	// Home is the key's home region.
	Home string
	// HomeRecord is the key's record in its home region: the execution
	// that answers retries from now on. Its Region says where it ran; it is
	// a promoted failover record when PromotedFrom is set.
	HomeRecord *dynamostore.Record
	// PromotedFrom identifies the failover execution HomeRecord was
	// promoted from ("<region> <lock token>"), or is empty when HomeRecord
	// executed in the home region itself.
	PromotedFrom string
	// Others are the completed failover records of executions that are not
	// HomeRecord's. Each one's Region is where it ran.
	Others []*dynamostore.Record
}

// Regions returns the regions the key executed in, home record first.
func (t TwoRegionExecution) Regions() []string {
	origin := t.HomeRecord.Region
	if t.PromotedFrom != "" {
		origin, _, _ = strings.Cut(t.PromotedFrom, " ")
	}
	out := []string{origin}
	for _, r := range t.Others {
		out = append(out, r.Region)
	}
	return out
}

// ReconcileReport is the result of Reconcile.
type ReconcileReport struct {
	// FailoverRecords is how many live failover records were found.
	FailoverRecords int
	// Promoted is how many failover records were copied into an absent
	// home record.
	Promoted int
	// Pending lists keys that could not be decided yet: a record still in
	// progress under a live lock, or a region that could not be read. Run
	// Reconcile again later.
	Pending []string
	// Unreachable lists regions whose failover records could not be listed;
	// their keys are not in the report.
	Unreachable []string
	// TwoRegion lists every key that executed more than once, sorted by
	// scope and key.
	TwoRegion []TwoRegionExecution
}

// Reconcile checks the fence of HomeRegion mode: it lists every live
// failover record (a full Scan of each region's key table, through
// Region.Scanner, filtered on the failover marker; each region is asked
// only for the records it wrote itself) and compares each with the key's
// home record, read in the home region.
//
//   - No live home record: the failover execution is promoted into the
//     home key (a claim in the home region, whose condition holds only
//     while the key is absent, expired or abandoned, and a commit of the
//     failover record's response marked with its execution). Retries are
//     answered from the home region from then on.
//   - A home record promoted from this failover execution: nothing to do.
//   - A home record of any other execution: the key executed twice. It is
//     reported in TwoRegion and to the Observer (EventTwoRegionExecution).
//
// A failover record in progress under a live lock, or a home record in
// progress, leaves the key Pending; one whose lock ran out is an abandoned
// claim, whose effects were never committed, and is ignored (should its
// owner still commit it, the next Reconcile reports it).
//
// Reconcile is safe to run at any time and from several processes; it
// writes only through claims and fenced commits. It reports the same keys
// again on every run until their records expire (retention): run it when
// the home region is reachable again after a failover, and on demand. A
// failover record written after Reconcile listed the records is seen by the
// next run. Errors: ErrInvalidConfig outside HomeRegion mode, ErrNoScanner,
// and failures of the home reads other than unreachability.
func (s *Store) Reconcile(ctx context.Context) (*ReconcileReport, error) {
	if s.opts.Mode != HomeRegion {
		return nil, &ConfigError{Mode: s.opts.Mode, Field: "Mode", Reason: "Reconcile applies to HomeRegion mode only", Err: ErrInvalidConfig}
	}
	for _, r := range s.regions {
		if r.scanner == nil {
			return nil, fmt.Errorf("%w: region %q", ErrNoScanner, r.name)
		}
	}
	type ref struct{ scope, key string }
	found := map[ref][]*region{}
	rep := &ReconcileReport{}
	for _, r := range s.regions {
		keys, err := s.listFailover(ctx, r)
		if err != nil {
			rep.Unreachable = append(rep.Unreachable, r.name)
			continue
		}
		for _, k := range keys {
			found[ref{k[0], k[1]}] = append(found[ref{k[0], k[1]}], r)
		}
	}
	refs := make([]ref, 0, len(found))
	for k := range found {
		refs = append(refs, k)
	}
	slices.SortFunc(refs, func(a, b ref) int { return cmp.Or(strings.Compare(a.scope, b.scope), strings.Compare(a.key, b.key)) })
	for _, k := range refs {
		if err := s.reconcileKey(ctx, k.scope, k.key, found[k], rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// listFailover returns the (scope, key) of every failover record r wrote.
func (s *Store) listFailover(ctx context.Context, r *region) ([][2]string, error) {
	var out [][2]string
	table := r.store.Table()
	ks := keyschema.Schema(r.store.Options().Schema)
	projection, names := ks.KeyProjection()
	in := &dynamodb.ScanInput{
		TableName:                &table,
		FilterExpression:         aws.String("contains(#pk, :marker)"),
		ProjectionExpression:     aws.String(projection),
		ExpressionAttributeNames: names,
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":marker": &types.AttributeValueMemberS{Value: failoverMarker + r.name},
		},
		ConsistentRead: aws.Bool(true),
	}
	for {
		page, err := r.scanner.Scan(ctx, in)
		if err != nil {
			return nil, &dynamostore.StoreError{Op: "Scan", Err: err}
		}
		for _, item := range page.Items {
			pk, ok := ks.InNamespace(item)
			if !ok {
				continue
			}
			stored, key, ok := ks.Parse(pk)
			if !ok {
				continue
			}
			// The filter is only a prefilter: keep exactly r's own records.
			if scope, reg, ok := splitFailoverScope(stored); ok && reg == r.name {
				out = append(out, [2]string{scope, key})
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

func (s *Store) reconcileKey(ctx context.Context, scope, key string, regions []*region, rep *ReconcileReport) error {
	name := strconv.Quote(scope) + "/" + strconv.Quote(key)
	var done []*dynamostore.Record
	for _, r := range regions {
		rec, err := r.store.Get(ctx, failoverScope(scope, r.name), key)
		switch {
		case errors.Is(err, dynamostore.ErrNotFound):
			continue // expired or released since the scan
		case err != nil:
			rep.Pending = append(rep.Pending, name)
			return nil
		}
		rep.FailoverRecords++
		switch {
		case rec.State == dynamostore.StateCompleted:
			done = append(done, rec)
		case rec.LockExpires.After(r.store.Options().Now()):
			rep.Pending = append(rep.Pending, name)
			return nil
		}
	}
	if len(done) == 0 {
		return nil
	}
	slices.SortFunc(done, func(a, b *dynamostore.Record) int { return a.Completed.Compare(b.Completed) })
	home := s.order(scope, key)[0]
	cur, err := home.store.Get(ctx, scope, key)
	switch {
	case errors.Is(err, dynamostore.ErrNotFound):
		cur = nil
	case unavailable(ctx, err):
		rep.Pending = append(rep.Pending, name)
		return nil
	case err != nil:
		return err
	}
	if cur != nil && cur.State == dynamostore.StateInProgress {
		if cur.LockExpires.After(home.store.Options().Now()) {
			rep.Pending = append(rep.Pending, name)
			return nil
		}
		cur = nil // abandoned: the promotion's claim reclaims it
	}
	if cur == nil {
		first := done[0]
		c, err := home.store.Claim(ctx, idemkey.Request{Scope: scope, Key: key, Method: first.Method, Path: first.Path, Fingerprint: first.Fingerprint})
		switch {
		case unavailable(ctx, err):
			rep.Pending = append(rep.Pending, name)
			return nil
		case err != nil:
			return err
		case c.Outcome == dynamostore.Acquired:
			if cur, err = home.store.Commit(ctx, c, withMarker(*first.Response, first), nil); err != nil {
				_ = home.store.Release(ctx, c)
				rep.Pending = append(rep.Pending, name)
				return nil
			}
			rep.Promoted++
			s.observe(Event{Kind: EventPromoted, Scope: scope, Key: key, Home: home.name, Region: first.Region})
		case c.Outcome == dynamostore.InFlight:
			rep.Pending = append(rep.Pending, name)
			return nil
		default:
			cur = c.Record // written under us: compare with it
		}
	}
	origin := promotedFrom(cur)
	var others []*dynamostore.Record
	for _, rec := range done {
		if origin != executionID(rec) {
			others = append(others, userView(rec))
		}
	}
	if len(others) == 0 {
		return nil
	}
	t := TwoRegionExecution{Scope: scope, Key: key, Home: home.name, HomeRecord: userView(cur), PromotedFrom: origin, Others: others}
	rep.TwoRegion = append(rep.TwoRegion, t)
	for _, o := range others {
		s.observe(Event{Kind: EventTwoRegionExecution, Scope: scope, Key: key, Home: home.name, Region: o.Region})
	}
	return nil
}
