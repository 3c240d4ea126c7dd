package httpapi

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"drover.dev/bbs/models"
)

// statusRecorder remembers the status a handler wrote. Unwrap lets
// http.ResponseController reach the real writer to flush event streams.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(status int) {
	if s.status == 0 {
		s.status = status
	}
	s.ResponseWriter.WriteHeader(status)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap returns the wrapped writer for http.ResponseController.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// logRequests logs every request with its method, path, status and duration, and turns
// a handler panic into a 500 instead of a dropped connection.
func (a *api) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				a.log.Error("request-panicked", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p))
				if rec.status == 0 {
					a.writeJSON(rec, http.StatusInternalServerError, errorBody(models.ErrTypeUnknown, "internal error"))
				}
			}
			if rec.status == 0 {
				rec.status = http.StatusOK
			}
			level := slog.LevelInfo
			if rec.status >= http.StatusInternalServerError {
				level = slog.LevelError
			}
			a.log.LogAttrs(r.Context(), level, "request-served",
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.Int("status", rec.status),
				slog.Duration("duration", time.Since(start)),
			)
		}()
		next.ServeHTTP(rec, r)
	})
}
