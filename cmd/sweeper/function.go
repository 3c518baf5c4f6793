package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/emf"
)

// Namespace is the CloudWatch namespace of the sweeper's metrics.
const Namespace = "idemkey"

// settings is the function's configuration.
type settings struct {
	Table              string
	Segments           int
	PageSize           int
	ItemsPerSecond     float64
	ReadUnitsPerSecond float64
	Margin             time.Duration
	DryRun             bool
	// Region is dynamostore.SweepOptions.Region: the writer region whose
	// records alone the function sweeps; "" for every record.
	Region string
	// Schema is dynamostore.SweepOptions.Schema: where the key records are
	// in the table (the zero value: a dedicated key table).
	Schema dynamostore.KeySchema
	// Mode is dynamostore.SweepOptions.Mode ("": scan).
	Mode dynamostore.SweepMode
	// BodyBucket is the bucket of the writers' large response bodies
	// ("": none).
	BodyBucket string
}

// configFromEnv reads the settings from the variables the package doc
// lists; an unset variable selects dynamostore's default.
func configFromEnv(getenv func(string) string) (settings, error) {
	s := settings{Table: getenv("KEY_TABLE")}
	if s.Table == "" {
		return s, errors.New("KEY_TABLE is not set")
	}
	var err error
	num := func(name string, parse func(string) error) {
		if v := strings.TrimSpace(getenv(name)); v != "" && err == nil {
			if perr := parse(v); perr != nil {
				err = fmt.Errorf("%s=%q: %w", name, v, perr)
			}
		}
	}
	positive := func(dst *int) func(string) error {
		return func(v string) error {
			n, err := strconv.Atoi(v)
			if err == nil && n <= 0 {
				err = errors.New("must be positive")
			}
			*dst = n
			return err
		}
	}
	float := func(dst *float64) func(string) error {
		return func(v string) (err error) {
			if *dst, err = strconv.ParseFloat(v, 64); err == nil && (math.IsNaN(*dst) || math.IsInf(*dst, 0)) {
				err = errors.New("must be a finite number")
			}
			return err
		}
	}
	num("SEGMENTS", positive(&s.Segments))
	num("PAGE_SIZE", positive(&s.PageSize))
	num("RATE", float(&s.ItemsPerSecond))
	num("READ_RATE", float(&s.ReadUnitsPerSecond))
	num("MARGIN", func(v string) (err error) {
		if s.Margin, err = time.ParseDuration(v); err == nil && s.Margin <= 0 {
			err = errors.New("must be positive")
		}
		return err
	})
	num("DRY_RUN", func(v string) (err error) { s.DryRun, err = strconv.ParseBool(v); return err })
	if err == nil && s.Segments > dynamostore.MaxSweepSegments {
		err = fmt.Errorf("SEGMENTS: at most %d, so that the resume cursor fits in one 400 KB item", dynamostore.MaxSweepSegments)
	}
	switch mode := strings.TrimSpace(getenv("SWEEP_MODE")); mode {
	case "":
	case string(dynamostore.SweepScan), string(dynamostore.SweepIndex):
		s.Mode = dynamostore.SweepMode(mode)
	default:
		if err == nil {
			err = fmt.Errorf("SWEEP_MODE=%q: must be %q (read the whole table) or %q (read the expiry index, which the table must have: "+
				"create it with dynamostore.EnsureExpiryIndex or idemctl create-table -index)", mode, dynamostore.SweepScan, dynamostore.SweepIndex)
		}
	}
	s.BodyBucket = strings.TrimSpace(getenv("BODY_BUCKET"))
	s.Region = strings.TrimSpace(getenv("WRITER_REGION"))
	switch own := strings.TrimSpace(getenv("AWS_REGION")); {
	case err != nil || s.Region == "":
	case len(s.Region) > dynamostore.MaxSweepRegionLen:
		err = fmt.Errorf("WRITER_REGION: at most %d bytes", dynamostore.MaxSweepRegionLen)
	case own != "" && own != s.Region:
		err = fmt.Errorf("WRITER_REGION=%q but the function runs in %s: a region's records must be swept in that region's own replica "+
			"(a delete in another replica can replicate over a newer write); deploy this sweeper in %s", s.Region, own, s.Region)
	}
	if err == nil {
		s.Schema = dynamostore.KeySchema{
			PartitionKey: strings.TrimSpace(getenv("KEY_PARTITION_KEY")),
			SortKey:      strings.TrimSpace(getenv("KEY_SORT_KEY")),
			SortKeyValue: strings.TrimSpace(getenv("KEY_SORT_KEY_VALUE")),
			Prefix:       strings.TrimSpace(getenv("KEY_PREFIX")),
			TTLAttribute: strings.TrimSpace(getenv("KEY_TTL_ATTRIBUTE")),
		}
		if verr := s.Schema.Validate(); verr != nil {
			err = fmt.Errorf("KEY_PARTITION_KEY, KEY_SORT_KEY, KEY_SORT_KEY_VALUE, KEY_PREFIX, KEY_TTL_ATTRIBUTE: %w", verr)
		}
	}
	return s, err
}

// function is the Lambda handler and what it needs.
type function struct {
	client dynamostore.SweepClient
	bodies dynamostore.BodyStore // BODY_BUCKET's; nil without one
	cfg    settings
	stdout io.Writer // receives the EMF line
	logger *slog.Logger
	now    func() time.Time
}

// handle runs one sweep for a scheduled event (dynamostore's
// Sweeper.Resume): it continues the pass the cursor stored in the table
// left unfinished, sweeps until the pass finishes or the invocation's
// deadline (minus the margin) nears, and stores the new cursor; it writes
// one EMF line to stdout and returns the report. An invalid stored cursor
// is logged and replaced by a new pass. It returns an error when any
// DynamoDB call failed, so that Lambda's own Errors metric counts the
// invocation too; the EMF line is written in every case.
func (f *function) handle(ctx context.Context, ev events.EventBridgeEvent) (*dynamostore.SweepReport, error) {
	log := f.logger.With(slog.String("event_id", ev.ID))
	sweeper := dynamostore.NewSweeper(f.client, f.cfg.Table, func(o *dynamostore.SweepOptions) {
		o.Segments, o.PageSize = f.cfg.Segments, f.cfg.PageSize
		o.ItemsPerSecond, o.ReadUnitsPerSecond = f.cfg.ItemsPerSecond, f.cfg.ReadUnitsPerSecond
		o.DeadlineMargin, o.DryRun = f.cfg.Margin, f.cfg.DryRun
		o.Now, o.Logger, o.Region, o.Schema = f.now, log, f.cfg.Region, f.cfg.Schema
		o.Mode, o.Bodies = f.cfg.Mode, f.bodies
	})
	report, err := sweeper.Resume(ctx)
	if report == nil {
		report = &dynamostore.SweepReport{Table: f.cfg.Table, DryRun: f.cfg.DryRun, Started: f.now(), Errors: 1}
	}
	f.emit(ev, report)
	return report, err
}

// emit writes the report's EMF line; a failure to write is logged.
func (f *function) emit(ev events.EventBridgeEvent, r *dynamostore.SweepReport) {
	finished := 0.0
	if r.Finished {
		finished = 1
	}
	props := map[string]any{
		"StoppedBy": string(r.StoppedBy), "DryRun": r.DryRun, "Segments": r.Segments,
		"Pages": r.Pages, "Foreign": r.Foreign, "Unowned": r.Unowned, "Unindexed": r.Unindexed, "EventId": ev.ID,
	}
	if !ev.Time.IsZero() {
		props["ScheduledTime"] = ev.Time.UTC().Format(time.RFC3339)
	}
	if f.cfg.Region != "" {
		props["WriterRegion"] = f.cfg.Region
	}
	doc := emf.Document{
		Namespace:  Namespace,
		Timestamp:  f.now(),
		Dimensions: []emf.Dimension{{Name: "TableName", Value: f.cfg.Table}},
		Metrics: []emf.Metric{
			{Name: "Scanned", Value: float64(r.Scanned), Unit: emf.Count},
			{Name: "Evicted", Value: float64(r.Evicted), Unit: emf.Count},
			{Name: "Reclaimed", Value: float64(r.Reclaimed), Unit: emf.Count},
			{Name: "Skipped", Value: float64(r.Skipped), Unit: emf.Count},
			{Name: "LiveKeys", Value: float64(r.LiveKeys), Unit: emf.Count},
			{Name: "OldestLiveKeyAgeSeconds", Value: r.OldestLiveKeyAge.Seconds(), Unit: emf.Seconds},
			{Name: "EvictionLagSeconds", Value: r.EvictionLag.Seconds(), Unit: emf.Seconds},
			{Name: "DurationMs", Value: float64(r.Duration.Milliseconds()), Unit: emf.Milliseconds},
			{Name: "ConsumedRCU", Value: r.ConsumedReadUnits, Unit: emf.None},
			{Name: "ConsumedWCU", Value: r.ConsumedWriteUnits, Unit: emf.None},
			{Name: "ScannedPerEvicted", Value: r.ScannedPerEvicted(), Unit: emf.None},
			{Name: "Errors", Value: float64(r.Errors), Unit: emf.Count},
			{Name: "PassFinished", Value: finished, Unit: emf.Count},
		},
		Properties: props,
	}
	if f.bodies != nil {
		doc.Metrics = append(doc.Metrics, emf.Metric{Name: "BodiesDeleted", Value: float64(r.BodiesDeleted), Unit: emf.Count})
	}
	if err := emf.Write(f.stdout, doc); err != nil {
		f.logger.Error("idemkey sweeper: writing the metrics line", slog.String("error", err.Error()))
	}
}
