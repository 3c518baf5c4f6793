package handler

import (
	"context"
	"log/slog"
	"net/http"
	"strings"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/internal/problem"
)

// LogObserver returns the Observer that New installs when
// Options.Guard.Observer is nil: it writes the records Options.Logger
// describes to logger, and without a logger (nil) the records at Warn and
// above to slog.Default(), as it is when they are written. To keep these
// records next to another Observer, combine both with idemkey.Observers.
//
// A record's fields: method, path, key_hash (idemkey.Event.KeyHash),
// outcome (the problem type's name, "replay", "released", or
// "unkeyed-commit-failed" for the failed commit of a request without a
// key), status (the status answered) and error.
func LogObserver(logger *slog.Logger) idemkey.Observer {
	return &logObserver{logger: logger}
}

type logObserver struct{ logger *slog.Logger }

// unkeyedRequestKey is the context key under which a request without a key
// travels to the log observer, whose Event has no method or path.
type unkeyedRequestKey struct{}

func (l *logObserver) Observe(ctx context.Context, e idemkey.Event) {
	method, path := e.Method, e.Path
	if r, ok := ctx.Value(unkeyedRequestKey{}).(*http.Request); ok && e.Mode == idemkey.Unkeyed {
		method, path = r.Method, r.URL.Path
	}
	var outcome string
	status := e.Status
	switch {
	case e.Outcome == idemkey.OutcomeReplay, e.Outcome == idemkey.OutcomeReplayFromCache:
		outcome = "replay"
	case e.Outcome == idemkey.OutcomeExecutedReleased && e.Err == nil && e.Status >= 500:
		outcome = "released"
	case e.Outcome == idemkey.OutcomeExecutedStored, e.Outcome == idemkey.OutcomeExecutedReleased,
		e.Outcome == idemkey.OutcomeUnkeyedCommitted:
		return // a plain execution, or a panic that goes on to the server
	case e.Mode == idemkey.Unkeyed:
		d, _ := problemOf(e.Err)
		outcome, status = "unkeyed-commit-failed", d.Status
	default:
		d, _ := problemOf(e.Err)
		outcome, status = strings.TrimPrefix(d.Type, problem.TypeBase), d.Status
	}
	level := logLevel(status, e.Err)
	logger := l.logger
	if logger == nil {
		if level < slog.LevelWarn {
			return
		}
		logger = slog.Default()
	}
	attrs := []slog.Attr{
		slog.String("method", method),
		slog.String("path", path),
		slog.String("key_hash", e.KeyHash()),
		slog.String("outcome", outcome),
		slog.Int("status", status),
	}
	if e.Err != nil {
		attrs = append(attrs, slog.String("error", e.Err.Error()))
	}
	logger.LogAttrs(ctx, level, "idemkey", attrs...)
}
