package httpapi

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"drover.dev/bbs/models"
	"drover.dev/lib/httpserver"
)

// logRequests logs every request with its method, path, status and duration, and turns
// a handler panic into a 500 instead of a dropped connection.
func (a *api) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &httpserver.StatusRecorder{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				a.log.Error("request-panicked", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p))
				if rec.Status == 0 {
					a.writeJSON(rec, http.StatusInternalServerError, errorBody(models.ErrTypeUnknown, "internal error"))
				}
			}
			if rec.Status == 0 {
				rec.Status = http.StatusOK
			}
			level := slog.LevelInfo
			if rec.Status >= http.StatusInternalServerError {
				level = slog.LevelError
			}
			a.log.LogAttrs(r.Context(), level, "request-served",
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.Int("status", rec.Status),
				slog.Duration("duration", time.Since(start)),
			)
		}()
		next.ServeHTTP(rec, r)
	})
}
