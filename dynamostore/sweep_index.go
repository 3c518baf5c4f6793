package dynamostore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey/internal/keyschema"
)

// SweepMode is how a Sweeper finds the records it deletes.
//
// SweepScan reads every item of the table with a parallel Scan: a run
// costs half a read unit per 4 KB of the whole table (live records and a
// shared table's other items included), however few records expired. It
// needs nothing but the table, and suits small tables.
//
// SweepIndex reads the expiry index (ExpiryIndexName, created by
// EnsureExpiryIndex) with Query: per shard, the records whose exp passed,
// oldest first, and the one record that expires next. A run costs read
// units in proportion to the expired records it reads, plus two queries
// per shard, whatever the number of live records; the index costs writes
// (see EnsureExpiryIndex). A stuck record (in progress, lock expired, exp
// ahead) is read only once its exp passes, and is then evicted; SweepScan
// reclaims it as soon as its lock expires. Nothing waits for it meanwhile:
// a retry of its key takes over the expired lock.
//
// A record without ExpiryBucketAttribute (written before the index
// existed, or by a Store without Options.ExpiryIndex) is not in the index.
// A sweep in SweepIndex mode therefore also scans the table for such
// records (a Scan filtered on the attribute's absence, charged and rate
// limited for every item it reads), unless a scan that found none started
// within UnindexedScanInterval. It decides each as SweepScan does and
// counts it as SweepReport.Unindexed. The scan is one more part of the
// sweep, paged, budgeted and resumed with the shards; it spans passes in
// the cursor. A whole scan that finds none is noted in an item of the
// table ("#expiry-index-complete", or with "/" and the Region, in the
// schema's namespace as Resume's cursor item is). Records are never
// rewritten to put them in the index: set Options.ExpiryIndex on every
// Store of the table.
//
// Both modes delete with the same conditional deletes: a record claimed
// again, completed or deleted since it was read survives and counts as
// skipped.
type SweepMode string

const (
	// SweepScan reads the whole table; the zero Mode selects it.
	SweepScan SweepMode = "scan"
	// SweepIndex reads the expiry index.
	SweepIndex SweepMode = "index"
)

// ErrSweepSchema reports a sweep in SweepIndex mode whose
// SweepOptions.Schema is not the Stores': a whole pass read no entry of
// its buckets (see ExpiryBucket) while the index holds entries of others.
// Such a sweep would evict nothing. The message names the sweep's Prefix
// and the bucket found. On a table shared by several schemas, a sweep of
// one whose records are not yet in the index gets it too.
var ErrSweepSchema = errors.New("dynamostore: the sweep's key schema is not the one of the table's records")

// ErrExpiryIndex reports a table whose expiry index is missing, neither
// ACTIVE nor UPDATING, or not the one EnsureExpiryIndex creates (another
// key schema or projection). The message names the table, the index and
// what is wrong.
var ErrExpiryIndex = errors.New("dynamostore: expiry index missing or unfit")

// indexPhase is the query a shard's sweep stands at, in this order.
type indexPhase byte

const (
	// phaseExpired reads the shard's records whose exp passed.
	phaseExpired indexPhase = iota
	// phaseNext reads the record that expires next (with a Region, the
	// next this sweep may delete, in growing pages).
	phaseNext
	// phaseDone: the shard is swept.
	phaseDone
)

// indexProjectedAttributes are the non-key attributes the expiry index
// projects: those a sweep reads that no commit changes, so that a commit
// leaves the entry as it is. The marker is projected on every schema so
// that one index definition fits all.
var indexProjectedAttributes = []string{attrCreated, attrLockExp, attrRegion, keyschema.Marker}

// indexProjection returns the projection of a Query of the index.
func (l *layout) indexProjection() (string, map[string]string) {
	return l.withRecordKey("#pk, #exp, #created, #lock_exp, #region", map[string]string{
		"#pk": l.PartitionKey, "#exp": l.TTLAttribute, "#created": attrCreated,
		"#lock_exp": attrLockExp, "#region": attrRegion,
	})
}

// indexQuery returns the Query of one page of at most limit entries of
// shard's phase, at now.
func (l *layout) indexQuery(table string, shard int, phase indexPhase, now time.Time, limit int,
	after map[string]types.AttributeValue) *dynamodb.QueryInput {
	proj, names := l.indexProjection()
	names["#bucket"] = ExpiryBucketAttribute
	cond := "#bucket = :bucket AND #exp < :now_s"
	if phase == phaseNext {
		cond = "#bucket = :bucket AND #exp >= :now_s"
	}
	values := map[string]types.AttributeValue{
		":bucket": attrS(l.Namespaced(bucketValue(shard))),
		":now_s":  attrN(now.Unix()),
	}
	return &dynamodb.QueryInput{
		TableName:                 &table,
		IndexName:                 aws.String(ExpiryIndexName),
		KeyConditionExpression:    aws.String(cond),
		ProjectionExpression:      aws.String(proj),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		Limit:                     aws.Int32(int32(min(limit, 1<<30))),
		ExclusiveStartKey:         after,
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	}
}

// indexParse reads an index entry, which holds no state nor lock token.
func (l *layout) indexParse(item map[string]types.AttributeValue) (f sweepFields, ok bool) {
	if f.pk, f.exp, f.created, f.region, ok = l.sweepKeyFields(item); !ok {
		return f, false
	}
	var err error
	if f.lockExp, err = getN(item, attrLockExp); err != nil {
		return f, false
	}
	return f, true
}

// indexItem decides one index entry and evicts its record if expired; an
// entry under a live lock is live (the eviction's condition checks again).
func (r *sweepRun) indexItem(ctx context.Context, now time.Time, item map[string]types.AttributeValue, t *sweepTally) {
	l := r.s.layout
	f, ok := l.indexParse(item)
	region := r.writer(f)
	switch {
	case !ok:
		t.foreign++
	case r.leaves(ctx, now, f, t):
	case f.exp < now.Unix() && f.lockExp < now.UnixMilli():
		t.lag = max(t.lag, now.Sub(time.Unix(f.exp, 0)))
		r.remove(ctx, t, &t.evicted, "evict", f.pk, inRegion(l.evictInput(r.s.table, f.pk, now), region))
	default:
		t.live++
		t.oldestLive = max(t.oldestLive, now.Sub(time.UnixMilli(f.created)))
	}
}

// The parts of an index sweep: the shards, then unindexedPart, the scan
// for the records outside the index.
const (
	unindexedPart = ExpiryIndexShards
	indexParts    = ExpiryIndexShards + 1
)

// sweepIndex is Sweep in SweepIndex mode.
func (s *Sweeper) sweepIndex(ctx context.Context, cursor string) (*SweepReport, error) {
	start := s.opts.Now()
	cur := &indexCursor{Table: s.table, Region: s.opts.Region}
	if cursor != "" {
		var err error
		if cur, err = decodeIndexCursor(cursor, s.table, s.opts.Region); err != nil {
			return nil, err
		}
	}
	if ctx.Err() == nil {
		if err := s.checkIndex(ctx); err != nil {
			return nil, err
		}
	}
	run := s.newRun(ctx, start)
	// The shards, the unindexed scan, and the note's calls.
	tallies := make([]sweepTally, ExpiryIndexShards+2)
	scan, note := &tallies[unindexedPart], &tallies[unindexedPart+1]
	note.done = true
	if cur.Unindexed == unindexedNone && ctx.Err() == nil && s.unindexedDue(ctx, start, note) {
		cur.Unindexed, cur.UnindexedAfter, cur.UnindexedSince = unindexedClean, nil, start.UnixMilli()
	}
	// The parts left, in turn from cur.Next, so that every part is served.
	var order []int
	for i := range indexParts {
		switch part := (cur.Next + i) % indexParts; {
		case part == unindexedPart && cur.Unindexed == unindexedNone:
			scan.done = true
		case part < unindexedPart && cur.Shards[part].Phase == phaseDone:
			tallies[part] = sweepTally{done: true, phase: phaseDone}
		default:
			order = append(order, part)
		}
	}
	pending := make(chan int, len(order))
	for _, part := range order {
		pending <- part
	}
	close(pending)
	var wg sync.WaitGroup
	for range min(s.opts.Segments, max(len(pending), 1)) {
		wg.Go(func() {
			for part := range pending {
				if part == unindexedPart {
					*scan = run.segment(ctx, 0, 1, sweepKeyFromCursor(cur.UnindexedAfter), true)
					continue
				}
				pos := cur.Shards[part]
				tallies[part] = run.indexShard(ctx, part, pos.Phase, sweepKeyFromCursor(pos.After))
			}
		})
	}
	wg.Wait()

	seen := cur.Seen
	for _, t := range tallies[:ExpiryIndexShards] {
		seen = seen || t.scanned > 0
	}
	var schemaErr error
	if !seen && ctx.Err() == nil && allDone(tallies[:ExpiryIndexShards]) {
		schemaErr = s.checkBuckets(ctx, note)
	}
	found := cur.Unindexed == unindexedFound || scan.unindexed > 0
	if cur.Unindexed != unindexedNone && scan.done {
		s.unindexedDone(ctx, cur.UnindexedSince, found, note)
	}
	report, err := s.report(start, s.opts.Segments, tallies)
	// The pass is the shards'; the unindexed scan spans passes.
	if report.Finished = allDone(tallies[:ExpiryIndexShards]); report.Finished {
		report.StoppedBy = ""
	}
	next := &indexCursor{Table: s.table, Region: s.opts.Region, Next: cur.Next}
	for _, part := range order {
		if tallies[part].pages > 0 {
			next.Next = (part + 1) % indexParts // after the last part served
		}
	}
	if !report.Finished {
		next.Seen = seen
		for shard, t := range tallies[:ExpiryIndexShards] {
			next.Shards[shard].Phase = t.phase
			if after, ok := sweepKeyToCursor(t.after); ok && len(after) > 0 && t.phase != phaseDone {
				next.Shards[shard].After = after
			}
		}
	}
	if cur.Unindexed != unindexedNone && !scan.done {
		next.Unindexed, next.UnindexedSince = unindexedClean, cur.UnindexedSince
		if found {
			next.Unindexed = unindexedFound
		}
		if after, ok := sweepKeyToCursor(scan.after); ok && len(after) > 0 {
			next.UnindexedAfter = after
		}
	}
	if !report.Finished || next.Unindexed != unindexedNone {
		report.Cursor = next.encode()
	}
	return s.conclude(ctx, report, tallies, cmp.Or(err, schemaErr))
}

func allDone(tallies []sweepTally) bool {
	for _, t := range tallies {
		if !t.done {
			return false
		}
	}
	return true
}

// checkBuckets, after a pass that read none of the sweep's buckets, reads
// one index entry and returns ErrSweepSchema when it is of another bucket.
func (s *Sweeper) checkBuckets(ctx context.Context, t *sweepTally) error {
	out, err := s.client.Scan(ctx, &dynamodb.ScanInput{
		TableName:                &s.table,
		IndexName:                aws.String(ExpiryIndexName),
		Limit:                    aws.Int32(1),
		ProjectionExpression:     aws.String("#bucket"),
		ExpressionAttributeNames: map[string]string{"#bucket": ExpiryBucketAttribute},
		ReturnConsumedCapacity:   types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		t.fail(&StoreError{Op: "Scan", Err: err, Table: s.table}, fmt.Sprintf("Scan of index %s for its buckets: %v", ExpiryIndexName, err))
		return nil
	}
	t.rcu += readUnits(out.ConsumedCapacity)
	for _, item := range out.Items {
		bucket, err := getS(item, ExpiryBucketAttribute)
		if err != nil || s.layout.isBucket(bucket) {
			continue
		}
		return fmt.Errorf("%w: table %q: a whole pass of index %q read no entry of this sweep's buckets (Prefix %q), "+
			"but the index holds entries of bucket %q (%s): set SweepOptions.Schema to the KeySchema of the Stores that write the table",
			ErrSweepSchema, s.table, ExpiryIndexName, s.layout.Prefix, bucket, bucketSchema(bucket))
	}
	return nil
}

// isBucket reports whether v is one of the layout's bucket values.
func (l *layout) isBucket(v string) bool {
	rest, ok := strings.CutPrefix(v, l.Namespaced(""))
	if !ok || len(rest) != 2 || rest[0] < '0' || rest[0] > '9' || rest[1] < '0' || rest[1] > '9' {
		return false
	}
	return int(rest[0]-'0')*10+int(rest[1]-'0') < ExpiryIndexShards
}

// bucketSchema describes the schema whose records carry bucket v.
func bucketSchema(v string) string {
	switch {
	case len(v) == 2:
		return "records of a schema without a Prefix"
	case len(v) > 3 && v[len(v)-3] == '#':
		return fmt.Sprintf("records of Prefix %q", v[:len(v)-3])
	}
	return "not a bucket of this package"
}

// indexShard sweeps one shard from phase after the key after (nil: from
// the phase's start) until it is done, stops or a Query fails.
func (r *sweepRun) indexShard(ctx context.Context, shard int, phase indexPhase, after map[string]types.AttributeValue) sweepTally {
	t := sweepTally{phase: phase, after: after}
	o := &r.s.opts
	nextPages := 0 // pages of phaseNext read by this run
	for t.phase < phaseDone {
		if t.stop = r.mayStart(ctx); t.stop != "" {
			return t
		}
		limit := o.PageSize
		if t.phase == phaseNext {
			limit = min(o.PageSize, 1<<min(nextPages, 30))
			nextPages++
		}
		live := t.live
		// One instant for the query and its decisions.
		now := o.Now()
		out, err := r.s.client.Query(ctx, r.s.layout.indexQuery(r.s.table, shard, t.phase, now, limit, t.after))
		if err != nil {
			if ctx.Err() != nil {
				t.stop = SweepStoppedByCancel
				return t
			}
			t.fail(&StoreError{Op: "Query", Err: err, Table: r.s.table},
				fmt.Sprintf("Query of shard %d of index %s: %v", shard, ExpiryIndexName, err))
			t.stop = SweepStoppedByError
			return t
		}
		r.sweepPage(ctx, now, out.Items, out.ScannedCount, out.ConsumedCapacity, &t, r.indexItem)
		if ctx.Err() != nil {
			t.stop = SweepStoppedByCancel // the page is read again next time
			return t
		}
		// phaseNext ends at one entry, or with a Region at the first own.
		if len(out.LastEvaluatedKey) == 0 || (t.phase == phaseNext && (o.Region == "" || t.live > live)) {
			t.phase, t.after = t.phase+1, nil
			continue
		}
		t.after = out.LastEvaluatedKey
	}
	t.done = true
	return t
}

// checkIndex checks, until it once succeeds, that the table has the expiry
// index fit for the schema and readable (ACTIVE or UPDATING).
func (s *Sweeper) checkIndex(ctx context.Context) error {
	if s.indexChecked.Load() {
		return nil
	}
	out, err := s.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &s.table})
	if err != nil {
		return &StoreError{Op: "DescribeTable", Err: err, Table: s.table}
	}
	gsi, err := s.layout.expiryIndexOf(s.table, out.Table)
	if err == nil && !indexReadable(gsi) {
		err = fmt.Errorf("%w: table %q: index %q is %s, neither ACTIVE nor UPDATING; wait for it (EnsureExpiryIndex waits)",
			ErrExpiryIndex, s.table, ExpiryIndexName, gsi.IndexStatus)
	}
	if err != nil {
		return fmt.Errorf("%w; a sweep in SweepIndex mode needs it: create it with dynamostore.EnsureExpiryIndex or "+
			"idemctl, or sweep in SweepScan mode", err)
	}
	s.indexChecked.Store(true)
	return nil
}
