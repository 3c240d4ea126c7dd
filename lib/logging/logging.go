// Package logging builds the slog JSON loggers every drover process uses: RFC 3339 UTC
// timestamps with milliseconds, kebab-case messages chosen by callers, and a level that
// can be changed at run time through a *slog.LevelVar.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// TimeFormat is the layout of the "time" attribute: RFC 3339 in UTC with milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// New returns a JSON logger writing to w at the named level, and the LevelVar that
// controls it. level is one of "debug", "info", "warn" or "error" (case-insensitive).
func New(w io.Writer, level string) (*slog.Logger, *slog.LevelVar, error) {
	if w == nil {
		return nil, nil, fmt.Errorf("logging: nil writer")
	}
	lvl, err := ParseLevel(level)
	if err != nil {
		return nil, nil, err
	}
	levelVar := new(slog.LevelVar)
	levelVar.Set(lvl)
	handler := slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level:       levelVar,
		ReplaceAttr: utcTime,
	})
	return slog.New(handler), levelVar, nil
}

// ParseLevel maps "debug", "info", "warn" and "error" (case-insensitive, surrounding
// space ignored) to a slog.Level.
func ParseLevel(level string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(level)) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("unknown log level %q (want debug, info, warn or error)", level)
}

// LevelName is the inverse of ParseLevel: "debug", "info", "warn" or "error".
func LevelName(level slog.Level) string {
	return strings.ToLower(level.String())
}

// Discard returns a logger that drops everything, for tests and optional loggers.
func Discard() *slog.Logger {
	return slog.New(slog.DiscardHandler)
}

// OrDiscard returns logger, or a discarding logger when it is nil.
func OrDiscard(logger *slog.Logger) *slog.Logger {
	if logger == nil {
		return Discard()
	}
	return logger
}

func utcTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey && a.Value.Kind() == slog.KindTime {
		a.Value = slog.StringValue(a.Value.Time().UTC().Format(TimeFormat))
	}
	return a
}
