package plan

import (
	"fmt"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Action is one corrective action, as logged: its kind, what it acts on and why.
type Action interface {
	// Kind names the action in kebab-case ("retire", "mark-suspect", ...).
	Kind() string
	// Subject names what the action acts on ("guid/3 ORDINARY" or a task guid).
	Subject() string
	// Why is the human reason the action was decided.
	Why() string
}

// Tag is a modification tag as a comparable value.
type Tag struct {
	Epoch string
	Index uint32
}

// TagOf copies a proto modification tag; nil gives the zero Tag.
func TagOf(t *modelsv1.ModificationTag) Tag {
	return Tag{Epoch: t.GetEpoch(), Index: t.GetIndex()}
}

// Row is one ActualLRP row as the plan saw it: its identity, its instance, and the
// state and modification tag a conditional write must still find there.
type Row struct {
	ProcessGUID  string
	Index        int32
	Domain       string
	Presence     modelsv1.ActualLRPPresence
	InstanceGUID string
	CellID       string
	State        modelsv1.ActualLRPState
	Tag          Tag
}

// rowOf describes the row a.
func rowOf(a *modelsv1.ActualLRP) Row {
	return Row{
		ProcessGUID:  a.GetProcessGuid(),
		Index:        a.GetIndex(),
		Domain:       a.GetDomain(),
		Presence:     presenceOf(a),
		InstanceGUID: a.GetInstanceGuid(),
		CellID:       a.GetCellId(),
		State:        a.GetState(),
		Tag:          TagOf(a.GetModificationTag()),
	}
}

// Subject names the row: "guid/index PRESENCE".
func (r Row) Subject() string {
	return fmt.Sprintf("%s/%d %s", r.ProcessGUID, r.Index, models.PresenceName(r.Presence))
}

// UnclaimCause says why an ORDINARY row is unclaimed and re-auctioned.
type UnclaimCause string

// Unclaim causes.
const (
	UnclaimStale   UnclaimCause = "stale"
	UnclaimCrashed UnclaimCause = "crashed"
)

// RetireCause says why an ORDINARY row is retired.
type RetireCause string

// Retire causes.
const (
	RetireExtraIndex RetireCause = "extra index"
	RetireNoDesired  RetireCause = "no desired LRP"
)

// RemoveSuspectCause says why a SUSPECT row is removed.
type RemoveSuspectCause string

// Remove-suspect causes.
const (
	RemoveSuspectReplaced RemoveSuspectCause = "replacement running"
	RemoveSuspectOrphaned RemoveSuspectCause = "no desired LRP"
)

// CreateMissing creates the ORDINARY UNCLAIMED row of an index that has none and
// auctions it. DesiredTag is the DesiredLRP's tag the decision was made on.
type CreateMissing struct {
	ProcessGUID string
	Index       int32
	Domain      string
	DesiredTag  Tag
	Because
}

// Unclaim moves an ORDINARY row back to UNCLAIMED (a stale UNCLAIMED row is left
// as is) and auctions it.
type Unclaim struct {
	Row
	Cause UnclaimCause
	Because
}

// MarkSuspect turns the ORDINARY CLAIMED/RUNNING row on a vanished cell into a
// SUSPECT row (still routable) and, in the same write, creates a new ORDINARY
// UNCLAIMED replacement, which is auctioned.
type MarkSuspect struct {
	Row
	Because
}

// UnclaimReplacement unclaims the ORDINARY replacement of an index that already has a
// SUSPECT row when the replacement's cell vanished too; it is not auctioned at once
// (the stale-unclaimed rule re-auctions it).
type UnclaimReplacement struct {
	Row
	Because
}

// RemoveSuspect deletes a SUSPECT row.
type RemoveSuspect struct {
	Row
	Cause RemoveSuspectCause
	Because
}

// PromoteSuspect makes a SUSPECT row whose cell came back ORDINARY again, deleting the
// ORDINARY replacement (Replacement, nil when there is none).
type PromoteSuspect struct {
	Row
	Replacement *Row
	Because
}

// Retire stops and removes an ORDINARY row (extra index or no desired LRP).
type Retire struct {
	Row
	Cause RetireCause
	Because
}

// RemoveEvacuating deletes an EVACUATING row whose cell vanished.
type RemoveEvacuating struct {
	Row
	Because
}

// TaskRow is one task as the plan saw it: a conditional write must still find the
// same state and updated_at.
type TaskRow struct {
	TaskGUID  string
	Domain    string
	CellID    string
	State     modelsv1.TaskState
	UpdatedAt int64
}

// taskRowOf describes task t.
func taskRowOf(t *modelsv1.Task) TaskRow {
	return TaskRow{
		TaskGUID:  t.GetTaskGuid(),
		Domain:    t.GetDomain(),
		CellID:    t.GetCellId(),
		State:     t.GetState(),
		UpdatedAt: t.GetUpdatedAt(),
	}
}

// Subject names the task by its guid.
func (t TaskRow) Subject() string { return t.TaskGUID }

// Task failure reasons (reference/bbs.md §3.5).
const (
	FailureNotStarted   = "not started within time limit"
	FailureCellVanished = "cell disappeared before completion"
)

// FailTask completes a task as failed with FailureReason.
type FailTask struct {
	TaskRow
	FailureReason string
	Because
}

// KickTask re-sends a PENDING task to the auctioneer.
type KickTask struct {
	TaskRow
	Because
}

// DemoteResolving moves a stuck RESOLVING task back to COMPLETED so its callback is
// retried.
type DemoteResolving struct {
	TaskRow
	Because
}

// DeleteCompleted deletes a task completed long ago.
type DeleteCompleted struct {
	TaskRow
	Because
}

// RetryCallback resubmits a COMPLETED task's completion callback.
type RetryCallback struct {
	TaskRow
	CallbackURL string
	Because
}

// Because carries an action's human reason, for its log line.
type Because struct {
	Reason string
}

// Why is the reason.
func (b Because) Why() string { return b.Reason }

// Subject names the index to create.
func (a CreateMissing) Subject() string {
	return fmt.Sprintf("%s/%d ORDINARY", a.ProcessGUID, a.Index)
}

// Kind is "unclaim-stale" or "unclaim-crashed".
func (a Unclaim) Kind() string { return "unclaim-" + string(a.Cause) }

// Kind is "create-missing".
func (CreateMissing) Kind() string { return "create-missing" }

// Kind is "mark-suspect".
func (MarkSuspect) Kind() string { return "mark-suspect" }

// Kind is "unclaim-replacement".
func (UnclaimReplacement) Kind() string { return "unclaim-replacement" }

// Kind is "remove-suspect".
func (RemoveSuspect) Kind() string { return "remove-suspect" }

// Kind is "promote-suspect".
func (PromoteSuspect) Kind() string { return "promote-suspect" }

// Kind is "retire".
func (Retire) Kind() string { return "retire" }

// Kind is "remove-evacuating".
func (RemoveEvacuating) Kind() string { return "remove-evacuating" }

// Kind is "fail-task".
func (FailTask) Kind() string { return "fail-task" }

// Kind is "kick-task".
func (KickTask) Kind() string { return "kick-task" }

// Kind is "demote-resolving".
func (DemoteResolving) Kind() string { return "demote-resolving" }

// Kind is "delete-completed".
func (DeleteCompleted) Kind() string { return "delete-completed" }

// Kind is "retry-callback".
func (RetryCallback) Kind() string { return "retry-callback" }
