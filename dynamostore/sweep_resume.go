package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// Resume runs one sweep that continues the pass earlier calls of Resume on
// the same table and SweepOptions.Region left unfinished, and keeps the
// cursor in the table itself, so that a scheduled sweeper needs no state
// of its own:
//
//   - unless DryRun, it reads the stored cursor (one consistent GetItem);
//   - it sweeps from there, or from the start of a new pass when there is
//     none or when the stored cursor cannot be used (written for another
//     table, Region or Mode, or corrupt: logged at Warn); a scan pass
//     resumes with the cursor's number of segments, so that it covers the
//     table exactly once, and when that is not SweepOptions.Segments an
//     Info record says so: the new number applies from the next pass;
//   - unless DryRun, when the cursor changed it writes the cursor of the
//     unfinished pass (one PutItem), or deletes the item once the pass
//     finished (one DeleteItem); in SweepIndex mode an unfinished scan
//     for the records outside the index keeps a cursor after its pass
//     finished (see SweepMode).
//
// The cursor item's partition key is "#sweep-cursor" ("#sweep-cursor/"
// followed by the region with Region set, so that each region's sweeper of
// a global table keeps its own item), preceded by Prefix + "#" on a
// KeySchema with a Prefix, and with the schema's SortKeyValue as its sort
// key on one with a SortKey. No key record's partition key begins with
// '#' (or Prefix + "##"), and sweeps count the item as foreign and never
// delete it. Concurrent callers overwrite each other's cursor; as each saves only
// positions it has swept up to, that at worst repeats part of a pass.
//
// A failed read or write of the cursor counts in the report's Errors and
// ErrorMessages, and is returned, joined with the sweep's own error; when
// the read fails nothing is swept and the report holds only that error.
// The returned report's Cursor is always empty: the cursor holds
// partition key values, and it is in the table.
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
