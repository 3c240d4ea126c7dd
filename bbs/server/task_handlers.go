package server

import (
	"context"

	"drover.dev/bbs/models"
	"drover.dev/bbs/store"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// taskService implements bbsv1.TaskServiceServer.
type taskService struct {
	bbsv1.UnimplementedTaskServiceServer
	*Server
}

// DesireTask stores a PENDING task and asks for its placement.
func (s *taskService) DesireTask(ctx context.Context, req *bbsv1.DesireTaskRequest) (*bbsv1.DesireTaskResponse, error) {
	task, err := s.dbFor(ctx).DesireTask(ctx, req.GetTaskGuid(), req.GetDomain(), req.GetTaskDefinition())
	if err != nil {
		return nil, err
	}
	s.auctionTask(ctx, task)
	return &bbsv1.DesireTaskResponse{}, nil
}

// GetTask fetches one task, with its image credentials only for a cell (see
// mayReadImageCredentials).
func (s *taskService) GetTask(ctx context.Context, req *bbsv1.GetTaskRequest) (*bbsv1.GetTaskResponse, error) {
	task, err := s.dbFor(ctx).GetTask(ctx, req.GetTaskGuid())
	if err != nil {
		return nil, err
	}
	if !mayReadImageCredentials(ctx) {
		task = models.TaskWithoutImageCredentials(task)
	}
	return &bbsv1.GetTaskResponse{Task: task}, nil
}

// ListTasks lists tasks by domain and cell, without their image credentials (only a
// single GetTask, as a cell makes it, returns them).
func (s *taskService) ListTasks(ctx context.Context, req *bbsv1.ListTasksRequest) (*bbsv1.ListTasksResponse, error) {
	tasks, err := s.dbFor(ctx).ListTasks(ctx, store.TaskFilter{Domain: req.GetDomain(), CellID: req.GetCellId()})
	if err != nil {
		return nil, err
	}
	return &bbsv1.ListTasksResponse{Tasks: models.TasksWithoutImageCredentials(tasks)}, nil
}

// StartTask moves a PENDING task to RUNNING on the cell.
func (s *taskService) StartTask(ctx context.Context, req *bbsv1.StartTaskRequest) (*bbsv1.StartTaskResponse, error) {
	_, shouldStart, err := s.dbFor(ctx).StartTask(ctx, req.GetTaskGuid(), req.GetCellId())
	if err != nil {
		return nil, err
	}
	return &bbsv1.StartTaskResponse{ShouldStart: shouldStart}, nil
}

// CancelTask completes the task as failed, stops it on its cell if it was running and
// runs its callback.
func (s *taskService) CancelTask(ctx context.Context, req *bbsv1.CancelTaskRequest) (*bbsv1.CancelTaskResponse, error) {
	change, err := s.dbFor(ctx).CancelTask(ctx, req.GetTaskGuid())
	if err != nil {
		return nil, err
	}
	if change.Before.GetState() == modelsv1.TaskState_TASK_STATE_RUNNING {
		s.cancelTaskOnCell(ctx, change.Before)
	}
	s.completeTaskCallback(change.After)
	return &bbsv1.CancelTaskResponse{}, nil
}

// FailTask completes the task as failed and runs its callback.
func (s *taskService) FailTask(ctx context.Context, req *bbsv1.FailTaskRequest) (*bbsv1.FailTaskResponse, error) {
	change, err := s.dbFor(ctx).FailTask(ctx, req.GetTaskGuid(), req.GetFailureReason())
	if err != nil {
		return nil, err
	}
	s.completeTaskCallback(change.After)
	return &bbsv1.FailTaskResponse{}, nil
}

// RejectTask hands the task back for another auction, or fails it (and runs its
// callback) after too many rejections.
func (s *taskService) RejectTask(ctx context.Context, req *bbsv1.RejectTaskRequest) (*bbsv1.RejectTaskResponse, error) {
	change, err := s.dbFor(ctx).RejectTask(ctx, req.GetTaskGuid(), req.GetRejectionReason(), s.maxTaskRetries)
	if err != nil {
		return nil, err
	}
	switch change.After.GetState() {
	case modelsv1.TaskState_TASK_STATE_PENDING:
		s.auctionTask(ctx, change.After)
	case modelsv1.TaskState_TASK_STATE_COMPLETED:
		s.completeTaskCallback(change.After)
	}
	return &bbsv1.RejectTaskResponse{}, nil
}

// CompleteTask records the outcome of a RUNNING task and runs its callback.
func (s *taskService) CompleteTask(ctx context.Context, req *bbsv1.CompleteTaskRequest) (*bbsv1.CompleteTaskResponse, error) {
	change, err := s.dbFor(ctx).CompleteTask(ctx, req.GetTaskGuid(), req.GetCellId(), req.GetFailed(), req.GetFailureReason(), req.GetResult())
	if err != nil {
		return nil, err
	}
	s.completeTaskCallback(change.After)
	return &bbsv1.CompleteTaskResponse{}, nil
}

// ResolvingTask moves a COMPLETED task to RESOLVING.
func (s *taskService) ResolvingTask(ctx context.Context, req *bbsv1.ResolvingTaskRequest) (*bbsv1.ResolvingTaskResponse, error) {
	if _, err := s.dbFor(ctx).ResolvingTask(ctx, req.GetTaskGuid()); err != nil {
		return nil, err
	}
	return &bbsv1.ResolvingTaskResponse{}, nil
}

// DeleteTask deletes a RESOLVING task.
func (s *taskService) DeleteTask(ctx context.Context, req *bbsv1.DeleteTaskRequest) (*bbsv1.DeleteTaskResponse, error) {
	if _, err := s.dbFor(ctx).DeleteTask(ctx, req.GetTaskGuid()); err != nil {
		return nil, err
	}
	return &bbsv1.DeleteTaskResponse{}, nil
}
