package steps

import "time"

// Default health check intervals.
const (
	DefaultUnhealthyInterval = 500 * time.Millisecond
	DefaultHealthyInterval   = 30 * time.Second
)

// Phase is where health checking is: waiting for the first pass, or watching liveness.
type Phase int

// Health phases.
const (
	Startup Phase = iota
	Liveness
)

// Outcome is what a health check result means.
type Outcome int

// Health outcomes.
const (
	// Retry: startup check failed, try again after Wait.
	Retry Outcome = iota
	// BecameHealthy: the startup check passed; liveness checks start after Wait.
	BecameHealthy
	// NeverHealthy: the startup check kept failing until the start timeout.
	NeverHealthy
	// StillHealthy: a liveness check passed; check again after Wait.
	StillHealthy
	// BecameUnhealthy: a liveness check failed; the instance crashes.
	BecameUnhealthy
)

// Schedule holds the health check timings.
type Schedule struct {
	// StartTimeout bounds the startup phase (0 = unbounded).
	StartTimeout time.Duration
	// UnhealthyInterval separates startup attempts.
	UnhealthyInterval time.Duration
	// HealthyInterval separates liveness attempts.
	HealthyInterval time.Duration
}

// Decision is what to do next.
type Decision struct {
	Outcome Outcome
	// Wait is the pause before the next attempt (Retry, BecameHealthy, StillHealthy).
	Wait time.Duration
}

// Next decides what follows a check result, given the phase and the time since health
// checking started. A startup retry never waits past the start timeout.
func (s Schedule) Next(phase Phase, passed bool, sinceStart time.Duration) Decision {
	if phase == Liveness {
		if passed {
			return Decision{Outcome: StillHealthy, Wait: s.HealthyInterval}
		}
		return Decision{Outcome: BecameUnhealthy}
	}
	if passed {
		return Decision{Outcome: BecameHealthy, Wait: s.HealthyInterval}
	}
	if s.StartTimeout <= 0 {
		return Decision{Outcome: Retry, Wait: s.UnhealthyInterval}
	}
	left := s.StartTimeout - sinceStart
	if left <= 0 {
		return Decision{Outcome: NeverHealthy}
	}
	return Decision{Outcome: Retry, Wait: min(s.UnhealthyInterval, left)}
}

// AttemptDeadline is how long a startup attempt may run at sinceStart (0 = unbounded):
// the start timeout also interrupts an attempt that hangs.
func (s Schedule) AttemptDeadline(sinceStart time.Duration) time.Duration {
	if s.StartTimeout <= 0 {
		return 0
	}
	return max(s.StartTimeout-sinceStart, time.Nanosecond)
}
