package store

import (
	"context"
	"errors"
	"fmt"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
)

const (
	taskPending   = modelsv1.TaskState_TASK_STATE_PENDING
	taskRunning   = modelsv1.TaskState_TASK_STATE_RUNNING
	taskCompleted = modelsv1.TaskState_TASK_STATE_COMPLETED
	taskResolving = modelsv1.TaskState_TASK_STATE_RESOLVING
)

// CancelledReason is the failure reason of a cancelled task.
const CancelledReason = "task was cancelled"

// taskColumns are the columns of tasks in the order scanTask reads them.
const taskColumns = `guid, domain, state, cell_id, result, failed, failure_reason,
    rejection_count, rejection_reason, created_at, updated_at, first_completed_at, task_definition`

// scanTaskRow reads taskColumns into a task without its definition and returns the
// still encrypted definition.
func scanTaskRow(row pgx.Row) (*modelsv1.Task, []byte, error) {
	t := &modelsv1.Task{}
	var state int16
	var def []byte
	if err := row.Scan(&t.TaskGuid, &t.Domain, &state, &t.CellId, &t.Result, &t.Failed,
		&t.FailureReason, &t.RejectionCount, &t.RejectionReason, &t.CreatedAt, &t.UpdatedAt,
		&t.FirstCompletedAt, &def); err != nil {
		return nil, nil, err
	}
	t.State = modelsv1.TaskState(state)
	return t, def, nil
}

// scanTaskDecrypted reads taskColumns and returns the task (without its definition)
// and the decrypted, still encoded, definition.
func (p *Postgres) scanTaskDecrypted(row pgx.Row) (*modelsv1.Task, []byte, error) {
	t, def, err := scanTaskRow(row)
	if err != nil {
		return nil, nil, err
	}
	plain, err := p.crypt.Decrypt(def)
	if err != nil {
		return nil, nil, fmt.Errorf("definition of task %q: %w", t.TaskGuid, err)
	}
	return t, plain, nil
}

// scanTask reads taskColumns and decrypts the definition.
func (p *Postgres) scanTask(row pgx.Row) (*modelsv1.Task, error) {
	t, plain, err := p.scanTaskDecrypted(row)
	if err != nil {
		return nil, err
	}
	t.TaskDefinition = &modelsv1.TaskDefinition{}
	if err := proto.Unmarshal(plain, t.TaskDefinition); err != nil {
		return nil, fmt.Errorf("definition of task %q: %w", t.TaskGuid, err)
	}
	return t, nil
}

// DesireTask inserts a PENDING task and emits task_created; a taken guid is
// ErrResourceExists. The definition must already be validated.
func (p *Postgres) DesireTask(ctx context.Context, guid, domain string, def *modelsv1.TaskDefinition) (*modelsv1.Task, error) {
	if def == nil {
		return nil, invalidRequest("task definition is required")
	}
	var task *modelsv1.Task
	err := p.write(ctx, "desire-task", func(w *writeTx) error {
		plain, err := proto.Marshal(def)
		if err != nil {
			return err
		}
		encrypted, err := p.crypt.Encrypt(plain)
		if err != nil {
			return err
		}
		now := w.nowNano()
		_, err = w.Exec(ctx, `INSERT INTO tasks (guid, domain, state, created_at, updated_at, task_definition)
VALUES ($1, $2, $3, $4, $4, $5)`, guid, domain, int16(taskPending), now, encrypted)
		if isUniqueViolation(err) {
			return models.NewError(models.ErrTypeResourceExists, "task %q already exists", guid)
		}
		if err != nil {
			return err
		}
		task = &modelsv1.Task{TaskGuid: guid, Domain: domain, TaskDefinition: proto.CloneOf(def),
			State: taskPending, CreatedAt: now, UpdatedAt: now}
		w.emit(models.TaskCreatedEvent(task))
		return nil
	})
	return task, err
}

// GetTask returns one task.
func (p *Postgres) GetTask(ctx context.Context, guid string) (*modelsv1.Task, error) {
	t, err := p.scanTask(p.pool.QueryRow(ctx, `SELECT `+taskColumns+` FROM tasks WHERE guid = $1`, guid))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound("task %q not found", guid)
	}
	if err != nil {
		return nil, p.readError("get-task", err)
	}
	if err := p.actor.MayReadTask(t); err != nil {
		return nil, err
	}
	return t, nil
}

// ListTasks returns matching tasks ordered by guid.
func (p *Postgres) ListTasks(ctx context.Context, f TaskFilter) ([]*modelsv1.Task, error) {
	if p.actor.IsCell() {
		if p.actor.Cell() == "" {
			return nil, nil // a cell without an id holds nothing
		}
		f.CellID = p.actor.Cell()
	}
	tasks, err := queryAll(ctx, p.pool, p.scanTask, `SELECT `+taskColumns+` FROM tasks
WHERE ($1 = '' OR domain = $1) AND ($2 = '' OR cell_id = $2) ORDER BY guid`, f.Domain, f.CellID)
	return tasks, p.readError("list-tasks", err)
}

// StartTask moves a PENDING task to RUNNING on cellID. A task already RUNNING on that
// cell gives shouldStart=false and no error; on another cell, ErrRunningOnDifferentCell.
func (p *Postgres) StartTask(ctx context.Context, guid, cellID string) (*TaskChange, bool, error) {
	if err := p.actor.MayActForCell(cellID); err != nil {
		return nil, false, err
	}
	shouldStart := false
	change, err := p.changeTask(ctx, "start-task", guid, true, func(before *modelsv1.Task, now int64) (*modelsv1.Task, error) {
		shouldStart = false
		if before.State == taskRunning {
			if before.CellId == cellID {
				return before, nil
			}
			return nil, runningOnDifferentCell(before, cellID)
		}
		if err := models.TaskTransition(before.State, taskRunning); err != nil {
			return nil, err
		}
		after := nextTask(before, taskRunning, now)
		after.CellId = cellID
		shouldStart = true
		return after, nil
	})
	return change, shouldStart, err
}

// CancelTask completes a PENDING or RUNNING task as failed with CancelledReason. Before
// keeps the cell the task ran on.
func (p *Postgres) CancelTask(ctx context.Context, guid string) (*TaskChange, error) {
	return p.failTask(ctx, "cancel-task", guid, CancelledReason)
}

// FailTask completes a PENDING or RUNNING task as failed with the (truncated) reason.
func (p *Postgres) FailTask(ctx context.Context, guid, reason string) (*TaskChange, error) {
	return p.failTask(ctx, "fail-task", guid, reason)
}

func (p *Postgres) failTask(ctx context.Context, op, guid, reason string) (*TaskChange, error) {
	return p.changeTask(ctx, op, guid, false, func(before *modelsv1.Task, now int64) (*modelsv1.Task, error) {
		if !models.TaskCanBeCancelled(before.State) {
			return nil, invalidTaskTransition(before, taskCompleted)
		}
		return completedTask(before, now, true, reason, ""), nil
	})
}

// RejectTask records a cell's refusal: rejection_count+1 and the truncated reason, and
// the task goes back to PENDING without a cell. If the count before this reject had
// reached maxRetries, the task is completed as failed instead.
func (p *Postgres) RejectTask(ctx context.Context, guid, reason string, maxRetries int) (*TaskChange, error) {
	return p.changeTask(ctx, "reject-task", guid, false, func(before *modelsv1.Task, now int64) (*modelsv1.Task, error) {
		if !models.TaskCanBeRejected(before.State) {
			return nil, invalidTaskTransition(before, taskPending)
		}
		var after *modelsv1.Task
		if int(before.RejectionCount) >= maxRetries {
			after = completedTask(before, now, true, reason, "")
		} else {
			after = nextTask(before, taskPending, now)
			after.CellId = ""
		}
		after.RejectionCount++
		after.RejectionReason = models.TruncateReason(reason)
		return after, nil
	})
}

// CompleteTask completes a task RUNNING on cellID with its result.
func (p *Postgres) CompleteTask(ctx context.Context, guid, cellID string, failed bool, failureReason, result string) (*TaskChange, error) {
	if err := p.actor.MayActForCell(cellID); err != nil {
		return nil, err
	}
	return p.changeTask(ctx, "complete-task", guid, false, func(before *modelsv1.Task, now int64) (*modelsv1.Task, error) {
		if before.State == taskRunning && before.CellId != cellID {
			return nil, runningOnDifferentCell(before, cellID)
		}
		if err := models.TaskTransition(before.State, taskCompleted); err != nil {
			return nil, err
		}
		return completedTask(before, now, failed, failureReason, result), nil
	})
}

// ResolvingTask moves a COMPLETED task to RESOLVING: its client claimed the result.
func (p *Postgres) ResolvingTask(ctx context.Context, guid string) (*TaskChange, error) {
	return p.changeTask(ctx, "resolving-task", guid, false, func(before *modelsv1.Task, now int64) (*modelsv1.Task, error) {
		if err := models.TaskTransition(before.State, taskResolving); err != nil {
			return nil, err
		}
		return nextTask(before, taskResolving, now), nil
	})
}

// DeleteTask deletes a RESOLVING task and emits task_removed.
func (p *Postgres) DeleteTask(ctx context.Context, guid string) (*modelsv1.Task, error) {
	var deleted *modelsv1.Task
	err := p.write(ctx, "delete-task", func(w *writeTx) error {
		before, err := p.lockTask(ctx, w, guid)
		if err != nil {
			return err
		}
		if err := p.actor.MayChangeTask(before, false); err != nil {
			return err
		}
		if !models.TaskCanBeDeleted(before.State) {
			return models.NewError(models.ErrTypeInvalidStateTransition,
				"task %q is %s; only a RESOLVING task can be deleted", guid, before.State)
		}
		if _, err := w.Exec(ctx, `DELETE FROM tasks WHERE guid = $1`, guid); err != nil {
			return err
		}
		w.emit(models.TaskRemovedEvent(before))
		deleted = before
		return nil
	})
	return deleted, err
}

// changeTask locks a task, checks that the actor may change it (takes: a cell may take
// a PENDING task), asks change for its next version and stores it with a task_changed
// event. change returning before itself means "nothing to do".
func (p *Postgres) changeTask(ctx context.Context, op, guid string, takes bool, change func(before *modelsv1.Task, now int64) (*modelsv1.Task, error)) (*TaskChange, error) {
	var result *TaskChange
	err := p.write(ctx, op, func(w *writeTx) error {
		before, err := p.lockTask(ctx, w, guid)
		if err != nil {
			return err
		}
		if err := p.actor.MayChangeTask(before, takes); err != nil {
			return err
		}
		after, err := change(before, w.nowNano())
		if err != nil {
			return err
		}
		result = &TaskChange{Before: before, After: after}
		if after == before {
			return nil
		}
		if _, err := w.Exec(ctx, `UPDATE tasks SET state = $2, cell_id = $3, result = $4, failed = $5,
    failure_reason = $6, rejection_count = $7, rejection_reason = $8, updated_at = $9,
    first_completed_at = $10 WHERE guid = $1`, guid, int16(after.State), after.CellId, after.Result,
			after.Failed, after.FailureReason, after.RejectionCount, after.RejectionReason,
			after.UpdatedAt, after.FirstCompletedAt); err != nil {
			return err
		}
		w.emit(models.TaskChangedEvent(before, after))
		return nil
	})
	return result, err
}

func (p *Postgres) lockTask(ctx context.Context, w *writeTx, guid string) (*modelsv1.Task, error) {
	t, err := p.scanTask(w.QueryRow(ctx, `SELECT `+taskColumns+` FROM tasks WHERE guid = $1 FOR UPDATE`, guid))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound("task %q not found", guid)
	}
	return t, err
}

// nextTask copies a task into a new state at now.
func nextTask(before *modelsv1.Task, state modelsv1.TaskState, now int64) *modelsv1.Task {
	after := proto.CloneOf(before)
	after.State = state
	after.UpdatedAt = now
	return after
}

// completedTask is before COMPLETED at now with the outcome; the cell is cleared.
func completedTask(before *modelsv1.Task, now int64, failed bool, reason, result string) *modelsv1.Task {
	after := nextTask(before, taskCompleted, now)
	after.CellId = ""
	after.Failed = failed
	after.FailureReason = ""
	if failed {
		after.FailureReason = models.TruncateReason(reason)
	}
	after.Result = result
	after.FirstCompletedAt = now
	return after
}

func runningOnDifferentCell(t *modelsv1.Task, cellID string) error {
	return models.NewError(models.ErrTypeRunningOnDifferentCell,
		"task %q is running on cell %q, not %q", t.TaskGuid, t.CellId, cellID)
}

func invalidTaskTransition(t *modelsv1.Task, to modelsv1.TaskState) error {
	return models.NewError(models.ErrTypeInvalidStateTransition,
		"task %q cannot go from %s to %s", t.TaskGuid, t.State, to)
}
