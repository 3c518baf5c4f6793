package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// Resume runs one Sweep that continues the pass earlier calls of Resume on
// the same table and Region left unfinished, keeping the cursor in the
// table, so that a scheduled sweeper needs no state of its own. Unless
// DryRun, it reads the stored cursor (one consistent GetItem) and, when
// the cursor changed, writes the new one (one PutItem) or deletes the item
// once the pass finished (one DeleteItem). A stored cursor that cannot be
// used (another table, Region or Mode, or corrupt) is logged at Warn and a
// new pass starts. A scan pass resumes with its cursor's segments; when
// that is not SweepOptions.Segments an Info record says the new number
// applies from the next pass.
//
// The cursor item's partition key is "#sweep-cursor" (with "/" and the
// Region when set), after Prefix + "#" on a KeySchema with a Prefix, with
// SortKeyValue as its sort key on one with a SortKey. No key record's
// partition key begins so: sweeps count the item as foreign. Concurrent
// callers overwrite each other's cursor, which at worst repeats part of a
// pass.
//
// A failed read or write of the cursor counts in the report's Errors and
// ErrorMessages and is returned, joined with the sweep's error; when the
// read fails nothing is swept. The report's Cursor is always empty.
func (s *Sweeper) Resume(ctx context.Context) (*SweepReport, error) {
	start := s.opts.Now()
	var stored string
	if !s.opts.DryRun {
		var err error
		if stored, err = s.layout.loadSweepCursor(ctx, s.client, s.table, s.opts.Region); err != nil {
			msg := fmt.Sprintf("loading the resume cursor: %v", err)
			s.opts.Logger.LogAttrs(ctx, slog.LevelError, "idemkey sweep: "+msg)
			return &SweepReport{Table: s.table, DryRun: s.opts.DryRun, Started: start,
				Errors: 1, ErrorMessages: []string{msg}}, err
		}
	}
	report, err := s.Sweep(ctx, stored)
	if errors.Is(err, ErrInvalidCursor) {
		s.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "idemkey sweep: stored cursor unusable, starting a new pass",
			slog.String("error", err.Error()))
		report, err = s.Sweep(ctx, "")
	}
	if report == nil {
		return nil, err
	}
	if s.opts.Mode != SweepIndex && report.Segments != s.opts.Segments {
		s.opts.Logger.LogAttrs(ctx, slog.LevelInfo, "idemkey sweep: the pass resumed with its own number of segments; Segments applies from the next pass",
			slog.Int("pass_segments", report.Segments), slog.Int("segments", s.opts.Segments))
	}
	if !s.opts.DryRun && report.Cursor != stored {
		if serr := s.layout.saveSweepCursor(ctx, s.client, s.table, s.opts.Region, report.Cursor, s.opts.Now()); serr != nil {
			msg := fmt.Sprintf("saving the resume cursor: %v", serr)
			s.opts.Logger.LogAttrs(ctx, slog.LevelError, "idemkey sweep: "+msg)
			report.Errors++
			if len(report.ErrorMessages) < sweepErrorMessages {
				report.ErrorMessages = append(report.ErrorMessages, msg)
			}
			err = errors.Join(err, serr)
		}
	}
	report.Cursor = ""
	return report, err
}
