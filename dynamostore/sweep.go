package dynamostore

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey/internal/keyschema"
)

// SweepClient is the set of DynamoDB calls a Sweeper makes. *dynamodb.Client
// satisfies it; tests wrap it to inject faults.
type SweepClient interface {
	// Scan reads the table (in SweepIndex mode, its items outside the
	// expiry index) and, after a pass that read none of the sweep's
	// buckets, one index entry.
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	// Query reads the expiry index; DescribeTable checks it once per
	// Sweeper (SweepIndex mode).
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	// GetItem and PutItem read and write Resume's cursor and, in
	// SweepIndex mode, the note of the last scan that found no record
	// outside the index.
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

var _ SweepClient = (*dynamodb.Client)(nil)

// Defaults and limits of SweepOptions.
const (
	// DefaultSweepSegments is the number of parallel scan segments: 4.
	DefaultSweepSegments = 4
	// MaxSweepSegments bounds SweepOptions.Segments (one goroutine and one
	// request in flight each): the most segments whose resume cursor still
	// fits in the one item (400,000 bytes) Resume writes, with every
	// segment pending at a partition key of 2048 bytes, a table name of
	// 255 and a Region of MaxSweepRegionLen: 145.
	MaxSweepSegments = 145
	// DefaultSweepPageSize is the Limit of each Scan request: 500 items.
	DefaultSweepPageSize = 500
	// DefaultSweepItemsPerSecond is the default rate limit: 1000 items
	// scanned per second over all segments (a million records in about 17
	// minutes).
	DefaultSweepItemsPerSecond = 1000
	// DefaultSweepMargin is how long before the context's deadline a sweep
	// stops starting pages: 5 seconds, for the last pages' deletes and the
	// caller's save of the cursor.
	DefaultSweepMargin = 5 * time.Second
	// sweepErrorMessages is how many error messages a report keeps.
	sweepErrorMessages = 5
)

// SweepOptions configure a Sweeper. The zero value of each field selects
// its default.
type SweepOptions struct {
	// Mode is how a sweep finds the records to delete: SweepScan (the
	// default) or SweepIndex (see SweepMode).
	Mode SweepMode
	// Segments is the number of parallel scan segments, 1 to
	// MaxSweepSegments (default DefaultSweepSegments). A resumed scan
	// pass keeps its cursor's number, so that it covers the table exactly
	// once. In SweepIndex mode it is the number of index shards swept in
	// parallel, at most ExpiryIndexShards.
	Segments int
	// PageSize is the Limit of each Scan or Query (default
	// DefaultSweepPageSize); DynamoDB also ends a page at 1 MB read. Under
	// a rate limit below PageSize items per second, a page is at most one
	// second's worth.
	PageSize int
	// ItemsPerSecond limits the items (index entries) read per second over
	// all segments, and so the deletes, at most one per item (default
	// DefaultSweepItemsPerSecond; negative: no limit).
	ItemsPerSecond float64
	// ReadUnitsPerSecond limits the read capacity Scan or Query consume
	// per second, as DynamoDB reports it (zero or negative: no limit). An
	// implementation that reports none is limited by ItemsPerSecond alone.
	ReadUnitsPerSecond float64
	// Budget is how long, on Now from the start of Sweep, a sweep may
	// start pages (zero: no budget). A started page is finished, deletes
	// included, so a sweep overruns by at most one page's work.
	Budget time.Duration
	// DeadlineMargin: with a deadline on Sweep's context, the sweep stops
	// starting pages at the deadline minus the margin (default
	// DefaultSweepMargin) or, when less than twice the margin remains at
	// the start, halfway to it.
	DeadlineMargin time.Duration
	// DryRun counts what a sweep would evict and reclaim, deleting nothing.
	DryRun bool
	// Now is the clock of expiry, lock expiry, ages and the budget
	// (default time.Now).
	Now func() time.Time
	// Sleep waits for d or until ctx is done (default: a real timer). The
	// rate limits wait with it: a test that injects Now and a rate limit
	// must inject a Sleep that advances its clock.
	Sleep func(ctx context.Context, d time.Duration) error
	// Region, when set (at most MaxSweepRegionLen bytes), restricts the
	// sweep to the records of the Store with that Options.Region: every
	// delete is conditioned on it, and any other record is left alone and
	// counted as Foreign. A record of no region is deleted by no regional
	// sweep: it also counts as Unowned and, once expired, toward
	// EvictionLag. This is how a global table in multiregion's HomeRegion
	// mode is evicted: one sweeper per region over its own replica, so
	// that a replicated delete never races a newer write. A Region's
	// cursors are its own: other sweeps reject them, and Resume keeps
	// each region's in its own item.
	Region string
	// Owns, when set (with Region), decides in place of Region which key
	// records this sweep may delete: it gets each record's scope and key,
	// as stored, and its writer region ("" for none), and reports whether
	// the record is mine and, if not, whether no regional sweep may delete
	// it now (orphan: counted as Unowned, as a record of no region is).
	// Deletes are conditioned on the writer region read. It is called
	// concurrently from the sweep's goroutines. multiregion's
	// Store.SweepOwner returns one that follows the table's topology.
	Owns func(ctx context.Context, scope, key, writer string) (mine, orphan bool)
	// Schema is where the key records live: the Schema of the Stores that
	// write them (default: a dedicated key table). On a schema with a
	// Prefix, an item is a key record only with a partition key beginning
	// with Prefix + "#", SortKeyValue as its sort key (if any) and the
	// marker attribute "idemkey"; every delete is conditioned on the first
	// and the last. The application's items are still scanned (and
	// charged): they count as Scanned and Foreign.
	Schema KeySchema
	// Bodies is the BodyStore of the Stores writing the table
	// (Options.Bodies), if they have one: a record evicted is deleted with
	// ReturnValues ALL_OLD, then its body's object (counted in
	// SweepReport.BodiesDeleted). Objects whose record is gone otherwise
	// (DynamoDB's TTL, a crash between the object's write and the commit)
	// are left to the bucket's lifecycle rule.
	Bodies BodyStore
	// Logger receives one summary record per sweep (Info; Warn when
	// something failed or the report counts Unowned or Unindexed records)
	// and a Debug record per record that changed between the scan and its
	// delete. Keys appear only as short hashes. Nil: no logging.
	Logger *slog.Logger
}

// Sweeper deletes the expired and stuck records of one key table with
// DynamoDB's parallel Scan (or the expiry index) and conditional deletes.
// It is safe for concurrent use; concurrent sweeps of one table are
// correct but do the same work twice.
type Sweeper struct {
	client       SweepClient
	table        string
	opts         SweepOptions
	layout       *layout
	indexChecked atomic.Bool  // DescribeTable showed the index fit
	indexClean   atomic.Int64 // epoch ms of the last clean unindexed scan known; 0: none
}

// NewSweeper returns a Sweeper over table. It makes no call. It panics,
// a configuration error, if client is nil, table is empty, Mode is not a
// SweepMode, Region is longer than MaxSweepRegionLen or not valid UTF-8,
// Owns is set without Region, or Schema is invalid (KeySchema.Validate).
// It clamps Segments to [1, MaxSweepSegments] (fewer on a schema with
// longer keys: as many as its resume cursor fits in one item; at most
// ExpiryIndexShards in SweepIndex mode) and PageSize to at least 1.
func NewSweeper(client SweepClient, table string, optFns ...func(*SweepOptions)) *Sweeper {
	if client == nil || table == "" {
		panic("dynamostore: NewSweeper needs a client and a table name")
	}
	s := &Sweeper{client: client, table: table}
	for _, fn := range optFns {
		fn(&s.opts)
	}
	o := &s.opts
	if err := checkSweepRegion(o.Region); err != nil {
		panic(err.Error())
	}
	if o.Owns != nil && o.Region == "" {
		panic("dynamostore: NewSweeper: Owns is set without Region; it decides a regional sweep's records")
	}
	switch o.Mode {
	case "":
		o.Mode = SweepScan
	case SweepScan, SweepIndex:
	default:
		panic(fmt.Sprintf("dynamostore: NewSweeper: unknown Mode %q (SweepScan or SweepIndex)", o.Mode))
	}
	s.layout = newLayout(mustSchema("dynamostore: NewSweeper", o.Schema))
	o.Schema = KeySchema(s.layout.Schema)
	if o.Segments <= 0 {
		o.Segments = DefaultSweepSegments
	}
	o.Segments = min(o.Segments, s.layout.maxSweepSegments())
	if o.Mode == SweepIndex {
		o.Segments = min(o.Segments, ExpiryIndexShards)
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultSweepPageSize
	}
	if o.ItemsPerSecond == 0 {
		o.ItemsPerSecond = DefaultSweepItemsPerSecond
	}
	if o.ItemsPerSecond > 0 && float64(o.PageSize) > o.ItemsPerSecond {
		o.PageSize = max(1, int(o.ItemsPerSecond))
	}
	if o.DeadlineMargin <= 0 {
		o.DeadlineMargin = DefaultSweepMargin
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = sleepTimer
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return s
}

// Table returns the table name.
func (s *Sweeper) Table() string { return s.table }

// Options returns the sweeper's effective options.
func (s *Sweeper) Options() SweepOptions { return s.opts }

// sweepProjectionBase is what a sweep decides on: the responses are not
// transferred (though DynamoDB charges for the full items).
const sweepProjectionBase = "#pk, #exp, #state, #lock, #lock_exp, #created, #region"

// sweepProjection returns the projection of a sweep's Scan and its names.
func (l *layout) sweepProjection() (string, map[string]string) {
	return l.withRecordKey(sweepProjectionBase, map[string]string{
		"#pk": l.PartitionKey, "#exp": l.TTLAttribute, "#state": attrState,
		"#lock": attrLock, "#lock_exp": attrLockExp, "#created": attrCreated,
		"#region": attrRegion,
	})
}

// withRecordKey adds the sort key and the marker of a schema that has them.
func (l *layout) withRecordKey(proj string, names map[string]string) (string, map[string]string) {
	if l.SortKey != "" {
		proj += ", #sk"
		names["#sk"] = l.SortKey
	}
	if marked(l.Schema) {
		proj += ", #marker"
		names["#marker"] = keyschema.Marker
	}
	return proj, names
}

// Sweep makes one pass over the table, or continues the pass that cursor
// (returned by an earlier Sweep of the same table and Region; "" starts a
// new pass) left unfinished.
//
// Each segment scans its share of the table page by page, reading only the
// attributes it decides on. At each page, with now read from Now once:
//
//   - a record whose exp (epoch seconds) is before now's is expired and is
//     evicted with a DeleteItem conditioned on "exp < now", on a state of
//     this package and on not being in progress under a live lock
//     (lock_exp not before now, in epoch milliseconds): a record claimed
//     again since the scan survives;
//   - else, a record in progress whose lock expired is stuck, its owner
//     dead, and is reclaimed with a DeleteItem conditioned on the same
//     state, lock token and an expired lock;
//   - every other record is live and is left alone;
//   - an item that is not a key record (the cursor items Resume writes,
//     anything written by others) is foreign and is left alone.
//
// A delete whose condition fails counts as skipped. With DryRun nothing is
// deleted and the report counts what would have been.
//
// In SweepIndex mode the sweep reads the expiry index instead (see
// SweepMode), Segments shards at a time; a resumed run starts with the
// part after the last one the run before served, so that under a tight
// Budget every shard is served in turn. Per shard, two queries paged as
// the Scan is: the records whose exp is before now, oldest first, each
// evicted with the eviction's delete above (Reclaimed stays zero); then
// the record with the smallest exp from now on (Limit 1; with Region, the
// first such record the sweep may delete, read in pages of 1, 2, 4 and
// more up to PageSize, the others' records before it counted as Foreign),
// counted as live. Its age is OldestLiveKeyAge, an estimate (see
// SweepReport). The first sweep of a Sweeper checks with DescribeTable
// that the table has the index as EnsureExpiryIndex creates it; otherwise
// the error matches ErrExpiryIndex, names the table, the index and the
// remedy, and nothing is read.
//
// The sweep stops starting pages when its Budget is spent or its context's
// deadline nears (see DeadlineMargin), finishing the page in progress, and
// returns a report whose Cursor resumes the pass. A finished pass returns
// Cursor "" (in SweepIndex mode, unless the scan for the records outside
// the index is unfinished: the cursor continues it). The rate limits are
// waited for between pages; a wait that would end past the budget stops
// the sweep instead.
//
// The report is nil only when cursor is invalid (ErrInvalidCursor, a
// cursor of the other mode included) or, in SweepIndex mode, the index
// check failed (ErrExpiryIndex, or a *StoreError of DescribeTable). The
// error is nil when every call succeeded, finished or not. In SweepIndex
// mode, a pass that read no entry of the sweep's buckets is followed by a
// Scan of one index entry (Limit 1); one of another bucket is an error
// matching ErrSweepSchema. When the context is canceled, the error is the
// context's and a page interrupted in its deletes is swept (and counted)
// again by the next run. Otherwise it is the first DynamoDB failure, a
// *StoreError: a failed delete is counted and the sweep goes on; a failed
// Scan stops its segment (a failed Query its shard), and the cursor
// resumes it from the failed page.
func (s *Sweeper) Sweep(ctx context.Context, cursor string) (*SweepReport, error) {
	if s.opts.Mode == SweepIndex {
		return s.sweepIndex(ctx, cursor)
	}
	start := s.opts.Now()
	cur := newSweepCursor(s.table, s.opts.Region, s.opts.Segments)
	if cursor != "" {
		var err error
		if cur, err = sweepDecodeCursor(cursor, s.table, s.opts.Region); err != nil {
			return nil, err
		}
	}
	run := s.newRun(ctx, start)
	tallies := make([]sweepTally, len(cur.Segments))
	var wg sync.WaitGroup
	for i, seg := range cur.Segments {
		if seg.Done {
			tallies[i].done = true
			continue
		}
		wg.Go(func() { tallies[i] = run.segment(ctx, i, len(cur.Segments), sweepKeyFromCursor(seg.After), false) })
	}
	wg.Wait()

	report, err := s.report(start, len(tallies), tallies)
	next := newSweepCursor(s.table, s.opts.Region, len(tallies))
	for i, t := range tallies {
		if t.done {
			next.Segments[i].Done = true
		} else if after, ok := sweepKeyToCursor(t.after); ok && len(after) > 0 {
			next.Segments[i].After = after
		}
	}
	if !report.Finished {
		report.Cursor = next.encode()
	}
	return s.conclude(ctx, report, tallies, err)
}

// conclude logs the summary and returns the error: the context's when a
// part stopped because it was canceled.
func (s *Sweeper) conclude(ctx context.Context, report *SweepReport, tallies []sweepTally, err error) (*SweepReport, error) {
	for _, t := range tallies {
		if t.stop == SweepStoppedByCancel && ctx.Err() != nil {
			err = ctx.Err()
		}
	}
	level := slog.LevelInfo
	if err != nil || report.Unowned > 0 || report.Unindexed > 0 {
		level = slog.LevelWarn
	}
	s.opts.Logger.LogAttrs(context.WithoutCancel(ctx), level, "idemkey sweep", report.attrs()...)
	return report, err
}

// stopTime returns when the sweep stops starting pages (zero: never). The
// deadline's remaining wall time is applied from start on Now's clock.
func (s *Sweeper) stopTime(ctx context.Context, start time.Time) time.Time {
	var stop time.Time
	if s.opts.Budget > 0 {
		stop = start.Add(s.opts.Budget)
	}
	if deadline, ok := ctx.Deadline(); ok {
		remaining := time.Until(deadline)
		byDeadline := start.Add(remaining - min(s.opts.DeadlineMargin, remaining/2))
		if stop.IsZero() || byDeadline.Before(stop) {
			stop = byDeadline
		}
	}
	return stop
}

// report merges the parts' tallies into a report without a cursor; the
// error is the first part's first failure.
func (s *Sweeper) report(start time.Time, segments int, tallies []sweepTally) (*SweepReport, error) {
	r := &SweepReport{Table: s.table, Mode: s.opts.Mode, DryRun: s.opts.DryRun, Segments: segments, Started: start, Finished: true}
	var first error
	for _, t := range tallies {
		r.Pages += t.pages
		r.Scanned += t.scanned
		r.Evicted += t.evicted
		r.Reclaimed += t.reclaimed
		r.Skipped += t.skipped
		r.LiveKeys += t.live
		r.Foreign += t.foreign
		r.Unowned += t.unowned
		r.Unindexed += t.unindexed
		r.BodiesDeleted += t.bodies
		r.OldestLiveKeyAge = max(r.OldestLiveKeyAge, t.oldestLive)
		r.EvictionLag = max(r.EvictionLag, t.lag)
		r.ConsumedReadUnits += t.rcu
		r.ConsumedWriteUnits += t.wcu
		r.Errors += t.errors
		for _, m := range t.messages {
			if len(r.ErrorMessages) < sweepErrorMessages {
				r.ErrorMessages = append(r.ErrorMessages, m)
			}
		}
		if first == nil {
			first = t.firstErr
		}
		if t.done {
			continue
		}
		r.Finished = false
		if t.stop.severity() > r.StoppedBy.severity() {
			r.StoppedBy = t.stop
		}
	}
	r.Duration = s.opts.Now().Sub(start)
	return r, first
}

func (s *Sweeper) newRun(ctx context.Context, start time.Time) *sweepRun {
	return &sweepRun{
		s:      s,
		stopAt: s.stopTime(ctx, start),
		items:  newSweepBucket(s.opts.ItemsPerSecond, s.opts.Now),
		reads:  newSweepBucket(s.opts.ReadUnitsPerSecond, s.opts.Now),
	}
}

// sweepRun is the state one Sweep shares between its segments.
type sweepRun struct {
	s            *Sweeper
	stopAt       time.Time // zero: no stop
	items, reads *sweepBucket
}

// sweepTally is one part's share of a report, and where it stands.
type sweepTally struct {
	pages, scanned, evicted, reclaimed, skipped, live, foreign, unowned, errors int64
	bodies                                                                      int64 // objects of evicted records deleted
	// unindexed counts the key records without ExpiryBucketAttribute read.
	unindexed int64

	oldestLive, lag time.Duration
	rcu, wcu        float64
	messages        []string
	firstErr        error

	done  bool                            // the segment finished its share
	stop  SweepStop                       // why it stopped, when not done
	after map[string]types.AttributeValue // resume after this key; nil: from the start
	phase indexPhase                      // SweepIndex mode: the shard's current query
}

func (t *sweepTally) fail(err error, msg string) {
	t.errors++
	if t.firstErr == nil {
		t.firstErr = err
	}
	if len(t.messages) < sweepErrorMessages {
		t.messages = append(t.messages, msg)
	}
}

// errSweepStop: a wait for the rate limit would end past the stop time.
var errSweepStop = errors.New("dynamostore: sweep budget spent")

// waitTurn waits until both rate limits allow another page.
func (r *sweepRun) waitTurn(ctx context.Context) error {
	for {
		d := max(r.items.delay(), r.reads.delay())
		if d <= 0 {
			return nil
		}
		if !r.stopAt.IsZero() && r.s.opts.Now().Add(d).After(r.stopAt) {
			return errSweepStop
		}
		if err := r.s.opts.Sleep(ctx, d); err != nil {
			return err
		}
	}
}

// segment sweeps segment seg of total after the key after (nil: from the
// start) until it finishes, stops or a Scan fails. With unindexed it reads
// only the items without ExpiryBucketAttribute (a filter: every item is
// still read and paid for) and counts the key records among them.
func (r *sweepRun) segment(ctx context.Context, seg, total int, after map[string]types.AttributeValue, unindexed bool) sweepTally {
	t := sweepTally{after: after}
	o := &r.s.opts
	decide := r.sweepItem
	if unindexed {
		decide = r.unindexedItem
	}
	for {
		if t.stop = r.mayStart(ctx); t.stop != "" {
			return t
		}
		proj, names := r.s.layout.sweepProjection()
		var filter *string
		if unindexed {
			filter, names["#bucket"] = aws.String("attribute_not_exists(#bucket)"), ExpiryBucketAttribute
		}
		in := &dynamodb.ScanInput{
			FilterExpression:         filter,
			TableName:                &r.s.table,
			Limit:                    aws.Int32(int32(min(o.PageSize, 1<<30))),
			ProjectionExpression:     aws.String(proj),
			ExpressionAttributeNames: names,
			ExclusiveStartKey:        t.after,
			ReturnConsumedCapacity:   types.ReturnConsumedCapacityTotal,
		}
		if total > 1 {
			in.Segment, in.TotalSegments = aws.Int32(int32(seg)), aws.Int32(int32(total))
		}
		out, err := r.s.client.Scan(ctx, in)
		if err != nil {
			if ctx.Err() != nil {
				t.stop = SweepStoppedByCancel
				return t
			}
			t.fail(&StoreError{Op: "Scan", Err: err}, fmt.Sprintf("Scan of segment %d: %v", seg, err))
			t.stop = SweepStoppedByError
			return t
		}
		scanned := out.ScannedCount
		if unindexed {
			// The rate limit pays for the items the filter dropped.
			r.items.pay(float64(max(scanned-int32(len(out.Items)), 0)))
			scanned = int32(len(out.Items))
		}
		r.sweepPage(ctx, o.Now(), out.Items, scanned, out.ConsumedCapacity, &t, decide)
		if ctx.Err() != nil {
			t.stop = SweepStoppedByCancel // the page is swept again next time
			return t
		}
		if len(out.LastEvaluatedKey) == 0 {
			t.done, t.after = true, nil
			return t
		}
		t.after = out.LastEvaluatedKey
	}
}

// mayStart waits for the rate limits and returns why the next page must
// not start, or "".
func (r *sweepRun) mayStart(ctx context.Context) SweepStop {
	if ctx.Err() != nil {
		return SweepStoppedByCancel
	}
	if err := r.waitTurn(ctx); err != nil {
		if !errors.Is(err, errSweepStop) {
			return SweepStoppedByCancel
		}
		return SweepStoppedByBudget
	}
	if !r.stopAt.IsZero() && !r.s.opts.Now().Before(r.stopAt) {
		return SweepStoppedByBudget
	}
	return ""
}

// sweepPage counts a page, pays the rate limits and decides each item.
func (r *sweepRun) sweepPage(ctx context.Context, now time.Time, items []map[string]types.AttributeValue,
	scannedCount int32, capacity *types.ConsumedCapacity, t *sweepTally,
	decide func(context.Context, time.Time, map[string]types.AttributeValue, *sweepTally)) {
	t.pages++
	scanned := int64(scannedCount)
	if scanned == 0 {
		scanned = int64(len(items)) // implementations that leave ScannedCount out
	}
	t.scanned += scanned
	rcu := readUnits(capacity)
	t.rcu += rcu
	r.items.pay(float64(scanned))
	r.reads.pay(rcu)
	for _, item := range items {
		decide(ctx, now, item, t)
	}
}

// sweepFields are what a sweep decides a record on.
type sweepFields struct {
	pk         string
	exp        int64 // epoch seconds
	inProgress bool
	lock       string
	lockExp    int64 // epoch milliseconds
	created    int64 // epoch milliseconds
	region     string
}

// sweepParse reads the projected attributes; ok is false for an item that
// is not a key record of the layout.
func (l *layout) sweepParse(item map[string]types.AttributeValue) (f sweepFields, ok bool) {
	if f.pk, f.exp, f.created, f.region, ok = l.sweepKeyFields(item); !ok {
		return f, false
	}
	state, err := getState(item)
	if err != nil {
		return f, false
	}
	switch state {
	case StateCompleted:
	case StateInProgress:
		f.inProgress = true
		if f.lock, err = getLock(item); err != nil {
			return f, false
		}
		if f.lockExp, err = getN(item, attrLockExp); err != nil {
			return f, false
		}
	default:
		return f, false
	}
	return f, true
}

// sweepKeyFields reads what a scanned item and an index entry share; ok is
// false for an item that is not a key record of the layout.
func (l *layout) sweepKeyFields(item map[string]types.AttributeValue) (pk string, exp, created int64, region string, ok bool) {
	if pk, ok = l.InNamespace(item); !ok {
		return "", 0, 0, "", false
	}
	if _, key, ok := l.Parse(pk); !ok || key == "" {
		return "", 0, 0, "", false
	}
	if marked(l.Schema) {
		if m, err := getS(item, keyschema.Marker); err != nil || m != recordFormat {
			return "", 0, 0, "", false
		}
	}
	var err error
	if exp, err = getN(item, l.TTLAttribute); err != nil {
		return "", 0, 0, "", false
	}
	if created, err = getN(item, attrCreated); err != nil {
		return "", 0, 0, "", false
	}
	region, _ = getS(item, attrRegion)
	return pk, exp, created, region, true
}

// sweepItem decides one scanned item and deletes it if it must go.
func (r *sweepRun) sweepItem(ctx context.Context, now time.Time, item map[string]types.AttributeValue, t *sweepTally) {
	l := r.s.layout
	f, ok := l.sweepParse(item)
	region := r.writer(f)
	switch {
	case !ok:
		t.foreign++
	case r.leaves(ctx, now, f, t):
	case f.exp < now.Unix() && !(f.inProgress && f.lockExp >= now.UnixMilli()):
		t.lag = max(t.lag, now.Sub(time.Unix(f.exp, 0)))
		r.remove(ctx, t, &t.evicted, "evict", f.pk, inRegion(l.evictInput(r.s.table, f.pk, now), region))
	case f.inProgress && f.lockExp < now.UnixMilli():
		r.remove(ctx, t, &t.reclaimed, "reclaim", f.pk, inRegion(l.reclaimInput(r.s.table, f.pk, f.lock, now), region))
	default:
		t.live++
		t.oldestLive = max(t.oldestLive, now.Sub(time.UnixMilli(f.created)))
	}
}

// leaves reports whether a regional sweep leaves f alone, and counts it.
func (r *sweepRun) leaves(ctx context.Context, now time.Time, f sweepFields, t *sweepTally) bool {
	o := &r.s.opts
	switch {
	case o.Region == "":
		return false
	case o.Owns == nil:
		if f.region == o.Region {
			return false
		}
		t.otherRegion(now, f, f.region == "")
		return true
	}
	scope, key, _ := r.s.layout.Parse(f.pk)
	mine, orphan := o.Owns(ctx, scope, key, f.region)
	if !mine {
		t.otherRegion(now, f, orphan)
	}
	return !mine
}

// writer is the region a delete of f is conditioned on.
func (r *sweepRun) writer(f sweepFields) string {
	if r.s.opts.Owns != nil {
		return f.region
	}
	return r.s.opts.Region
}

// otherRegion counts a record a regional sweep leaves alone.
func (t *sweepTally) otherRegion(now time.Time, f sweepFields, unowned bool) {
	t.foreign++
	if unowned {
		t.unowned++
		if f.exp < now.Unix() {
			t.lag = max(t.lag, now.Sub(time.Unix(f.exp, 0)))
		}
	}
}

// evictInput deletes the record at pk if, at now, it is still expired, in a
// state of this package and not in progress under a live lock.
func (l *layout) evictInput(table, pk string, now time.Time) *dynamodb.DeleteItemInput {
	return l.recognised(&dynamodb.DeleteItemInput{
		TableName: &table,
		Key:       l.ItemKey(pk),
		ConditionExpression: aws.String("#exp < :now_s AND #state IN (:in_progress, :completed) AND " +
			"NOT (#state = :in_progress AND #lock_exp >= :now_ms)"),
		ExpressionAttributeNames: map[string]string{"#exp": l.TTLAttribute, "#state": attrState, "#lock_exp": attrLockExp},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now_s":       attrN(now.Unix()),
			":now_ms":      attrN(now.UnixMilli()),
			":in_progress": inProgressValue,
			":completed":   completedValue,
		},
	})
}

// recognised adds, on a schema with a Prefix, the conditions that
// recognise a key record: the namespace and the marker.
func (l *layout) recognised(in *dynamodb.DeleteItemInput) *dynamodb.DeleteItemInput {
	if !marked(l.Schema) {
		return in
	}
	in.ConditionExpression = aws.String("begins_with(#pk, :ns) AND attribute_exists(#marker) AND (" + aws.ToString(in.ConditionExpression) + ")")
	in.ExpressionAttributeNames["#pk"] = l.PartitionKey
	in.ExpressionAttributeNames["#marker"] = keyschema.Marker
	in.ExpressionAttributeValues[":ns"] = attrS(l.Namespaced(""))
	return in
}

// reclaimInput deletes the record at pk if it is still in progress under
// lock, expired at now.
func (l *layout) reclaimInput(table, pk, lock string, now time.Time) *dynamodb.DeleteItemInput {
	return l.recognised(&dynamodb.DeleteItemInput{
		TableName:                &table,
		Key:                      l.ItemKey(pk),
		ConditionExpression:      aws.String("#state = :in_progress AND #lock = :lock AND #lock_exp < :now_ms"),
		ExpressionAttributeNames: map[string]string{"#state": attrState, "#lock": attrLock, "#lock_exp": attrLockExp},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":in_progress": inProgressValue,
			":lock":        lockValue(lock),
			":now_ms":      attrN(now.UnixMilli()),
		},
	})
}

// inRegion conditions a delete on the record's region, unless "".
func inRegion(in *dynamodb.DeleteItemInput, region string) *dynamodb.DeleteItemInput {
	if region == "" {
		return in
	}
	in.ConditionExpression = aws.String("(" + aws.ToString(in.ConditionExpression) + ") AND #region = :region")
	in.ExpressionAttributeNames["#region"] = attrRegion
	in.ExpressionAttributeValues[":region"] = attrS(region)
	return in
}

// remove sends one conditional delete (unless DryRun) and counts it: done,
// also when a retry's condition failed because an earlier attempt deleted
// the record; skipped when the condition failed otherwise; else an error.
func (r *sweepRun) remove(ctx context.Context, t *sweepTally, done *int64, action, pk string, in *dynamodb.DeleteItemInput) {
	if r.s.opts.DryRun {
		*done++
		return
	}
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	if r.s.opts.Bodies != nil {
		in.ReturnValues = types.ReturnValueAllOld
	}
	attempts := 0
	out, err := r.s.client.DeleteItem(ctx, in, countAttempts(&attempts))
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		*done++
		t.wcu += writeUnits(out.ConsumedCapacity)
		r.dropBody(ctx, t, pk, out.Attributes)
	case errors.As(err, &ccf):
		deleted, read := deletedByEarlierAttempt(ctx, r.s.client, in, attempts)
		t.rcu += readUnits(read)
		if deleted {
			*done++ // the retry of a delete that had been applied
			break
		}
		t.skipped++
		r.s.opts.Logger.LogAttrs(ctx, slog.LevelDebug, "idemkey sweep: record changed since the scan, left in place",
			slog.String("table", r.s.table), slog.String("action", action), slog.String("key", sweepKeyHash(pk)))
	case ctx.Err() != nil:
		// Canceled: the segment stops after this page and sweeps it again.
	default:
		t.fail(&StoreError{Op: "DeleteItem", Err: err}, fmt.Sprintf("DeleteItem (%s, key %s): %v", action, sweepKeyHash(pk), err))
	}
}

// sweepKeyHash names a record in logs without its key: 12 hex digits of a
// SHA-256 of the partition key value.
func sweepKeyHash(pk string) string {
	sum := sha256.Sum256([]byte("idemkey/sweep-key\x00" + pk))
	return hex.EncodeToString(sum[:6])
}

func readUnits(c *types.ConsumedCapacity) float64 {
	if c == nil {
		return 0
	}
	return aws.ToFloat64(cmp.Or(c.ReadCapacityUnits, c.CapacityUnits))
}

func writeUnits(c *types.ConsumedCapacity) float64 {
	if c == nil {
		return 0
	}
	return aws.ToFloat64(cmp.Or(c.WriteCapacityUnits, c.CapacityUnits))
}
