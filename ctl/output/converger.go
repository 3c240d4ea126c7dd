package output

import (
	"fmt"
	"strings"
	"time"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

// NoPassYet is what the converger status shows before any pass was reported.
const NoPassYet = "no pass reported yet"

// ConvergerStatusProperties summarises whether convergence is paused, who holds the
// converger lock and how the last pass went.
func ConvergerStatusProperties(st *bbsv1.GetConvergerStatusResponse, now time.Time) *Properties {
	p := &Properties{}
	p.Add("paused", YesNo(st.GetPaused()))
	p.Add("paused_reason", st.GetPausedReason())
	p.Add("since", TimestampWithAge(st.GetChangedAt(), now))
	p.Add("lock_owner", orNone(st.GetLockOwner()))
	pass := st.GetLastPass()
	if pass == nil {
		p.Add("last_pass", NoPassYet)
		return p
	}
	p.Add("last_pass", TimestampWithAge(pass.GetTakenAt(), now))
	p.Add("pass_owner", pass.GetOwner())
	p.Add("pass_paused", YesNo(pass.GetPaused()))
	p.Add("durations", fmt.Sprintf("snapshot %s, plan %s, apply %s",
		PhaseDuration(pass.GetSnapshotNanos()), PhaseDuration(pass.GetPlanNanos()), PhaseDuration(pass.GetApplyNanos())))
	p.Add("lrps", counts("desired", pass.GetDesiredLrps(), "actual", pass.GetActualLrps()))
	p.Add("missing", Int(pass.GetMissing()))
	p.Add("extra", Int(pass.GetExtra()))
	p.Add("orphaned", Int(pass.GetOrphaned()))
	p.Add("crashed", Int(pass.GetCrashed()))
	p.Add("restarted", Int(pass.GetRestarted()))
	p.Add("stale_unclaimed", Int(pass.GetStaleUnclaimed()))
	p.Add("suspect", counts("running", pass.GetSuspectRunning(), "claimed", pass.GetSuspectClaimed()))
	p.Add("retired", Int(pass.GetRetired()))
	p.Add("kept", counts("stale", pass.GetKeptStale(), "paused", pass.GetKeptPaused()))
	p.Add("cells", counts("present", pass.GetPresentCells(), "suspect", pass.GetSuspectCells()))
	p.Add("tasks", counts("kicked", pass.GetTasksKicked(), "failed", pass.GetTasksFailed(), "deleted", pass.GetTasksDeleted()))
	p.Add("actions", counts("applied", pass.GetActionsApplied(), "refused", pass.GetActionsRefused(), "failed", pass.GetActionsFailed()))
	p.Add("fresh_domains", strings.Join(pass.GetFreshDomains(), ","))
	p.Add("error", pass.GetError())
	return p
}

// YesNo renders a flag for people.
func YesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// PhaseDuration renders nanoseconds as a duration rounded for reading ("12ms", "1.5s").
func PhaseDuration(nanos int64) string {
	d := time.Duration(nanos)
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	default:
		return d.Round(time.Microsecond).String()
	}
}

// counts renders name/value pairs as "name1 v1, name2 v2".
func counts(pairs ...any) string {
	parts := make([]string, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		parts = append(parts, fmt.Sprintf("%v %v", pairs[i], pairs[i+1]))
	}
	return strings.Join(parts, ", ")
}

// orNone renders an empty name as "none".
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// ConvergerStatus is the JSON view of the converger's status.
type ConvergerStatus struct {
	Paused       bool             `json:"paused"`
	PausedReason string           `json:"paused_reason,omitempty"`
	ChangedAt    string           `json:"changed_at,omitempty"`
	LockOwner    string           `json:"lock_owner,omitempty"`
	LastPass     *ConvergencePass `json:"last_pass"`
}

// ConvergencePass is the JSON view of one pass: times in RFC 3339, phase durations
// in nanoseconds, one field per count.
type ConvergencePass struct {
	Owner          string   `json:"owner"`
	TakenAt        string   `json:"taken_at,omitempty"`
	SnapshotNanos  int64    `json:"snapshot_nanos"`
	PlanNanos      int64    `json:"plan_nanos"`
	ApplyNanos     int64    `json:"apply_nanos"`
	Paused         bool     `json:"paused"`
	DesiredLRPs    int32    `json:"desired_lrps"`
	ActualLRPs     int32    `json:"actual_lrps"`
	Missing        int32    `json:"missing"`
	Extra          int32    `json:"extra"`
	Orphaned       int32    `json:"orphaned"`
	Crashed        int32    `json:"crashed"`
	Restarted      int32    `json:"restarted"`
	StaleUnclaimed int32    `json:"stale_unclaimed"`
	SuspectRunning int32    `json:"suspect_running"`
	SuspectClaimed int32    `json:"suspect_claimed"`
	Retired        int32    `json:"retired"`
	KeptStale      int32    `json:"kept_stale"`
	KeptPaused     int32    `json:"kept_paused"`
	PresentCells   int32    `json:"present_cells"`
	SuspectCells   int32    `json:"suspect_cells"`
	TasksKicked    int32    `json:"tasks_kicked"`
	TasksFailed    int32    `json:"tasks_failed"`
	TasksDeleted   int32    `json:"tasks_deleted"`
	ActionsApplied int32    `json:"actions_applied"`
	ActionsRefused int32    `json:"actions_refused"`
	ActionsFailed  int32    `json:"actions_failed"`
	FreshDomains   []string `json:"fresh_domains"`
	Error          string   `json:"error,omitempty"`
}

// ConvergerStatusView converts a status for JSON output; last_pass is null before
// the first pass.
func ConvergerStatusView(st *bbsv1.GetConvergerStatusResponse) ConvergerStatus {
	v := ConvergerStatus{
		Paused:       st.GetPaused(),
		PausedReason: st.GetPausedReason(),
		ChangedAt:    timestampNano(st.GetChangedAt()),
		LockOwner:    st.GetLockOwner(),
	}
	p := st.GetLastPass()
	if p == nil {
		return v
	}
	v.LastPass = &ConvergencePass{
		Owner: p.GetOwner(), TakenAt: timestampNano(p.GetTakenAt()),
		SnapshotNanos: p.GetSnapshotNanos(), PlanNanos: p.GetPlanNanos(), ApplyNanos: p.GetApplyNanos(),
		Paused:      p.GetPaused(),
		DesiredLRPs: p.GetDesiredLrps(), ActualLRPs: p.GetActualLrps(),
		Missing: p.GetMissing(), Extra: p.GetExtra(), Orphaned: p.GetOrphaned(),
		Crashed: p.GetCrashed(), Restarted: p.GetRestarted(), StaleUnclaimed: p.GetStaleUnclaimed(),
		SuspectRunning: p.GetSuspectRunning(), SuspectClaimed: p.GetSuspectClaimed(),
		Retired: p.GetRetired(), KeptStale: p.GetKeptStale(), KeptPaused: p.GetKeptPaused(),
		PresentCells: p.GetPresentCells(), SuspectCells: p.GetSuspectCells(),
		TasksKicked: p.GetTasksKicked(), TasksFailed: p.GetTasksFailed(), TasksDeleted: p.GetTasksDeleted(),
		ActionsApplied: p.GetActionsApplied(), ActionsRefused: p.GetActionsRefused(), ActionsFailed: p.GetActionsFailed(),
		FreshDomains: p.GetFreshDomains(),
		Error:        p.GetError(),
	}
	if v.LastPass.FreshDomains == nil {
		v.LastPass.FreshDomains = []string{}
	}
	return v
}

// timestampNano renders unixNanos as RFC 3339 with fractions in UTC, or "" for zero.
func timestampNano(unixNanos int64) string {
	if unixNanos == 0 {
		return ""
	}
	return time.Unix(0, unixNanos).UTC().Format(time.RFC3339Nano)
}
