package store

import (
	"context"
	"errors"
	"fmt"

	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// TaskConvergenceDB applies the task part of a convergence plan.
type TaskConvergenceDB interface {
	// ApplyTaskAction applies one task action in one transaction while the task still
	// has the state and updated_at of its condition; otherwise it changes nothing and
	// says why in Refused. A malformed action is ErrInvalidRequest.
	ApplyTaskAction(ctx context.Context, action *bbsv1.TaskAction) (*TaskActionOutcome, error)
}

// TaskActionOutcome is what one task convergence action did, for the caller's side
// effects.
type TaskActionOutcome struct {
	// Refused says why the action was not applied (nothing changed); empty when applied.
	Refused string
	// Auction is a kicked PENDING task, with its definition, to send to the auctioneer.
	Auction *modelsv1.Task
	// Callback is a COMPLETED task, with its definition, whose completion callback must
	// run (again); the callback runner ignores tasks without a callback URL.
	Callback *modelsv1.Task
}

// taskActionBody is the part of a task action that runs on the locked task once its
// condition matched: it returns the task's next version (before itself for no change)
// and the outcome.
type taskActionBody func(before *modelsv1.Task, now int64) (*modelsv1.Task, *TaskActionOutcome)

// ApplyTaskAction applies one task action (see TaskConvergenceDB).
func (p *Postgres) ApplyTaskAction(ctx context.Context, action *bbsv1.TaskAction) (*TaskActionOutcome, error) {
	switch a := action.GetAction().(type) {
	case *bbsv1.TaskAction_Fail:
		reason := a.Fail.GetFailureReason()
		if reason == "" {
			reason = action.GetReason()
		}
		return p.changeTaskIf(ctx, "fail", a.Fail.GetTask(), func(before *modelsv1.Task, now int64) (*modelsv1.Task, *TaskActionOutcome) {
			if !models.TaskCanBeCancelled(before.State) {
				return before, refuseTask("fail applies to PENDING and RUNNING tasks, not %s", before.State)
			}
			after := completedTask(before, now, true, reason, "")
			return after, &TaskActionOutcome{Callback: after}
		})
	case *bbsv1.TaskAction_Kick:
		return p.changeTaskIf(ctx, "kick", a.Kick, func(before *modelsv1.Task, _ int64) (*modelsv1.Task, *TaskActionOutcome) {
			if before.State != taskPending {
				return before, refuseTask("kick applies to PENDING tasks, not %s", before.State)
			}
			return before, &TaskActionOutcome{Auction: before}
		})
	case *bbsv1.TaskAction_DemoteResolving:
		return p.changeTaskIf(ctx, "demote_resolving", a.DemoteResolving, func(before *modelsv1.Task, now int64) (*modelsv1.Task, *TaskActionOutcome) {
			if before.State != taskResolving {
				return before, refuseTask("demote_resolving applies to RESOLVING tasks, not %s", before.State)
			}
			return nextTask(before, taskCompleted, now), &TaskActionOutcome{}
		})
	case *bbsv1.TaskAction_RetryCallback:
		return p.changeTaskIf(ctx, "retry_callback", a.RetryCallback, func(before *modelsv1.Task, _ int64) (*modelsv1.Task, *TaskActionOutcome) {
			if before.State != taskCompleted {
				return before, refuseTask("retry_callback applies to COMPLETED tasks, not %s", before.State)
			}
			if before.GetTaskDefinition().GetCompletionCallbackUrl() == "" {
				return before, refuseTask("task %q has no completion callback url", before.TaskGuid)
			}
			return before, &TaskActionOutcome{Callback: before}
		})
	case *bbsv1.TaskAction_DeleteCompleted:
		return p.deleteCompletedTask(ctx, a.DeleteCompleted)
	default:
		return nil, invalidRequest("task action has no action set")
	}
}

// changeTaskIf runs body on the locked task in one transaction (through changeTask,
// which stores a changed task with its task_changed event) only while the task matches
// the condition; a task that is gone or moved on is refused without any change.
func (p *Postgres) changeTaskIf(ctx context.Context, field string, c *bbsv1.TaskRowCondition, body taskActionBody) (*TaskActionOutcome, error) {
	if err := checkTaskCondition(field, c); err != nil {
		return nil, err
	}
	var outcome *TaskActionOutcome
	_, err := p.changeTask(ctx, "apply-task-action", c.GetTaskGuid(), false, func(before *modelsv1.Task, now int64) (*modelsv1.Task, error) {
		if refused := matchTaskCondition(before, c); refused != "" {
			outcome = refuseTask("%s", refused)
			return before, nil
		}
		var after *modelsv1.Task
		after, outcome = body(before, now)
		return after, nil
	})
	if errors.Is(err, models.ErrResourceNotFound) {
		return refuseTask("task %q is gone", c.GetTaskGuid()), nil
	}
	if err != nil {
		return nil, err
	}
	return outcome, nil
}

// deleteCompletedTask deletes a COMPLETED task that still matches the condition and
// emits task_removed.
func (p *Postgres) deleteCompletedTask(ctx context.Context, c *bbsv1.TaskRowCondition) (*TaskActionOutcome, error) {
	if err := checkTaskCondition("delete_completed", c); err != nil {
		return nil, err
	}
	var outcome *TaskActionOutcome
	err := p.write(ctx, "apply-task-action", func(w *writeTx) error {
		before, err := p.lockTask(ctx, w, c.GetTaskGuid())
		if errors.Is(err, models.ErrResourceNotFound) {
			outcome = refuseTask("task %q is gone", c.GetTaskGuid())
			return nil
		}
		if err != nil {
			return err
		}
		if refused := matchTaskCondition(before, c); refused != "" {
			outcome = refuseTask("%s", refused)
			return nil
		}
		if before.State != taskCompleted {
			outcome = refuseTask("delete_completed applies to COMPLETED tasks, not %s", before.State)
			return nil
		}
		if _, err := w.Exec(ctx, `DELETE FROM tasks WHERE guid = $1`, before.TaskGuid); err != nil {
			return err
		}
		w.emit(models.TaskRemovedEvent(before))
		outcome = &TaskActionOutcome{}
		return nil
	})
	return outcome, err
}

// checkTaskCondition rejects a condition that cannot name a task.
func checkTaskCondition(field string, c *bbsv1.TaskRowCondition) error {
	switch {
	case c == nil:
		return invalidRequest("%s is required", field)
	case c.GetTaskGuid() == "":
		return invalidRequest("%s.task_guid is required", field)
	case c.GetState() == modelsv1.TaskState_TASK_STATE_UNSPECIFIED:
		return invalidRequest("%s.state is required", field)
	}
	return nil
}

// matchTaskCondition says why a task no longer matches the condition, or "".
func matchTaskCondition(t *modelsv1.Task, c *bbsv1.TaskRowCondition) string {
	if t.State != c.GetState() || t.UpdatedAt != c.GetUpdatedAt() {
		return fmt.Sprintf("task moved on: state %s, updated_at %d", t.State, t.UpdatedAt)
	}
	return ""
}

func refuseTask(format string, args ...any) *TaskActionOutcome {
	return &TaskActionOutcome{Refused: fmt.Sprintf(format, args...)}
}
