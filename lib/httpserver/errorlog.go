package httpserver

import (
	"log"
	"log/slog"
	"strings"
)

// ErrorLog returns a *log.Logger for http.Server.ErrorLog that turns each line the
// server prints (TLS handshake failures, panics in handlers) into a warning with a
// kebab-case message, "<name>-error", and the text in "error".
func ErrorLog(logger *slog.Logger, name string) *log.Logger {
	return log.New(errorWriter{logger: logger, msg: name + "-error"}, "", 0)
}

type errorWriter struct {
	logger *slog.Logger
	msg    string
}

func (w errorWriter) Write(p []byte) (int, error) {
	w.logger.Warn(w.msg, "error", strings.TrimSpace(string(p)))
	return len(p), nil
}
