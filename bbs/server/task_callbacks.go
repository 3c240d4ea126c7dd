package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/cenkalti/backoff/v5"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// maxCallbackAttempts is how often a callback is posted on timeouts and connection
// errors (upstream MAX_CB_RETRIES).
const maxCallbackAttempts = 3

// The wait between callback attempts grows exponentially from the minimum, with jitter
// of ±50%: the two waits between the three attempts of a callback add up to at most
// 1.125 s (upstream posts again at once).
const (
	minCallbackRetryWait = 250 * time.Millisecond
	maxCallbackRetryWait = 2 * time.Second
)

// TaskCallbackResponse is the JSON posted to a task's completion_callback_url.
type TaskCallbackResponse struct {
	TaskGuid      string `json:"task_guid"`
	Failed        bool   `json:"failed"`
	FailureReason string `json:"failure_reason"`
	Result        string `json:"result"`
	Annotation    string `json:"annotation,omitempty"`
	CreatedAt     int64  `json:"created_at"`
}

// errCallbackNotAccepted means the callback receiver answered 503 or 504.
var errCallbackNotAccepted = errors.New("callback not accepted")

// completeTaskCallback runs a completed task's callback in the callback pool, if the
// task has one: resolving, then POST, then delete once the receiver accepted it.
// If the callback fails the task stays RESOLVING and convergence retries it.
func (s *Server) completeTaskCallback(task *modelsv1.Task) {
	url := task.GetTaskDefinition().GetCompletionCallbackUrl()
	if url == "" || task.GetState() != modelsv1.TaskState_TASK_STATE_COMPLETED {
		return
	}
	s.goBackground(s.callbackSem, func(ctx context.Context) {
		s.runTaskCallback(ctx, task, url)
	})
}

func (s *Server) runTaskCallback(ctx context.Context, task *modelsv1.Task, url string) {
	guid := task.GetTaskGuid()
	logger := s.logger.With("task-guid", guid, "callback-url", url)
	change, err := s.db.ResolvingTask(ctx, guid)
	if err != nil {
		logger.Error("failed-to-mark-task-resolving", "error", err)
		return
	}
	resolving := change.After
	if resolving == nil {
		resolving = task
	}
	body, err := json.Marshal(TaskCallbackResponse{
		TaskGuid:      guid,
		Failed:        resolving.GetFailed(),
		FailureReason: resolving.GetFailureReason(),
		Result:        resolving.GetResult(),
		Annotation:    resolving.GetTaskDefinition().GetAnnotation(),
		CreatedAt:     resolving.GetCreatedAt(),
	})
	if err != nil {
		logger.Error("failed-to-encode-task-callback", "error", err)
		return
	}
	err = retryCallback(ctx, callbackBackoff(), func() error { return s.postCallback(ctx, url, body) },
		func(attempt int, err error, wait time.Duration) {
			logger.Info("retrying-task-callback", "attempt", attempt, "error", err, "retry_in", wait.String())
		})
	if err != nil {
		logger.Error("task-callback-failed", "error", err)
		return
	}
	if _, err := s.db.DeleteTask(ctx, guid); err != nil {
		logger.Error("failed-to-delete-task-after-callback", "error", err)
		return
	}
	logger.Info("task-callback-succeeded")
}

// callbackBackoff is the wait between the attempts of one callback.
func callbackBackoff() backoff.BackOff {
	return &backoff.ExponentialBackOff{InitialInterval: minCallbackRetryWait, RandomizationFactor: backoff.DefaultRandomizationFactor,
		Multiplier: 2, MaxInterval: maxCallbackRetryWait}
}

// retryCallback calls post up to maxCallbackAttempts times while it fails with a
// retryable error (retryableCallbackError), waiting wait's backoff between attempts and
// telling notify about each retry. It returns post's last error, or ctx's once ctx ends.
func retryCallback(ctx context.Context, wait backoff.BackOff, post func() error, notify func(attempt int, err error, wait time.Duration)) error {
	attempt := 0
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		attempt++
		err := post()
		if err != nil && !retryableCallbackError(err) {
			return struct{}{}, backoff.Permanent(err)
		}
		return struct{}{}, err
	}, backoff.WithBackOff(wait), backoff.WithMaxTries(maxCallbackAttempts), backoff.WithMaxElapsedTime(0),
		backoff.WithNotify(func(err error, d time.Duration) { notify(attempt, err, d) }))
	return err
}

// postCallback posts body once; any status but 503 and 504 counts as accepted.
func (s *Server) postCallback(ctx context.Context, url string, body []byte) error {
	if s.httpClient.Timeout == 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultCallbackTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.httpClient.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusGatewayTimeout {
		return fmt.Errorf("%w: status %d", errCallbackNotAccepted, resp.StatusCode)
	}
	return nil
}

// retryableCallbackError reports timeouts and connection failures, which are worth
// another attempt (as upstream: not 503/504 answers).
func retryableCallbackError(err error) bool {
	if errors.Is(err, errCallbackNotAccepted) {
		return false
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return true
	}
	var opErr *net.OpError
	return errors.As(err, &opErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
