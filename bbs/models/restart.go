package models

import (
	"math"
	"math/bits"
	"time"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// RestartPolicy decides when a crashed ActualLRP is restarted (Diego's
// RestartCalculator, reference/bbs.md §3.3). Crash counts are the values after the
// crash being handled was counted.
type RestartPolicy struct {
	// ImmediateRestarts: crash counts below it restart at once.
	ImmediateRestarts int32
	// MinBackoff is the wait after the first crash that is not restarted at once;
	// each later crash doubles it, up to MaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// MaxRestarts: from this crash count on, an instance is never restarted.
	MaxRestarts int32
	// CrashResetAfter: a crash of an instance RUNNING for longer than this starts
	// counting from 1 again.
	CrashResetAfter time.Duration
}

// DefaultRestartPolicy is Diego's policy: 3 immediate restarts, then 30s doubling
// to 16m, at most 200 restarts, counts reset after 5 minutes of running.
func DefaultRestartPolicy() RestartPolicy {
	return RestartPolicy{
		ImmediateRestarts: 3,
		MinBackoff:        30 * time.Second,
		MaxBackoff:        16 * time.Minute,
		MaxRestarts:       200,
		CrashResetAfter:   5 * time.Minute,
	}
}

// NextCrashCount is the crash count of a after it crashes at now: 1 when it was
// RUNNING for longer than CrashResetAfter, else its count plus one. nil counts as
// a fresh instance.
func (p RestartPolicy) NextCrashCount(a *modelsv1.ActualLRP, now time.Time) int32 {
	if a.GetState() == running && now.Sub(time.Unix(0, a.GetSince())) > p.CrashResetAfter {
		return 1
	}
	if a.GetCrashCount() == math.MaxInt32 {
		return math.MaxInt32
	}
	return a.GetCrashCount() + 1
}

// RestartImmediately reports whether an instance whose crash count (after the
// increment) is crashCount restarts at once, inside the crash call. With the
// default policy the 1st and 2nd crash of a fresh instance do, the 3rd waits.
func (p RestartPolicy) RestartImmediately(crashCount int32) bool {
	return crashCount < p.ImmediateRestarts
}

// RestartAt is when an instance that crashed at since with crashCount crashes is
// due to restart; false means never. With the default policy: 0–2 at once, 3 after
// 30s, 4 after 1m, 5 after 2m, 6 after 4m, 7 after 8m, 8–199 after 16m, 200+ never.
func (p RestartPolicy) RestartAt(crashCount int32, since time.Time) (time.Time, bool) {
	switch {
	case crashCount < p.ImmediateRestarts:
		return since, true
	case crashCount < p.MaxRestarts:
		return since.Add(p.backoff(crashCount - p.ImmediateRestarts)), true
	default:
		return time.Time{}, false
	}
}

// ShouldRestart reports whether the CRASHED row a is due to restart at now.
// Rows in any other state are never restarted by this rule.
func (p RestartPolicy) ShouldRestart(a *modelsv1.ActualLRP, now time.Time) bool {
	if a.GetState() != crashed {
		return false
	}
	at, ok := p.RestartAt(a.GetCrashCount(), time.Unix(0, a.GetSince()))
	return ok && !at.After(now)
}

// backoff is MinBackoff doubled exponent times, with the exponent capped at
// log2(ceil(MaxBackoff/MinBackoff)) and the result at MaxBackoff, exactly as Diego
// computes it.
func (p RestartPolicy) backoff(exponent int32) time.Duration {
	if p.MinBackoff <= 0 {
		return 0
	}
	if maxExp := p.maxBackoffExponent(); exponent > maxExp {
		exponent = maxExp
	}
	d := p.MinBackoff << uint(exponent)
	if d > p.MaxBackoff || d <= 0 {
		d = p.MaxBackoff
	}
	return d
}

// maxBackoffExponent is floor(log2(ceil(MaxBackoff/MinBackoff))), Diego's MaxBackoffCount.
func (p RestartPolicy) maxBackoffExponent() int32 {
	steps := (p.MaxBackoff + p.MinBackoff - 1) / p.MinBackoff
	if steps < 1 {
		return 0
	}
	return int32(bits.Len64(uint64(steps)) - 1)
}
