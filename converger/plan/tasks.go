package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Task states.
const (
	taskPending   = modelsv1.TaskState_TASK_STATE_PENDING
	taskRunning   = modelsv1.TaskState_TASK_STATE_RUNNING
	taskCompleted = modelsv1.TaskState_TASK_STATE_COMPLETED
	taskResolving = modelsv1.TaskState_TASK_STATE_RESOLVING
)

// planTasks runs the task rules of reference/bbs.md §3.5 on every task, in task
// guid order. None is gated by freshness or by pause.
func (p *planner) planTasks() {
	tasks := slices.Clone(p.s.Tasks)
	slices.SortFunc(tasks, func(a, b *modelsv1.Task) int { return strings.Compare(a.GetTaskGuid(), b.GetTaskGuid()) })
	for _, t := range tasks {
		switch t.GetState() {
		case taskPending:
			p.res.TaskCounts.Pending++
			p.planPending(t)
		case taskRunning:
			p.res.TaskCounts.Running++
			p.planRunning(t)
		case taskCompleted:
			p.res.TaskCounts.Completed++
			p.planCompleted(t)
		case taskResolving:
			p.res.TaskCounts.Resolving++
			p.planResolving(t)
		}
	}
}

// olderThan reports whether the Unix-nanosecond time ns lies more than d before now.
func (p *planner) olderThan(ns int64, d time.Duration) bool {
	return time.Unix(0, ns).Before(p.now.Add(-d))
}

// age is how long before now the Unix-nanosecond time ns lies.
func (p *planner) age(ns int64) time.Duration {
	return p.now.Sub(time.Unix(0, ns))
}

// planPending fails a PENDING task created before the expiry window and kicks
// every other one (steps 1–2).
func (p *planner) planPending(t *modelsv1.Task) {
	if p.olderThan(t.GetCreatedAt(), p.opts.ExpirePending) {
		p.res.FailPending = append(p.res.FailPending, FailTask{
			TaskRow: taskRowOf(t), FailureReason: FailureNotStarted,
			Because: Because{fmt.Sprintf("pending for %s, longer than %s", p.age(t.GetCreatedAt()), p.opts.ExpirePending)},
		})
		return
	}
	p.res.TaskCounts.Kicked++
	p.res.Kicks = append(p.res.Kicks, KickTask{TaskRow: taskRowOf(t), Because: Because{"task is still pending"}})
}

// planRunning fails a RUNNING task whose cell vanished (step 3).
func (p *planner) planRunning(t *modelsv1.Task) {
	if p.s.cellPresent(t.GetCellId()) {
		return
	}
	p.res.FailOnMissingCell = append(p.res.FailOnMissingCell, FailTask{
		TaskRow: taskRowOf(t), FailureReason: FailureCellVanished,
		Because: Because{fmt.Sprintf("cell %q is gone", t.GetCellId())},
	})
}

// planResolving demotes a RESOLVING task stuck longer than the kick duration (step 4).
func (p *planner) planResolving(t *modelsv1.Task) {
	if !p.olderThan(t.GetUpdatedAt(), p.opts.KickTask) {
		return
	}
	p.res.DemoteResolving = append(p.res.DemoteResolving, DemoteResolving{
		TaskRow: taskRowOf(t),
		Because: Because{fmt.Sprintf("resolving for %s, longer than %s", p.age(t.GetUpdatedAt()), p.opts.KickTask)},
	})
}

// planCompleted deletes a task completed before the expiry window (step 5), else
// retries the callback of one with a callback URL not updated within the kick
// duration (step 6).
func (p *planner) planCompleted(t *modelsv1.Task) {
	if p.olderThan(t.GetFirstCompletedAt(), p.opts.ExpireCompleted) {
		p.res.DeleteCompleted = append(p.res.DeleteCompleted, DeleteCompleted{
			TaskRow: taskRowOf(t),
			Because: Because{fmt.Sprintf("completed %s ago, longer than %s", p.age(t.GetFirstCompletedAt()), p.opts.ExpireCompleted)},
		})
		return
	}
	url := t.GetTaskDefinition().GetCompletionCallbackUrl()
	if url == "" || !p.olderThan(t.GetUpdatedAt(), p.opts.KickTask) {
		return
	}
	p.res.RetryCallbacks = append(p.res.RetryCallbacks, RetryCallback{
		TaskRow: taskRowOf(t), CallbackURL: url,
		Because: Because{fmt.Sprintf("callback not done %s after completion", p.age(t.GetUpdatedAt()))},
	})
}
