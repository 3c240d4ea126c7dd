package plan

import (
	"time"

	"drover.dev/bbs/models"
)

// Options tune the planner. Zero durations and a zero Restart policy take the
// defaults of DefaultOptions.
type Options struct {
	// StaleUnclaimed: an ORDINARY UNCLAIMED row older than this is re-auctioned (30s).
	StaleUnclaimed time.Duration
	// ExpirePending: a PENDING task older than this is failed (30m).
	ExpirePending time.Duration
	// KickTask: a RESOLVING task not updated for this long is demoted, a COMPLETED
	// one gets its callback retried (30s).
	KickTask time.Duration
	// ExpireCompleted: a COMPLETED task completed this long ago is deleted (120s).
	ExpireCompleted time.Duration
	// Paused is maintenance mode: no destructive actions (retiring extra or orphaned
	// instances, removing orphaned suspects). Creating, restarting, suspect handling
	// and task work go on.
	Paused bool
	// Restart is the crash restart schedule (reference/bbs.md §3.3).
	Restart models.RestartPolicy
}

// Default option values (reference/bbs.md §3.1).
const (
	DefaultStaleUnclaimed  = 30 * time.Second
	DefaultExpirePending   = 30 * time.Minute
	DefaultKickTask        = 30 * time.Second
	DefaultExpireCompleted = 120 * time.Second
)

// DefaultOptions are Diego's convergence defaults, not paused.
func DefaultOptions() Options {
	return Options{
		StaleUnclaimed:  DefaultStaleUnclaimed,
		ExpirePending:   DefaultExpirePending,
		KickTask:        DefaultKickTask,
		ExpireCompleted: DefaultExpireCompleted,
		Restart:         models.DefaultRestartPolicy(),
	}
}

// withDefaults fills every zero or negative field with its default.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.StaleUnclaimed <= 0 {
		o.StaleUnclaimed = d.StaleUnclaimed
	}
	if o.ExpirePending <= 0 {
		o.ExpirePending = d.ExpirePending
	}
	if o.KickTask <= 0 {
		o.KickTask = d.KickTask
	}
	if o.ExpireCompleted <= 0 {
		o.ExpireCompleted = d.ExpireCompleted
	}
	if o.Restart == (models.RestartPolicy{}) {
		o.Restart = d.Restart
	}
	return o
}
