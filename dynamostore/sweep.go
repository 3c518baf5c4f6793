package dynamostore

import (
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
	// Scan reads the table in SweepScan mode, and in SweepIndex mode
	// the table's items outside the expiry index (see SweepMode) and,
	// after a pass that read none of its buckets, one entry of the index.
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	// Query reads the expiry index in SweepIndex mode, and DescribeTable
	// checks that the index exists (once per Sweeper).
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	// GetItem and PutItem read and write the resume cursor (Resume) and,
	// in SweepIndex mode, the note of the last scan that found no record
	// outside the index.
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

var _ SweepClient = (*dynamodb.Client)(nil)

// Defaults and limits of SweepOptions.
const (
	// DefaultSweepSegments is the number of parallel scan segments: 4.
	DefaultSweepSegments = 4
	// MaxSweepSegments bounds SweepOptions.Segments; each segment is one
	// goroutine with one request in flight. It is the most segments whose
	// resume cursor, with every segment pending at a partition key of
	// DynamoDB's maximal 2048 bytes, a table name of 255 and a Region of
	// MaxSweepRegionLen, still fits in the one item (400 KB, counted as
	// 400,000 bytes) Resume writes: 145.
	MaxSweepSegments = 145
	// DefaultSweepPageSize is the Limit of each Scan request: 500 items.
	DefaultSweepPageSize = 500
	// DefaultSweepItemsPerSecond is the default rate limit: 1000 items
	// scanned per second over all segments. At that rate one pass over a
	// million records takes about 17 minutes of sweeping.
	DefaultSweepItemsPerSecond = 1000
	// DefaultSweepMargin is how long before the context's deadline a sweep
	// stops starting pages: 5 seconds, time for the last pages' deletes and
	// for the caller to save the cursor.
	DefaultSweepMargin = 5 * time.Second
	// sweepErrorMessages is how many error messages a report keeps.
	sweepErrorMessages = 5
)

// SweepOptions configure a Sweeper. The zero value of each field selects
// its default.
type SweepOptions struct {
	// Mode is how a sweep finds the records to delete: SweepScan (the
	// default) reads the whole table, SweepIndex reads the expiry index
	// (see SweepMode). In SweepIndex mode a stuck record (in progress,
	// its lock expired, its exp ahead) is not read until its exp passes,
	// and is then evicted, not reclaimed: a retry of its key takes over
	// the expired lock meanwhile, and only its storage is freed later.
	Mode SweepMode
	// Segments is the number of parallel scan segments (Segment and
	// TotalSegments of a parallel Scan), 1 to MaxSweepSegments (default
	// DefaultSweepSegments). A sweep that resumes from a cursor uses the
	// cursor's number of segments instead, so that the pass it continues
	// still covers the table exactly once. In SweepIndex mode it is the
	// number of shards of the index swept in parallel, at most
	// ExpiryIndexShards; a resumed pass may use another number.
	Segments int
	// PageSize is the Limit of each Scan or Query request (default
	// DefaultSweepPageSize). DynamoDB also ends a page at 1 MB of items
	// read. With a rate limit below PageSize items per second, pages are
	// made smaller so that each is at most one second's worth.
	PageSize int
	// ItemsPerSecond limits the items scanned (index entries read, in
	// SweepIndex mode) per second over all segments (default
	// DefaultSweepItemsPerSecond; negative: no limit). It bounds the
	// deletes too, as at most one delete follows each item read.
	ItemsPerSecond float64
	// ReadUnitsPerSecond limits the read capacity consumed by Scan (or
	// Query) per second, as DynamoDB reports it (ReturnConsumedCapacity
	// TOTAL).
	// Zero or negative: no such limit. Implementations that report no
	// consumed capacity (a bare minidyn; the localstack front adds an
	// estimate) are limited by ItemsPerSecond alone.
	ReadUnitsPerSecond float64
	// Budget is how long a sweep may start new pages for, measured on Now
	// from the start of Sweep. Zero: no budget of its own. A page started
	// within the budget is finished (its deletes included), so a sweep
	// overruns its budget by at most one page's work.
	Budget time.Duration
	// DeadlineMargin applies when the context passed to Sweep has a
	// deadline: the sweep stops starting pages at the deadline minus the
	// margin (default DefaultSweepMargin) or, when less than twice the
	// margin remains at the start, halfway to the deadline.
	DeadlineMargin time.Duration
	// DryRun counts what a sweep would evict and reclaim without deleting
	// anything.
	DryRun bool
	// Now is the clock (default time.Now). Expiry, lock expiry, ages and
	// the budget are measured on it.
	Now func() time.Time
	// Sleep waits for d or until ctx is done (default: a real timer). The
	// rate limits wait with it; a test that injects Now and sets a rate
	// limit must inject a Sleep that advances its clock.
	Sleep func(ctx context.Context, d time.Duration) error
	// Region, when set, restricts the sweep to the records that region
	// wrote (Options.Region of the Store that wrote them): a record of
	// another region, or of none, is left alone and counted as foreign, and
	// every delete is also conditioned on the record's region. A record of
	// no region (written by a Store without Options.Region) is deleted by
	// no regional sweep: it also counts as Unowned, and once expired toward
	// EvictionLag, so that a table that only grows shows as lag. This is how
	// a global table in multiregion's HomeRegion mode is evicted: one
	// sweeper per region, each over its own replica with Region set to that
	// region's name, so that each record is deleted only in the one region
	// that writes it and a replicated delete never races a newer write.
	// At most MaxSweepRegionLen bytes. Its resume cursors are its own: a
	// sweep with another Region (or none) rejects them, and each region
	// keeps its cursor in its own item (Resume).
	Region string
	// Owns, when set (Region must be too), decides which key records this
	// regional sweep may delete, in place of "the records Region wrote":
	// it is called with each key record's scope and key, as stored, and
	// the region that wrote it ("" for none), and reports whether this
	// sweep may delete the record (mine) and, when not, whether no
	// regional sweep may delete it now (orphan). A record that is not
	// mine is left alone and counted as Foreign; an orphan also as
	// Unowned and, once expired, toward EvictionLag. A delete is then
	// conditioned on the region the record was read with instead of
	// Region. It is called on the sweep's goroutines, possibly
	// concurrently. multiregion's Store.SweepOwner returns one that
	// follows the table's topology record, for a global table whose keys
	// change home.
	Owns func(ctx context.Context, scope, key, writer string) (mine, orphan bool)
	// Schema is where key records live in the table: the Schema of the
	// Stores that write them (default: the dedicated key table's layout).
	// On a schema with a Prefix, an item is a key record only if its
	// partition key value begins with Prefix + "#", its sort key (if any)
	// is SortKeyValue and it has the marker attribute "idemkey"; every
	// delete is conditioned on the first and the last, so the
	// application's items are never deleted. The sweep still scans them:
	// DynamoDB charges a Scan for every item it reads, the application's
	// included, and they count as Scanned and Foreign.
	Schema KeySchema
	// Bodies is the BodyStore of the Stores writing the table
	// (Options.Bodies), if they have one: a record evicted is deleted with
	// ReturnValues ALL_OLD, then its body's object (counted in
	// SweepReport.BodiesDeleted). Objects whose record is gone otherwise
	// (DynamoDB's TTL, a crash between the object's write and the commit)
	// are left to the bucket's lifecycle rule.
	Bodies BodyStore
	// Logger receives one summary record per sweep (level Info, or Warn
	// when something failed or the report counts Unowned records) and a Debug record per record that changed
	// between the scan and its delete. Keys appear only as short hashes.
	// Nil: no logging.
	Logger *slog.Logger
}

// Sweeper deletes the expired and stuck records of one key table (expiry
// and the reclaim of dead owners' keys), with DynamoDB's parallel Scan and
// conditional deletes. It is safe for concurrent use; concurrent sweeps of one table
// are correct but do the same work twice.
type Sweeper struct {
	client SweepClient
	table  string
	opts   SweepOptions
	layout *layout
	// indexChecked is set once DescribeTable showed the expiry index
	// readable and fit (SweepIndex mode).
	indexChecked atomic.Bool
	// indexClean is the start, in epoch milliseconds, of the last scan
	// known to have found no key record outside the index (0: none).
	indexClean atomic.Int64
}

// NewSweeper returns a Sweeper over table. It panics if client is nil,
// table is empty, Mode is not a SweepMode, Region is longer than
// MaxSweepRegionLen bytes or not valid UTF-8, or Schema is invalid (KeySchema.Validate): that
// is a configuration error, caught at start. It makes no call: in
// SweepIndex mode the first sweep checks the index.
// Out-of-range options are clamped: Segments to [1, MaxSweepSegments]
// (fewer on a schema whose keys are longer, with a sort key or a Prefix:
// as many as a resume cursor of that schema fits in one item; at most
// ExpiryIndexShards in SweepIndex mode), PageSize to at least 1.
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

// sweepProjection reads the attributes a sweep decides on, nothing else:
// the stored responses, often most of an item's size, are not transferred.
// (DynamoDB charges read capacity on the full items all the same.)
const sweepProjectionBase = "#pk, #exp, #state, #lock, #lock_exp, #created, #region"

// sweepProjection returns the projection of a sweep's Scan and its names:
// sweepProjectionBase, plus the sort key and the marker on a schema that has
// them.
func (l *layout) sweepProjection() (string, map[string]string) {
	return l.withRecordKey(sweepProjectionBase, map[string]string{
		"#pk": l.PartitionKey, "#exp": l.TTLAttribute, "#state": attrState,
		"#lock": attrLock, "#lock_exp": attrLockExp, "#created": attrCreated,
		"#region": attrRegion,
	})
}

// withRecordKey adds to a projection and its names the sort key and the
// marker, on a schema that has them.
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
// (returned by an earlier Sweep of the same table and the same Region; ""
// starts a new pass) left unfinished.
//
// Each segment scans its share of the table page by page, reading only the
// attributes it decides on. At each page, with now read from Now once:
//
//   - a record whose exp (epoch seconds) is before now's is expired and is
//     evicted with a DeleteItem conditioned on "exp < now", on a state of
//     this package and on not being in progress under a live lock: a
//     record claimed again since the scan survives. An in-progress record whose lock holds (lock_exp not before
//     now, in epoch milliseconds) is live whatever its exp, which this
//     package never writes before the lock's end (the condition does not
//     rely on it);
//   - else, a record in progress whose lock expired (lock_exp before now,
//     in epoch milliseconds) is stuck, its owner dead, and is reclaimed
//     with a DeleteItem conditioned on the same state, lock token and an
//     expired lock: a record completed or claimed again survives;
//   - every other record is live and is left alone;
//   - an item that is not a key record (the cursor items Resume writes,
//     anything written by others) is foreign and is left alone.
//
// A delete whose condition fails counts as skipped. With DryRun nothing is
// deleted and the report counts what would have been.
//
// In SweepIndex mode the sweep reads the expiry index instead of the
// table (see SweepMode), shard by shard, Segments shards at a time (a run
// resumed from a cursor starts with the shard after the last one the run
// before served, so that under a tight Budget every shard is served in
// turn), each in two queries paged as the Scan is: the shard's records whose exp is
// before now (oldest first), and its record with the smallest exp from
// now on (Limit 1; with Region, the first such record the sweep may
// delete, read in pages of 1, 2, 4 and more up to PageSize, the others'
// records before it counted as Foreign, so that the live figures are the
// region's own: in a region that writes few of a shard's records, that
// reads many entries). The index does not hold the state: every record of
// the first query is evicted with the eviction's conditional delete above
// (which leaves alone an in-progress record under a live lock, and a
// record claimed again since), and counts as evicted whether it was
// completed or in progress, as the scan counts it; Reclaimed stays zero,
// since a stuck record is read only once its exp passed. The record of
// the second query counts as live, and its age (from its created time)
// is the report's OldestLiveKeyAge, an estimate: the record that expires
// next is the one claimed first, except that a claim with a longer lease
// expires later by as much, so the oldest live record may be older by at
// most the longest lease less the shortest. EvictionLag is exact for the
// records in the index; the records outside it count once the scan for
// them reads them (see SweepMode). The
// sweep first checks, once per Sweeper, with DescribeTable, that the
// table has the index as EnsureExpiryIndex creates it; a table without
// it, or with another index of that name, is an error matching
// ErrExpiryIndex that names the table, the index and the remedy, and
// nothing is read.
//
// The sweep stops starting pages when its Budget is spent or its context's
// deadline nears (see DeadlineMargin), and then returns a report whose
// Cursor resumes the pass where it stopped; a page in progress is always
// finished first. A pass that finished returns Cursor "" (in SweepIndex
// mode, unless the scan for the records outside the index is unfinished:
// the cursor continues it). The rate limits
// (ItemsPerSecond, ReadUnitsPerSecond) are waited for between pages, and a
// wait that would end past the budget stops the sweep instead.
//
// The report is non-nil unless cursor is invalid (ErrInvalidCursor; a
// cursor of the other mode is invalid too) or, in SweepIndex mode, the
// index check failed (ErrExpiryIndex, or a *StoreError of DescribeTable).
// The error is nil when every call succeeded, whether or not the pass
// finished; in SweepIndex mode, a pass that read no entry of the sweep's
// buckets is followed by a read of one entry of the index (a Scan, Limit
// 1), and one in another bucket is an error matching ErrSweepSchema: the
// sweep's Schema is not the Stores'. When the context is canceled, the error is the context's: the
// segments stop, a page interrupted in its deletes is swept again by the
// next run (its items are counted again). Otherwise it is the first
// DynamoDB failure, a *StoreError: a failed delete is counted and the
// sweep goes on; a failed Scan stops its segment (a failed Query its
// shard), and the cursor resumes it from the failed page.
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

// conclude returns the report of a sweep and its error: the context's
// when a part stopped because it was canceled. It logs the summary.
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

// stopTime returns when the sweep stops starting pages; zero for never.
// The deadline's remaining time is measured on the wall clock and applied
// from start on Now's clock, so that an injected clock sees the same
// budget.
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

// report merges the tallies of a sweep's parts (segments, or shards of
// the index) into a report without a cursor; the error is the first part's
// first failure.
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

// newRun returns the state of a sweep that starts at start.
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

// sweepTally is one segment's share of a report, and where it stands.
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

// errSweepStop reports that a wait for the rate limit would end past the
// sweep's stop time.
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

// segment sweeps segment seg of total, starting after the key after (nil:
// from its beginning), until it finishes, its stop time comes, its context
// ends or a Scan fails. With unindexed, it reads only the items without
// ExpiryBucketAttribute (a filter: the Scan still reads every item, and
// the rate limit is paid for each) and counts the key records among them.
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
			// The items the filter dropped are in the index: the rate
			// limit pays for them, the report counts those returned.
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
// not start (the context ended, the budget is spent), or "" when it may.
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

// sweepPage counts a page read (its items, ScannedCount where the
// implementation reports it, its consumed capacity), pays the rate limits
// and decides each item at now with decide.
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

// sweepFields are the attributes of a scanned record that a sweep decides
// on.
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
// is not a key record of this package in the layout.
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

// sweepKeyFields reads what a scanned item and an index entry share: the
// partition key value, exp, created and region ("" when absent: written
// by no region); ok is false for an item that is not a key record of
// this package in the layout.
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

// leaves reports whether a regional sweep leaves the record f alone (see
// SweepOptions.Region and Owns), and then counts it.
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

// writer is the region a sweep's delete of f is conditioned on: the
// sweep's Region, or with Owns the region f was read with.
func (r *sweepRun) writer(f sweepFields) string {
	if r.s.opts.Owns != nil {
		return f.region
	}
	return r.s.opts.Region
}

// otherRegion counts a record that a regional sweep leaves alone:
// foreign, and unowned when no regional sweep deletes it (its expiry is
// eviction lag).
func (t *sweepTally) otherRegion(now time.Time, f sweepFields, unowned bool) {
	t.foreign++
	if unowned {
		t.unowned++
		if f.exp < now.Unix() {
			t.lag = max(t.lag, now.Sub(time.Unix(f.exp, 0)))
		}
	}
}

// evictInput deletes the record at pk if it is still expired at now, in
// one of the two states of a record, and not in progress under a lock
// that holds at now.
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

// recognised adds to a delete, on a schema with a Prefix, the conditions
// that recognise a key record: its partition key begins with Prefix + "#"
// and it has the marker attribute.
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

// reclaimInput deletes the record at pk if it is still the in-progress
// record of the claim whose token is lock, and that claim's lock has
// expired at now.
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

// inRegion adds to a sweep's delete the condition that the record was
// written by region, unless region is empty.
func inRegion(in *dynamodb.DeleteItemInput, region string) *dynamodb.DeleteItemInput {
	if region == "" {
		return in
	}
	in.ConditionExpression = aws.String("(" + aws.ToString(in.ConditionExpression) + ") AND #region = :region")
	in.ExpressionAttributeNames["#region"] = attrRegion
	in.ExpressionAttributeValues[":region"] = attrS(region)
	return in
}

// remove sends one conditional delete (unless DryRun) and counts its
// outcome: done on success, and when a retry's condition failed because
// an earlier attempt had deleted the record (see deletedByEarlierAttempt);
// skipped when the condition failed otherwise; an error otherwise.
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

// sweepKeyHash returns the short hash by which sweep logs and messages
// name a record: 12 hex digits of a SHA-256 of its partition key value, so
// that logs can correlate records without holding clients' keys.
func sweepKeyHash(pk string) string {
	sum := sha256.Sum256([]byte("idemkey/sweep-key\x00" + pk))
	return hex.EncodeToString(sum[:6])
}

func readUnits(c *types.ConsumedCapacity) float64 {
	if c == nil {
		return 0
	}
	if c.ReadCapacityUnits != nil {
		return *c.ReadCapacityUnits
	}
	return aws.ToFloat64(c.CapacityUnits)
}

func writeUnits(c *types.ConsumedCapacity) float64 {
	if c == nil {
		return 0
	}
	if c.WriteCapacityUnits != nil {
		return *c.WriteCapacityUnits
	}
	return aws.ToFloat64(c.CapacityUnits)
}
