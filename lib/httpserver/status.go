package httpserver

import "net/http"

// StatusRecorder is a ResponseWriter that remembers the first status written through
// it (200 once a body is written without one), for request logs and metrics. Unwrap
// lets http.ResponseController reach the real writer (to flush event streams).
type StatusRecorder struct {
	http.ResponseWriter
	// Status is the status written so far; 0 while nothing was.
	Status int
}

// WriteHeader records the first status and passes it on.
func (s *StatusRecorder) WriteHeader(status int) {
	if s.Status == 0 {
		s.Status = status
	}
	s.ResponseWriter.WriteHeader(status)
}

// Write records the implicit 200 of a body written without a status.
func (s *StatusRecorder) Write(b []byte) (int, error) {
	if s.Status == 0 {
		s.Status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap returns the wrapped writer for http.ResponseController.
func (s *StatusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
