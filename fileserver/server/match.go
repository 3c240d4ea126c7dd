package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"drover.dev/fileserver/resources"
)

// DefaultMatchReadTimeout bounds reading a resource_match body when MatchLimits says
// nothing.
const DefaultMatchReadTimeout = 30 * time.Second

// matchRetryAfter is the Retry-After (seconds) of a match refused for want of a slot.
const matchRetryAfter = 1

// MatchLimits bound resource matching, which needs no signature: the body, its
// entries, the matches in progress and the time a client may take to send its body
// (which holds a slot).
type MatchLimits struct {
	// MaxBytes caps a resource_match body (413 above).
	MaxBytes int64
	// MaxResources caps its entries (413 above).
	MaxResources int
	// MaxConcurrent caps the matches in progress; one more is refused at once with 503
	// and Retry-After.
	MaxConcurrent int
	// ReadTimeout bounds reading the body (408 after); 0 is DefaultMatchReadTimeout.
	ReadTimeout time.Duration
}

// check refuses limits that are not positive and defaults ReadTimeout.
func (l *MatchLimits) check() error {
	if l.MaxBytes <= 0 || l.MaxResources <= 0 || l.MaxConcurrent <= 0 || l.ReadTimeout < 0 {
		return fmt.Errorf("server: match limits must be positive, got %+v", *l)
	}
	if l.ReadTimeout == 0 {
		l.ReadTimeout = DefaultMatchReadTimeout
	}
	return nil
}

// matchResources answers the subset of the posted resources the pool holds, within
// the MatchLimits.
func (s *Server) matchResources(w http.ResponseWriter, r *http.Request) {
	lim := s.opts.Match
	select {
	case s.matches <- struct{}{}:
		defer func() { <-s.matches }()
	default:
		w.Header().Set("Retry-After", strconv.Itoa(matchRetryAfter))
		s.refuse(w, r, http.StatusServiceUnavailable, "busy",
			fmt.Sprintf("resource_match: %d matches in progress, the limit (max_concurrent_matches); retry later", lim.MaxConcurrent))
		return
	}
	s.metrics.MatchesInFlight.Inc()
	defer s.metrics.MatchesInFlight.Dec()
	if r.ContentLength > lim.MaxBytes {
		s.refuse(w, r, http.StatusRequestEntityTooLarge, "too-large", matchTooLarge(lim))
		return
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(lim.ReadTimeout))
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, lim.MaxBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		s.refuse(w, r, http.StatusRequestEntityTooLarge, "too-large", matchTooLarge(lim))
		return
	case errors.Is(err, os.ErrDeadlineExceeded):
		s.refuse(w, r, http.StatusRequestTimeout, "timeout", fmt.Sprintf("resource_match: body not received within %s", lim.ReadTimeout))
		return
	case err != nil:
		s.refuse(w, r, http.StatusBadRequest, "interrupted", "resource_match: body interrupted: "+err.Error())
		return
	}
	list, err := resources.DecodeMatch(data, lim.MaxResources)
	var tooMany *resources.TooManyError
	switch {
	case errors.As(err, &tooMany):
		s.refuse(w, r, http.StatusRequestEntityTooLarge, "too-many-resources",
			fmt.Sprintf("resource_match: more than %d resources (max_match_resources): send them in batches", lim.MaxResources))
		return
	case err != nil:
		s.refuse(w, r, http.StatusBadRequest, "bad-resource", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, s.opts.Store.Match(list))
}

func matchTooLarge(lim MatchLimits) string {
	return fmt.Sprintf("resource_match: body larger than %d bytes (max_match_bytes)", lim.MaxBytes)
}
