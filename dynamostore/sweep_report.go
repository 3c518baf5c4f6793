package dynamostore

import (
	"encoding/json"
	"log/slog"
	"time"
)

// SweepStop says why a sweep stopped before finishing its pass.
type SweepStop string

const (
	// SweepStoppedByBudget: the budget was spent or the deadline neared.
	SweepStoppedByBudget SweepStop = "budget"
	// SweepStoppedByCancel: the context was canceled or its deadline passed.
	SweepStoppedByCancel SweepStop = "canceled"
	// SweepStoppedByError: a Scan failed.
	SweepStoppedByError SweepStop = "error"
)

// severity orders the reasons: a report names its parts' worst.
func (s SweepStop) severity() int {
	switch s {
	case SweepStoppedByBudget:
		return 1
	case SweepStoppedByCancel:
		return 2
	case SweepStoppedByError:
		return 3
	}
	return 0
}

// SweepReport is what one Sweep did. Its counts cover this run only; the
// runs of one pass add up to the pass.
//
// Every item read is counted once in Evicted, Reclaimed, Skipped, LiveKeys
// or Foreign, or, when its delete failed, in Errors, except on a page
// interrupted by cancellation (see Sweep). In SweepIndex mode the items are
// the index entries read (every record whose exp passed, and per shard the
// one that expires next) and the items of the scan for the records outside
// the index while it runs (see SweepMode).
type SweepReport struct {
	Table  string
	Mode   SweepMode
	DryRun bool
	// Segments is the number of parallel scan segments (in SweepIndex
	// mode, of shards swept in parallel).
	Segments int
	Started  time.Time
	Duration time.Duration
	// Pages is the number of Scan (or Query) pages read.
	Pages int64
	// Scanned is the number of items read: DynamoDB's ScannedCount, or the
	// items returned where an implementation leaves it out. Of the scan
	// for the records outside the index, only the items its filter
	// returned count; the others count in the rate limit and
	// ConsumedReadUnits only.
	Scanned int64
	// Evicted counts expired records deleted (with DryRun: that would
	// have been).
	Evicted int64
	// Reclaimed counts stuck records deleted: in progress, lock expired.
	Reclaimed int64
	// Skipped counts deletes whose condition failed: the record was
	// claimed again, completed or deleted since it was read. A delete the
	// SDK retried after a lost answer that finds the record gone by a
	// consistent read counts as Evicted or Reclaimed. In SweepIndex mode
	// it also counts stale index entries and expired items of the key
	// namespace in no state of this package (a scan counts them Foreign).
	Skipped int64
	// LiveKeys counts the live records read: neither expired nor stuck. In
	// SweepIndex mode those are each shard's next to expire (with a
	// Region, up to the next of its own) and the live records of the scan
	// for the records outside the index.
	LiveKeys int64
	// Foreign counts items that are not key records and, with
	// SweepOptions.Region, the records left to other regions.
	Foreign int64
	// Unowned counts, among Foreign, the key records of a regional sweep
	// that no regional sweep deletes: without Owns, those of no region
	// (give their Store its Options.Region); with Owns, its orphans. An
	// expired one counts toward EvictionLag. The summary log record is
	// then a warning.
	Unowned int64
	// Unindexed counts, in SweepIndex mode, the key records without
	// ExpiryBucketAttribute read by the scan for them (see SweepMode),
	// each also counted as a scan counts it. Not zero means a Store lacks
	// Options.ExpiryIndex or older records remain; the summary log record
	// is then a warning.
	Unindexed int64
	// BodiesDeleted counts the response bodies deleted from
	// SweepOptions.Bodies after their records were evicted.
	BodiesDeleted int64
	// OldestLiveKeyAge is the age (now minus its claim time) of the oldest
	// live record read; zero when none was. In SweepIndex mode it is an
	// estimate from each shard's next record to expire: with one
	// Retention and lease for every Store that is the oldest; otherwise an
	// older record may be missed, older by at most the difference in
	// Retention plus the longest lease, or more for a record committed
	// after its lock expired (its exp counts from its completion).
	OldestLiveKeyAge time.Duration
	// EvictionLag is how long ago the oldest expired record read expired
	// (zero when none was). A finished SweepIndex pass reads each shard's
	// oldest; a record outside the index counts in every run whose scan
	// reads it until it is deleted.
	EvictionLag time.Duration
	// ConsumedReadUnits and ConsumedWriteUnits sum the capacity DynamoDB
	// reported for the reads and the successful deletes (a delete's
	// include its index entry). Zero where an implementation reports none.
	ConsumedReadUnits, ConsumedWriteUnits float64
	// Errors counts failed DynamoDB calls; ErrorMessages holds the first
	// five, naming keys only by a short hash of their partition key.
	Errors        int64
	ErrorMessages []string
	// Finished is true when the pass is complete; Cursor is then "",
	// unless an index sweep's scan for the records outside the index is
	// unfinished (it spans passes).
	Finished bool
	// StoppedBy says why an unfinished pass stopped ("" when finished).
	StoppedBy SweepStop
	// Cursor resumes the pass with the next Sweep. It is opaque and holds
	// partition key values: store it like the table's data, never log it.
	Cursor string
}

// ScannedPerEvicted is the number of items scanned per record evicted: the
// read cost of one eviction. Zero when nothing was evicted.
func (r *SweepReport) ScannedPerEvicted() float64 {
	if r.Evicted == 0 {
		return 0
	}
	return float64(r.Scanned) / float64(r.Evicted)
}

// attrs returns every figure of the report as log attributes. The cursor
// appears only as whether there is one ("resumable").
func (r *SweepReport) attrs() []slog.Attr {
	a := []slog.Attr{
		slog.String("table", r.Table),
		slog.String("mode", string(r.Mode)),
		slog.Bool("dry_run", r.DryRun),
		slog.Int("segments", r.Segments),
		slog.Int64("pages", r.Pages),
		slog.Int64("scanned", r.Scanned),
		slog.Int64("evicted", r.Evicted),
		slog.Int64("reclaimed", r.Reclaimed),
		slog.Int64("skipped", r.Skipped),
		slog.Int64("live_keys", r.LiveKeys),
		slog.Int64("foreign", r.Foreign),
		slog.Int64("unowned", r.Unowned),
		slog.Int64("unindexed", r.Unindexed),
		slog.Int64("bodies_deleted", r.BodiesDeleted),
		slog.Duration("oldest_live_key_age", r.OldestLiveKeyAge),
		slog.Duration("eviction_lag", r.EvictionLag),
		slog.Duration("duration", r.Duration),
		slog.Float64("consumed_rcu", r.ConsumedReadUnits),
		slog.Float64("consumed_wcu", r.ConsumedWriteUnits),
		slog.Float64("scanned_per_evicted", r.ScannedPerEvicted()),
		slog.Int64("errors", r.Errors),
		slog.Bool("finished", r.Finished),
		slog.String("stopped_by", string(r.StoppedBy)),
		slog.Bool("resumable", r.Cursor != ""),
	}
	if len(r.ErrorMessages) > 0 {
		a = append(a, slog.Any("error_messages", r.ErrorMessages))
	}
	return a
}

// LogValue logs the report as a group of its figures, without the cursor.
func (r *SweepReport) LogValue() slog.Value { return slog.GroupValue(r.attrs()...) }

// MarshalJSON writes the report with durations in seconds (ages) and
// milliseconds (duration), the cursor included when there is one.
func (r *SweepReport) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Table              string    `json:"table"`
		Mode               SweepMode `json:"mode,omitempty"`
		DryRun             bool      `json:"dryRun"`
		Segments           int       `json:"segments"`
		Started            time.Time `json:"started"`
		DurationMs         int64     `json:"durationMs"`
		Pages              int64     `json:"pages"`
		Scanned            int64     `json:"scanned"`
		Evicted            int64     `json:"evicted"`
		Reclaimed          int64     `json:"reclaimed"`
		Skipped            int64     `json:"skipped"`
		LiveKeys           int64     `json:"liveKeys"`
		Foreign            int64     `json:"foreign"`
		Unowned            int64     `json:"unowned"`
		Unindexed          int64     `json:"unindexed"`
		BodiesDeleted      int64     `json:"bodiesDeleted,omitempty"`
		OldestLiveKeyAge   float64   `json:"oldestLiveKeyAgeSeconds"`
		EvictionLag        float64   `json:"evictionLagSeconds"`
		ConsumedReadUnits  float64   `json:"consumedReadUnits"`
		ConsumedWriteUnits float64   `json:"consumedWriteUnits"`
		ScannedPerEvicted  float64   `json:"scannedPerEvicted"`
		Errors             int64     `json:"errors"`
		ErrorMessages      []string  `json:"errorMessages,omitempty"`
		Finished           bool      `json:"finished"`
		StoppedBy          SweepStop `json:"stoppedBy,omitempty"`
		Cursor             string    `json:"cursor,omitempty"`
	}{
		r.Table, r.Mode, r.DryRun, r.Segments, r.Started, r.Duration.Milliseconds(), r.Pages, r.Scanned,
		r.Evicted, r.Reclaimed, r.Skipped, r.LiveKeys, r.Foreign, r.Unowned, r.Unindexed, r.BodiesDeleted, r.OldestLiveKeyAge.Seconds(),
		r.EvictionLag.Seconds(), r.ConsumedReadUnits, r.ConsumedWriteUnits, r.ScannedPerEvicted(),
		r.Errors, r.ErrorMessages, r.Finished, r.StoppedBy, r.Cursor,
	})
}
