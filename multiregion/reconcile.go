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
// Region.Scanner, filtered on the failover marker) and compares each with
// the key's home record, read in the home region. It follows the table's
// topology record, read as Claim reads it (a configuration the record
// contradicts gets a *ConfigError matching ErrTopologyMismatch): a key's
// home is its home under the record's active topology, and each region is
// asked for the failover records it wrote itself and, for the keys it
// homes, for those of regions the Store has no client for (a region
// removed, or being removed, from the topology: its records are read in
// the home's replica). While
// the record changes, a key whose two topologies home it in different
// regions is left Pending: run Reconcile again once the change is
// finished.
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
// next run. Each Scan returns every failover record of its region's
// replica (the filter cannot name the regions a region answers for): the
// read capacity is the full table's either way. Errors: ErrInvalidConfig
// outside HomeRegion mode, ErrNoScanner, those of CheckTopology (a
// *ConfigError matching ErrTopologyMismatch, a *RegionError when no
// region's record can be read), and failures of the home reads other than
// unreachability.
func (s *Store) Reconcile(ctx context.Context) (*ReconcileReport, error) {
	if s.opts.Mode != HomeRegion {
		return nil, &ConfigError{Mode: s.opts.Mode, Field: "Mode", Reason: "Reconcile applies to HomeRegion mode only", Err: ErrInvalidConfig}
	}
	for _, r := range s.regions {
		if r.scanner == nil {
			return nil, fmt.Errorf("%w: region %q", ErrNoScanner, r.name)
		}
	}
	rec, err := s.topology(ctx)
	if err != nil {
		return nil, err
	}
	ts := []Topology{s.configured()}
	if rec != nil {
		ts = []Topology{rec.Active}
		if rec.Consulted != nil {
			ts = append(ts, *rec.Consulted)
		}
	}
	type ref struct{ scope, key string }
	found := map[ref][]failoverCopy{}
	rep := &ReconcileReport{}
	for _, r := range s.regions {
		copies, err := s.listFailover(ctx, r, ts)
		if err != nil {
			rep.Unreachable = append(rep.Unreachable, r.name)
			continue
		}
		for _, c := range copies {
			k := ref{c.scope, c.key}
			found[k] = append(found[k], c)
		}
	}
	refs := make([]ref, 0, len(found))
	for k := range found {
		refs = append(refs, k)
	}
	slices.SortFunc(refs, func(a, b ref) int { return cmp.Or(strings.Compare(a.scope, b.scope), strings.Compare(a.key, b.key)) })
	for _, k := range refs {
		if err := s.reconcileKey(ctx, ts, k.scope, k.key, found[k], rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// failoverCopy is a failover record of (scope, key) that writer wrote, to
// be read in reader's replica.
type failoverCopy struct {
	scope, key, writer string
	reader             *region
}

// listFailover returns the failover records r answers for under the
// topologies ts (one, or the two of a change): those r wrote, and those of
// a region the Store has no client for whose key r homes under ts[0].
func (s *Store) listFailover(ctx context.Context, r *region, ts []Topology) ([]failoverCopy, error) {
	var out []failoverCopy
	table := r.store.Table()
	ks := keyschema.Schema(r.store.Options().Schema)
	projection, names := ks.KeyProjection()
	in := &dynamodb.ScanInput{
		TableName:                &table,
		FilterExpression:         aws.String("contains(#pk, :marker)"),
		ProjectionExpression:     aws.String(projection),
		ExpressionAttributeNames: names,
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":marker": &types.AttributeValueMemberS{Value: failoverMarker},
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
			// The filter is only a prefilter: keep exactly the records r
			// answers for.
			scope, writer, ok := splitFailoverScope(stored)
			if ok && (writer == r.name || (s.byName[writer] == nil && ts[0].Home(scope, key) == r.name)) {
				out = append(out, failoverCopy{scope: scope, key: key, writer: writer, reader: r})
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

func (s *Store) reconcileKey(ctx context.Context, ts []Topology, scope, key string, copies []failoverCopy, rep *ReconcileReport) error {
	name := strconv.Quote(scope) + "/" + strconv.Quote(key)
	home := s.byName[ts[0].Home(scope, key)]
	if home == nil || (len(ts) > 1 && ts[1].Home(scope, key) != home.name) {
		// Two homes while the record changes, or a home this process has
		// no client for: decided once the change is finished.
		rep.Pending = append(rep.Pending, name)
		return nil
	}
	var done []*dynamostore.Record
	for _, c := range copies {
		r := c.reader
		rec, err := r.store.Get(ctx, failoverScope(scope, c.writer), key)
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
		case c.Result == dynamostore.Acquired:
			if cur, err = home.store.Commit(ctx, c, withMarker(*first.Response, first), nil); err != nil {
				_ = home.store.Release(ctx, c)
				rep.Pending = append(rep.Pending, name)
				return nil
			}
			rep.Promoted++
			s.observe(Event{Kind: EventPromoted, Scope: scope, Key: key, Home: home.name, Region: first.Region})
		case c.Result == dynamostore.InFlight:
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
