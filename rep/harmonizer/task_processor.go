package harmonizer

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"unicode/utf8"

	"drover.dev/bbs/models"
	"drover.dev/executor"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	"drover.dev/rep/translate"
)

// Task completion reasons the rep writes (upstream's strings).
const (
	ReasonFailedToRunContainer = "failed to run container"
	ReasonFailedToFetchResult  = "failed to fetch result"
	ReasonInvalidTransition    = "invalid state transition"
	ReasonMissingTaskContainer = "task container does not exist"
	ReasonResultNotText        = "result file is not text: it holds a NUL byte or invalid UTF-8"
	MaxResultBytes             = 10 * 1024
	maxResultFileReadBytes     = 1 << 20
)

// processTask is the task processor (cell.md §2.7).
func (h *Harmonizer) processTask(ctx context.Context, c executor.Container, logger *slog.Logger) {
	if c.State == executor.StateCompleted {
		h.taskCompleted(ctx, c, logger)
		return
	}
	shouldStart, err := h.bbs.StartTask(ctx, c.Guid, h.cfg.CellID)
	h.metrics.bbsCall("start-task", err)
	if err != nil {
		logger.Error("failed-to-start-task", "error", err.Error())
		if refused(err) {
			h.deleteContainer(ctx, c.Guid, logger)
		}
		return
	}
	if !shouldStart || c.State != executor.StateReserved {
		return // already running here: nothing to do
	}
	task, err := h.bbs.Task(ctx, c.Guid)
	h.metrics.bbsCall("get-task", err)
	if err != nil {
		logger.Error("failed-to-fetch-task", "error", err.Error())
		return
	}
	if err := h.exec.Run(ctx, translate.TaskRunRequest(task)); err != nil {
		logger.Error("failed-to-run-container", "error", err.Error())
		h.completeTask(ctx, c.Guid, true, ReasonFailedToRunContainer, "", logger)
		h.deleteContainer(ctx, c.Guid, logger)
		return
	}
	logger.Info("running-task-container")
}

func (h *Harmonizer) taskCompleted(ctx context.Context, c executor.Container, logger *slog.Logger) {
	result := c.RunResult
	if result.Failed && result.Retryable {
		err := h.bbs.RejectTask(ctx, c.Guid, result.FailureReason)
		h.metrics.bbsCall("reject-task", err)
		if err != nil {
			logger.Error("failed-to-reject-task", "error", err.Error())
			if transient(err) {
				return
			}
		}
		h.deleteContainer(ctx, c.Guid, logger)
		return
	}
	failed, reason, value := result.Failed, result.FailureReason, ""
	if path := c.Tags[executor.TagResultFile]; path != "" && !failed {
		data, err := h.readResult(ctx, c.Guid, path)
		if err != nil {
			logger.Error("failed-to-fetch-result", "path", path, "error", err.Error())
			failed, reason = true, ReasonFailedToFetchResult
		} else if text, ok := resultText(data); ok {
			value = text
		} else {
			logger.Error("result-not-text", "path", path)
			failed, reason = true, ReasonResultNotText
		}
	}
	if !h.completeTask(ctx, c.Guid, failed, reason, value, logger) {
		return
	}
	h.deleteContainer(ctx, c.Guid, logger)
}

// readResult returns the first MaxResultBytes of the result file (a longer file is cut,
// not refused).
func (h *Harmonizer) readResult(ctx context.Context, guid, path string) ([]byte, error) {
	data, err := h.exec.ReadFile(ctx, guid, path, MaxResultBytes)
	if errors.Is(err, executor.ErrFileTooLarge) {
		data, err = h.exec.ReadFile(ctx, guid, path, maxResultFileReadBytes)
	}
	if err != nil {
		return nil, err
	}
	if len(data) > MaxResultBytes {
		data = data[:MaxResultBytes]
	}
	return data, nil
}

// resultText is data as a task result: the BBS stores results as text, so data with a
// NUL byte or invalid UTF-8 is refused (ok false). A cut in the middle of a UTF-8
// sequence at MaxResultBytes is not an error: the partial rune is dropped.
func resultText(data []byte) (string, bool) {
	if len(data) == MaxResultBytes {
		for i := 0; i < utf8.UTFMax-1 && len(data) > 0 && !utf8.Valid(data); i++ {
			data = data[:len(data)-1]
		}
	}
	if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return "", false
	}
	return string(data), true
}

// completeTask records the outcome; a refused completion is retried as a failure saying
// so. It reports false when the BBS could not be reached (keep the container).
func (h *Harmonizer) completeTask(ctx context.Context, guid string, failed bool, reason, result string, logger *slog.Logger) bool {
	req := &bbsv1.CompleteTaskRequest{TaskGuid: guid, CellId: h.cfg.CellID, Failed: failed, FailureReason: reason, Result: result}
	err := h.bbs.CompleteTask(ctx, req)
	h.metrics.bbsCall("complete-task", err)
	if err == nil {
		logger.Info("completed-task", "failed", failed, "reason", reason)
		return true
	}
	logger.Error("failed-to-complete-task", "error", err.Error())
	if models.FromError(err).Type == models.ErrTypeInvalidStateTransition && !(failed && reason == ReasonInvalidTransition) {
		fail := &bbsv1.CompleteTaskRequest{TaskGuid: guid, CellId: h.cfg.CellID, Failed: true, FailureReason: ReasonInvalidTransition}
		err = h.bbs.CompleteTask(ctx, fail)
		h.metrics.bbsCall("complete-task", err)
		if err != nil {
			logger.Error("failed-to-fail-task", "error", err.Error())
		}
	}
	return !transient(err)
}

// processResidualTask fails a task the BBS places on this cell when its container is
// gone (checked again when the operation runs).
func (h *Harmonizer) processResidualTask(ctx context.Context, taskGuid string) {
	if h.containerExists(ctx, taskGuid) {
		return
	}
	logger := h.logger.With("task_guid", taskGuid)
	req := &bbsv1.CompleteTaskRequest{TaskGuid: taskGuid, CellId: h.cfg.CellID, Failed: true, FailureReason: ReasonMissingTaskContainer}
	err := h.bbs.CompleteTask(ctx, req)
	h.metrics.bbsCall("complete-task", err)
	if err != nil {
		logger.Error("failed-to-complete-residual-task", "error", err.Error())
		return
	}
	logger.Info("completed-residual-task")
}
