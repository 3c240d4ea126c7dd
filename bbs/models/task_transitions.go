package models

import (
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Task states, for the rules below.
const (
	taskPending   = modelsv1.TaskState_TASK_STATE_PENDING
	taskRunning   = modelsv1.TaskState_TASK_STATE_RUNNING
	taskCompleted = modelsv1.TaskState_TASK_STATE_COMPLETED
	taskResolving = modelsv1.TaskState_TASK_STATE_RESOLVING
)

// taskTransitions are the ordinary moves of a task's life (Diego's
// ValidateTransitionTo): PENDING→RUNNING, RUNNING→COMPLETED, COMPLETED→RESOLVING.
var taskTransitions = map[modelsv1.TaskState]modelsv1.TaskState{
	taskPending:   taskRunning,
	taskRunning:   taskCompleted,
	taskCompleted: taskResolving,
}

// TaskTransition checks an ordinary task state change and returns nil or an
// InvalidStateTransition *Error. Cancel, fail, reject and delete have their own
// rules: see TaskCanBeCancelled, TaskCanBeRejected and TaskCanBeDeleted.
func TaskTransition(from, to modelsv1.TaskState) error {
	if next, ok := taskTransitions[from]; ok && next == to {
		return nil
	}
	return NewError(ErrTypeInvalidStateTransition, "cannot transition task from %s to %s", TaskStateName(from), TaskStateName(to))
}

// TaskCanBeCancelled reports whether a task in state s may be cancelled or failed,
// i.e. completed as failed: PENDING or RUNNING.
func TaskCanBeCancelled(s modelsv1.TaskState) bool {
	return s == taskPending || s == taskRunning
}

// TaskCanBeRejected reports whether a cell may hand a task in state s back to
// PENDING: PENDING or RUNNING.
func TaskCanBeRejected(s modelsv1.TaskState) bool {
	return s == taskPending || s == taskRunning
}

// TaskCanBeDeleted reports whether a task in state s may be deleted: RESOLVING only.
func TaskCanBeDeleted(s modelsv1.TaskState) bool {
	return s == taskResolving
}
