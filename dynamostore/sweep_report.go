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

// severity orders the reasons, so that a report names the worst one of its
// segments.
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
// Every scanned item is counted once in Evicted, Reclaimed, Skipped,
// LiveKeys or Foreign, or, when its delete failed, in Errors; a page
// interrupted by cancellation is the exception (see Sweep).
//
// In SweepIndex mode the items are the entries of the expiry index read
// by Query, which hold the keys and the attributes a sweep decides on:
// every record whose exp passed, in progress or completed, and per shard
// the record that expires next; and the items of the scan for the records
// outside the index, while it runs (see SweepMode). The live records are otherwise not read,
// so LiveKeys and OldestLiveKeyAge describe the records read (see each
// field), and Reclaimed is zero (see SweepMode); the other figures mean
// what they mean in SweepScan mode.
type SweepReport struct {
	Table string
	// Mode is the sweep's mode.
	Mode   SweepMode
	DryRun bool
	// Segments is the number of parallel scan segments; in SweepIndex
	// mode, the number of shards swept in parallel.
	Segments int
	Started  time.Time
	Duration time.Duration
	// Pages is the number of Scan (or Query) pages read.
	Pages int64
	// Scanned is the number of items (index entries) read, from
	// DynamoDB's ScannedCount (or the number of items returned, where an
	// implementation leaves ScannedCount out). Of the scan for the records
	// outside the index (SweepIndex mode), it counts the items its filter
	// returned; those it dropped, which are in the index, count in the
	// rate limit and in ConsumedReadUnits only.
	Scanned int64
	// Evicted counts expired records deleted (with DryRun: that would
	// have been).
	Evicted int64
	// Reclaimed counts stuck records deleted: in progress, lock expired.
	Reclaimed int64
	// Skipped counts deletes whose condition failed: the record was
	// claimed again, completed or deleted between the scan and the delete.
	// A delete the SDK sent again after an attempt whose answer was lost
	// (a timeout, a 5xx) and that then finds the record gone, by a
	// consistent read, had deleted it: it counts as Evicted or Reclaimed.
	// In SweepIndex mode it also counts entries of records already
	// deleted that the index, eventually consistent, still returned, and
	// expired items of the key namespace whose state is none of this
	// package's (the index does not hold the state; a scan counts them as
	// Foreign).
	Skipped int64
	// LiveKeys counts live records seen: neither expired nor stuck. In
	// SweepIndex mode those are the next record to expire of each shard
	// (at most ExpiryIndexShards; with SweepOptions.Region, the next of
	// the records the sweep may delete, and those of them on the page
	// that read it), not the table's live records, and the
	// live records that the scan for the records outside the index read.
	LiveKeys int64
	// Foreign counts items that are not key records, and with
	// SweepOptions.Region the records of other regions, left alone.
	Foreign int64
	// Unowned counts, among Foreign, the key records that a sweep with
	// SweepOptions.Region saw and that no regional sweep deletes: without
	// Owns, the records of no region (written by a Store without
	// Options.Region: give that Store its region); with Owns, those it
	// calls orphans. An expired one counts toward EvictionLag. The
	// summary log record is a warning when there is one.
	Unowned int64
	// Unindexed counts, in SweepIndex mode, the key records read by the
	// scan for the records outside the expiry index: those without
	// ExpiryBucketAttribute, written before the index existed or by a
	// Store without Options.ExpiryIndex (see SweepMode). Each is also
	// counted in Evicted, Reclaimed, Skipped, LiveKeys or Foreign as a
	// scan counts it, and when expired toward EvictionLag. Zero in
	// SweepScan mode; not zero means a Store writing the table lacks
	// Options.ExpiryIndex, or records from before it remain: the summary
	// log record is then a warning.
	Unindexed int64
	// BodiesDeleted counts the response bodies deleted from
	// SweepOptions.Bodies after their records were evicted.
	BodiesDeleted int64
	// OldestLiveKeyAge is the age (now minus its claim time) of the oldest
	// live record seen; zero when none was seen. In SweepIndex mode the
	// records seen are those with the smallest exp of each shard (with
	// SweepOptions.Region, among the records the sweep may delete), and the
	// figure is an estimate: a record's exp is its claim time plus its
	// lease plus the Retention (a commit within the lock keeps it), so the
	// record that expires first is the one claimed first when every Store
	// writing the table has the same Retention and lease; otherwise an
	// older record that expires later is missed, older by at most the
	// difference in Retention plus the longest lease (a CommitFirst record
	// has no lease), or more for a record committed after its lock expired
	// (its exp counts from its completion).
	OldestLiveKeyAge time.Duration
	// EvictionLag is how long ago the oldest expired record seen expired:
	// how far eviction is behind. Zero when no expired record was seen.
	// In SweepIndex mode each shard's expired records are read oldest
	// first, so a finished pass sees the oldest expired record of the
	// index; a record outside the index counts once the scan for such
	// records reads it, in every run until it is deleted (see SweepMode).
	EvictionLag time.Duration
	// ConsumedReadUnits and ConsumedWriteUnits sum the capacity DynamoDB
	// reported for the Scans (or Queries) and the successful deletes, the
	// whole run's: a delete's write units include the index entry it
	// removes. Zero on implementations that report none (a bare minidyn;
	// the embedded emulator's front reports an estimate).
	ConsumedReadUnits, ConsumedWriteUnits float64
	// Errors counts failed DynamoDB calls; ErrorMessages holds the first
	// five, naming keys only by a short hash of their partition key.
	Errors        int64
	ErrorMessages []string
	// Finished is true when the pass is complete; Cursor is then "",
	// except in SweepIndex mode while a scan for the records outside the
	// index is unfinished (it spans passes: see SweepMode).
	Finished bool
	// StoppedBy says why an unfinished pass stopped ("" when finished).
	StoppedBy SweepStop
	// Cursor resumes the pass with the next Sweep. It is opaque, and holds
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
